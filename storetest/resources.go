package storetest

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// testResources checks the contract of resourceapi.Store on every declared
// resource, from its declaration and Example alone, so that a resource
// declared later is checked without edits: writes and reads with their
// timestamps and nulls, every sort, filter and search, references to records
// that do not exist, the items of a record (an order's), and what deleting a
// record does to the records that refer to it (cascades and restricting
// references), with the store's cache warm.
//
// Records are made as the rule layer makes them (resourceapi.Service), but
// written to the store directly: validated with resourceapi.Validate, with
// the owner named, the records they refer to created first, and generated,
// looked-up and computed fields filled in by the suite (see maker.prepare).
func testResources(t *testing.T, open opener) {
	for _, res := range resourceapi.Declared() {
		t.Run(res.Name, func(t *testing.T) {
			t.Run("Write", func(t *testing.T) { testResourceWrite(t, open(t), res) })
			t.Run("Nulls", func(t *testing.T) { testResourceNulls(t, open(t), res) })
			t.Run("List", func(t *testing.T) { testResourceList(t, open(t), res) })
			if len(referenceFields(res)) > 0 {
				t.Run("References", func(t *testing.T) { testReferences(t, open(t), res) })
			}
		})
	}
	t.Run("Items", func(t *testing.T) { testItems(t, open) })
	t.Run("Cascade", func(t *testing.T) { testCascades(t, open) })
}

// maker makes records of any resource in one store, and keeps the last
// known state of every record it made (nil once deleted), so that lists can
// be checked against it.
type maker struct {
	tb testing.TB
	s  resourceapi.Store
	n  int   // numbers examples, so that each is distinct
	me int64 // the user who owns records no test gave an owner
	// made holds every record made, by resource, in creation order; a
	// deleted record is nil.
	made map[*resourceapi.Resource][]resourceapi.Record
}

func newMaker(tb testing.TB, s resourceapi.Store) *maker {
	return &maker{tb: tb, s: s, made: make(map[*resourceapi.Resource][]resourceapi.Record)}
}

// refs names, for a record about to be made, the records some of its
// reference fields point to, by field name; an item's field is named
// "items.product_id". The owner field may be named like any other.
type refs map[string]int64

// owner returns the user that owns records by default, made on first use.
func (f *maker) owner() int64 {
	if f.me == 0 {
		f.me = f.create(resourceapi.Users, nil).ID()
	}
	return f.me
}

// raw returns a new example of res, not yet validated, whose references
// point to the records r names, to new records made for it, or (the owner)
// to the default owner. Computed references are left to prepare.
func (f *maker) raw(res *resourceapi.Resource, r refs) resourceapi.Record {
	f.tb.Helper()
	f.n++
	rec := res.Example(f.n)
	for i := range res.Fields {
		fd := &res.Fields[i]
		switch {
		case fd.References != "" && !fd.Computed:
			rec[fd.Name] = f.target(fd, r[fd.Name], fd.Name == res.Access.Owner)
		case fd.Items != nil:
			items, _ := rec[fd.Name].([]resourceapi.Record)
			for _, item := range items {
				for j := range fd.Items.Fields {
					sub := &fd.Items.Fields[j]
					if sub.References != "" {
						item[sub.Name] = f.target(sub, r[fd.Name+"."+sub.Name], false)
					}
				}
			}
		}
	}
	return rec
}

// target returns the id a reference field fd of a new record holds: id when
// not 0, the default owner for an owner field, or a new record.
func (f *maker) target(fd *resourceapi.Field, id int64, owner bool) int64 {
	f.tb.Helper()
	switch {
	case id != 0:
		return id
	case owner && fd.References == resourceapi.Users.Name:
		return f.owner()
	}
	return f.create(resourceapi.ResourceNamed(fd.References), nil).ID()
}

// prepare validates rec for a write in mode and completes it as the rule
// layer would before handing it to the store: item fields looked up from the
// records they name, generated fields (on create), computed references (the
// user an OAuth client acts as: r's, or the default owner), computed fields,
// and secrets hashed. It returns rec.
func (f *maker) prepare(res *resourceapi.Resource, rec resourceapi.Record, mode resourceapi.WriteMode, r refs) resourceapi.Record {
	f.tb.Helper()
	if err := resourceapi.Validate(res, rec, mode); err != nil {
		f.tb.Fatalf("Validate(%s %v) = %v; the suite's own record is invalid", res.Singular, show(rec), err)
	}
	for i := range res.Fields {
		fd := &res.Fields[i]
		items, ok := rec[fd.Name].([]resourceapi.Record)
		if fd.Items == nil || !ok {
			continue
		}
		for _, sub := range fd.Items.Fields {
			l := sub.Lookup
			if l == nil {
				continue
			}
			for _, item := range items {
				id, _ := item[l.By].(int64)
				from, err := f.s.Get(timeout(f.tb), resourceapi.ResourceNamed(l.Resource), id)
				if err != nil {
					f.tb.Fatalf("look up %s %d for %s.%s: %v", l.Resource, id, fd.Name, sub.Name, err)
				}
				item[sub.Name] = from[l.Field]
			}
		}
	}
	for i := range res.Fields {
		fd := &res.Fields[i]
		if fd.Generate != nil && mode == resourceapi.ModeCreate {
			v, err := fd.Generate(rec)
			if err != nil {
				f.tb.Fatalf("generate %s.%s: %v", res.Name, fd.Name, err)
			}
			if v != "" {
				rec[fd.Name] = v
			}
		}
		if fd.Computed && fd.References != "" && mode == resourceapi.ModeCreate {
			rec[fd.Name] = f.target(fd, r[fd.Name], true)
		}
	}
	if res.Compute != nil {
		res.Compute(rec)
	}
	for _, fd := range res.Fields {
		v, ok := rec[fd.Name].(string)
		switch {
		case !ok:
		case fd.Secret == resourceapi.SecretToken:
			rec[fd.Name] = resourceapi.HashToken(v)
		case fd.Secret == resourceapi.SecretPassword:
			rec[fd.Name] = hash
		}
	}
	return rec
}

// record returns a new example of res, prepared for Create.
func (f *maker) record(res *resourceapi.Resource, r refs) resourceapi.Record {
	f.tb.Helper()
	return f.prepare(res, f.raw(res, r), resourceapi.ModeCreate, r)
}

// create makes a new example of res with f.record and checks what Create
// returns against it.
func (f *maker) create(res *resourceapi.Resource, r refs) resourceapi.Record {
	f.tb.Helper()
	return f.mustCreate(res, f.record(res, r))
}

// mustCreate creates rec, a prepared record of res, and checks that Create
// returns it as stored: its fields, defaults for those it lacks, an id and
// equal timestamps.
func (f *maker) mustCreate(res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Record {
	f.tb.Helper()
	got, err := f.s.Create(timeout(f.tb), res, clone(rec))
	if err != nil {
		f.tb.Fatalf("Create(%s %s) error = %v, want nil", res.Singular, show(rec), err)
	}
	mustShapeOf(f.tb, res, got, "Create "+res.Singular)
	want := written(res, nil, rec, resourceapi.ModeCreate)
	for _, name := range []string{"id", "created_at", "updated_at"} {
		want[name] = got[name]
	}
	mustSame(f.tb, got, want, "Create "+res.Singular)
	if !timeOf(f.tb, got, "created_at").Equal(timeOf(f.tb, got, "updated_at")) {
		f.tb.Fatalf("Create %s: created_at %s != updated_at %s", res.Singular, showValue(got["created_at"]), showValue(got["updated_at"]))
	}
	f.made[res] = append(f.made[res], got)
	return got
}

// mustUpdate patches record id of res with patch, a record prepared in
// ModePatch, and checks that only the patched fields changed.
func (f *maker) mustUpdate(res *resourceapi.Resource, id int64, patch resourceapi.Record) resourceapi.Record {
	f.tb.Helper()
	before := f.mustGet(res, id)
	got, err := f.s.Update(timeout(f.tb), res, id, clone(patch), nil)
	if err != nil {
		f.tb.Fatalf("Update(%s %d, %s) error = %v, want nil", res.Singular, id, show(patch), err)
	}
	mustShapeOf(f.tb, res, got, "Update "+res.Singular)
	want := written(res, before, patch, resourceapi.ModePatch)
	want["updated_at"] = got["updated_at"]
	mustSame(f.tb, got, want, fmt.Sprintf("Update %s %d", res.Singular, id))
	mustStamp(f.tb, got, before, before, window{}, false, "Update "+res.Singular)
	f.track(res, got)
	return got
}

// mustGet returns record id of res, checked for shape.
func (f *maker) mustGet(res *resourceapi.Resource, id int64) resourceapi.Record {
	f.tb.Helper()
	got, err := f.s.Get(timeout(f.tb), res, id)
	if err != nil {
		f.tb.Fatalf("Get(%s %d) error = %v, want nil", res.Singular, id, err)
	}
	mustShapeOf(f.tb, res, got, "Get "+res.Singular)
	if got.ID() != id {
		f.tb.Fatalf("Get(%s %d) id = %d", res.Singular, id, got.ID())
	}
	return got
}

// mustAbsent fails unless Get of record id of res is CodeNotFound.
func (f *maker) mustAbsent(res *resourceapi.Resource, id int64, what string) {
	f.tb.Helper()
	rec, err := f.s.Get(timeout(f.tb), res, id)
	if got := resourceapi.ErrorCode(err); got != resourceapi.CodeNotFound {
		f.tb.Fatalf("after %s, Get(%s %d) = %s, %v; want %s", what, res.Singular, id, show(rec), err, resourceapi.CodeNotFound)
	}
}

// track records the new state of a record f made.
func (f *maker) track(res *resourceapi.Resource, rec resourceapi.Record) {
	for i, old := range f.made[res] {
		if old != nil && old.ID() == rec.ID() {
			f.made[res][i] = rec
		}
	}
}

// forget records that record id of res no longer exists.
func (f *maker) forget(res *resourceapi.Resource, id int64) {
	for i, old := range f.made[res] {
		if old != nil && old.ID() == id {
			f.made[res][i] = nil
		}
	}
}

// alive returns the records of res that f made and that still exist.
func (f *maker) alive(res *resourceapi.Resource) []resourceapi.Record {
	var out []resourceapi.Record
	for _, rec := range f.made[res] {
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out
}

// written returns the record a store must hold after writing rec (prepared
// for mode) over before (nil for a create): the fields rec sets, defaults
// (create) for those it lacks, and before's values for the rest. Read-only
// fields that are not computed are before's; the caller fills them in on
// create.
func written(res *resourceapi.Resource, before, rec resourceapi.Record, mode resourceapi.WriteMode) resourceapi.Record {
	want := make(resourceapi.Record, len(res.Fields))
	for i := range res.Fields {
		fd := &res.Fields[i]
		if fd.WriteOnly {
			continue
		}
		v, ok := rec[fd.Name]
		if ic, isIC := v.(resourceapi.IfCreated); isIC {
			v = ic.Value
			ok = before == nil
		}
		switch {
		case ok && !(fd.ReadOnly && !fd.Computed):
			want[fd.Name] = cloneValue(v)
		case before != nil:
			want[fd.Name] = cloneValue(before[fd.Name])
		case mode == resourceapi.ModeCreate && fd.Type == resourceapi.TypeItems:
			want[fd.Name] = []resourceapi.Record{}
		case mode == resourceapi.ModeCreate:
			want[fd.Name] = fd.DefaultValue()
		}
	}
	return want
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case []string:
		return slices.Clone(v)
	case []resourceapi.Record:
		out := make([]resourceapi.Record, len(v))
		for i, item := range v {
			out[i] = maps.Clone(item)
		}
		return out
	}
	return v
}

// writable reports whether a write may set field fd of res from a body (the
// owner and the parent included).
func writable(fd *resourceapi.Field) bool {
	return !fd.ReadOnly && fd.Generate == nil
}

// patchOf returns a patch of res, prepared for Update: the writable fields of
// a new example that are no reference (references have tests of their own).
func (f *maker) patchOf(res *resourceapi.Resource) resourceapi.Record {
	f.tb.Helper()
	ex := f.raw(res, nil)
	patch := resourceapi.Record{}
	for i := range res.Fields {
		fd := &res.Fields[i]
		if v, ok := ex[fd.Name]; ok && writable(fd) && fd.References == "" {
			patch[fd.Name] = v
		}
	}
	if len(patch) == 0 {
		f.tb.Fatalf("%s: its example has no field to patch", res.Name)
	}
	return f.prepare(res, patch, resourceapi.ModePatch, nil)
}

// testResourceWrite checks create, get, update, replace and delete of one
// record of res, and the timestamps of each write.
func testResourceWrite(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	f := newMaker(t, s)
	owner := f.create(resourceapi.Users, nil).ID()
	ownerRefs := refs{}
	if o := res.Access.Owner; o != "" && o != "id" {
		ownerRefs[o] = owner
	}
	for _, fd := range res.Fields {
		if fd.Computed && fd.References != "" {
			ownerRefs[fd.Name] = owner
		}
	}
	w := start()
	rec := f.create(res, ownerRefs)
	w = w.end()
	wall := w.holds(timeOf(t, rec, "created_at"))
	mustStamp(t, rec, nil, nil, w, wall, "Create")
	mustSame(t, f.mustGet(res, rec.ID()), rec, "Get after Create")

	w = start()
	patch := f.patchOf(res)
	updated := f.mustUpdate(res, rec.ID(), patch)
	mustStamp(t, updated, rec, rec, w.end(), wall, "Update")
	mustSame(t, f.mustGet(res, rec.ID()), updated, "Get after Update")

	// Replace: every writable field from a new example; those it lacks
	// become null or their default, except Keep fields. The owner is
	// IfCreated (as the rule layer sends it): kept on an existing record.
	stranger := f.create(resourceapi.Users, nil).ID()
	rep := f.replacement(res, refsOf(res, updated), stranger)
	w = start()
	got, created, err := s.Replace(timeout(t), res, rec.ID(), clone(rep), nil)
	if err != nil || created {
		t.Fatalf("Replace(%s %d) = %v, created %v; want the record replaced", res.Singular, rec.ID(), err, created)
	}
	mustShapeOf(t, res, got, "Replace")
	want := written(res, updated, rep, resourceapi.ModeReplace)
	want["updated_at"] = got["updated_at"]
	mustSame(t, got, want, "Replace")
	mustStamp(t, got, rec, updated, w.end(), wall, "Replace")
	mustSame(t, f.mustGet(res, rec.ID()), got, "Get after Replace")

	// Replace of an absent id creates the record there, owned by the
	// IfCreated owner, where the rule layer lets PUT create.
	if res.CreatableByPut() {
		id := rec.ID() + 1000
		rep := f.replacement(res, refsOf(res, updated), stranger)
		made, created, err := s.Replace(timeout(t), res, id, clone(rep), nil)
		if err != nil || !created {
			t.Fatalf("Replace(%s %d, absent) = %v, created %v; want it created", res.Singular, id, err, created)
		}
		mustShapeOf(t, res, made, "Replace (create)")
		want := written(res, nil, rep, resourceapi.ModeCreate)
		for _, name := range []string{"id", "created_at", "updated_at"} {
			want[name] = made[name]
		}
		mustSame(t, made, want, "Replace (create)")
		if made.ID() != id {
			t.Fatalf("Replace(%d) created id %d", id, made.ID())
		}
		mustSame(t, f.mustGet(res, id), made, "Get after Replace (create)")
	}

	if err := s.Delete(timeout(t), res, rec.ID(), nil); err != nil {
		t.Fatalf("Delete(%s %d) = %v", res.Singular, rec.ID(), err)
	}
	f.mustAbsent(res, rec.ID(), "Delete")
	mustCode(t, s.Delete(timeout(t), res, rec.ID(), nil), resourceapi.CodeNotFound, "Delete of a deleted record")
	_, err = s.Update(timeout(t), res, rec.ID(), clone(patch), nil)
	mustCode(t, err, resourceapi.CodeNotFound, "Update of a deleted record")
}

// replacement returns a new example of res prepared for Replace, pointing
// where r says, without the fields named in without, and with the owner left
// to the store as the rule layer leaves it: IfCreated, which an existing
// record ignores.
func (f *maker) replacement(res *resourceapi.Resource, r refs, owner int64, without ...string) resourceapi.Record {
	f.tb.Helper()
	rep := f.raw(res, r)
	for _, name := range without {
		delete(rep, name)
	}
	o := res.Access.Owner
	if o != "" && o != "id" {
		delete(rep, o)
	}
	rep = f.prepare(res, rep, resourceapi.ModeReplace, nil)
	if o != "" && o != "id" {
		rep[o] = resourceapi.IfCreated{Value: owner}
	}
	return rep
}

// refsOf returns the references rec holds, so that a new example can point
// where rec does.
func refsOf(res *resourceapi.Resource, rec resourceapi.Record) refs {
	r := refs{}
	for _, fd := range res.Fields {
		if id, ok := rec[fd.Name].(int64); ok && fd.References != "" {
			r[fd.Name] = id
		}
	}
	return r
}

// nullable returns the visible fields of res that a write may set to null.
func nullable(res *resourceapi.Resource) []*resourceapi.Field {
	var out []*resourceapi.Field
	for i := range res.Fields {
		if fd := &res.Fields[i]; fd.Nullable && !fd.Required && writable(fd) && !fd.WriteOnly {
			out = append(out, fd)
		}
	}
	return out
}

// testResourceNulls checks that null is stored and read back as nil, on
// create, update and replace, for every nullable field of res.
func testResourceNulls(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	fields := nullable(res)
	if len(fields) == 0 {
		t.Skipf("%s has no nullable field", res.Name)
	}
	f := newMaker(t, s)
	// Created with nulls.
	raw := f.raw(res, nil)
	for _, fd := range fields {
		raw[fd.Name] = nil
	}
	rec := f.mustCreate(res, f.prepare(res, raw, resourceapi.ModeCreate, nil))
	for _, fd := range fields {
		if v := f.mustGet(res, rec.ID())[fd.Name]; v != nil {
			t.Fatalf("%s created null = %s, want nil", fd.Name, showValue(v))
		}
	}
	// Set by update, then nulled by update.
	other := f.create(res, nil)
	for _, fd := range fields {
		if other[fd.Name] == nil {
			t.Fatalf("%s of the example = nil; the suite needs a value to null", fd.Name)
		}
		f.mustUpdate(res, other.ID(), f.prepare(res, resourceapi.Record{fd.Name: nil}, resourceapi.ModePatch, nil))
		if v := f.mustGet(res, other.ID())[fd.Name]; v != nil {
			t.Fatalf("%s after an update to null = %s, want nil", fd.Name, showValue(v))
		}
	}
	// Nulled by a replace that lacks them (those that are not Keep fields).
	third := f.create(res, nil)
	var without []string
	for _, fd := range fields {
		without = append(without, fd.Name)
	}
	rep := f.replacement(res, refsOf(res, third), f.owner(), without...)
	got, _, err := s.Replace(timeout(t), res, third.ID(), clone(rep), nil)
	if err != nil {
		t.Fatalf("Replace = %v", err)
	}
	for _, fd := range fields {
		want := third[fd.Name]
		if !fd.Keep {
			want = nil
		}
		if !equalValue(got[fd.Name], want) || !equalValue(f.mustGet(res, third.ID())[fd.Name], want) {
			t.Fatalf("%s after a replace without it = %s, want %s", fd.Name, showValue(got[fd.Name]), showValue(want))
		}
	}
}

// testResourceList checks every sort, filter and search of res against a
// model of the records the maker made.
func testResourceList(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	f := newMaker(t, s)
	// Two owners, and two of every other record the examples refer to, so
	// that owner and parent filters each select some records and not others.
	owners := []int64{f.create(resourceapi.Users, nil).ID(), f.create(resourceapi.Users, nil).ID()}
	groups := []refs{{}, {}}
	for i, g := range groups {
		for _, fd := range res.Fields {
			switch {
			case fd.Name == res.Access.Owner && fd.Name != "id", fd.Computed && fd.References != "":
				g[fd.Name] = owners[i]
			case fd.References != "":
				g[fd.Name] = f.create(resourceapi.ResourceNamed(fd.References), nil).ID()
			case fd.Items != nil:
				for _, sub := range fd.Items.Fields {
					if sub.References != "" {
						g[fd.Name+"."+sub.Name] = f.create(resourceapi.ResourceNamed(sub.References), nil).ID()
					}
				}
			}
		}
	}
	const n = 6
	recs := make([]resourceapi.Record, n)
	for i := range recs {
		recs[i] = f.create(res, groups[i%2])
	}
	// Every value a filter names, in turn.
	for _, flt := range res.Filters {
		fd := res.Field(flt.Field)
		if flt.Kind != resourceapi.FilterEqual || len(flt.Values) == 0 || !writable(fd) {
			continue
		}
		for i, rec := range recs {
			v := parseValue(t, fd, flt.Values[i%len(flt.Values)])
			recs[i] = f.mustUpdate(res, rec.ID(), f.prepare(res, resourceapi.Record{fd.Name: v}, resourceapi.ModePatch, nil))
		}
	}
	// Ties: records 3 and 4 take record 0's value of every sortable field a
	// write sets (unique fields cannot tie).
	tie := resourceapi.Record{}
	for _, fd := range res.Fields {
		if fd.Sortable && writable(&fd) && !fd.Unique && fd.References == "" {
			tie[fd.Name] = recs[0][fd.Name]
		}
	}
	if len(tie) > 0 {
		for _, i := range []int{3, 4} {
			recs[i] = f.mustUpdate(res, recs[i].ID(), f.prepare(res, clone(tie), resourceapi.ModePatch, nil))
		}
	}
	// Nulls, which sort first, and a text with LIKE's wildcards for search.
	last := resourceapi.Record{}
	for _, fd := range nullable(res) {
		last[fd.Name] = nil
	}
	special := firstSearchable(res)
	if special != nil {
		last[special.Name] = "Special 1x2 and 100%"
	}
	if len(last) > 0 {
		recs[n-1] = f.mustUpdate(res, recs[n-1].ID(), f.prepare(res, last, resourceapi.ModePatch, nil))
	}

	check := func(t *testing.T, params ...string) {
		t.Helper()
		q := mustQueryOf(t, res, params...)
		want, total := expectPage(res, f.alive(res), q)
		page := mustListOf(t, s, res, params...)
		if got := ids(page.Records); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("List(%s %q) ids = %v, want %v", res.Name, params, got, want)
		}
		if page.Total != total {
			t.Fatalf("List(%s %q) total = %d, want %d", res.Name, params, page.Total, total)
		}
		for _, rec := range page.Records {
			mustSame(t, rec, f.mustGet(res, rec.ID()), "listed record (want what Get returns)")
		}
	}

	t.Run("Default", func(t *testing.T) { check(t, "limit", "100") })
	for _, field := range res.SortableFields() {
		for _, order := range []string{"asc", "desc"} {
			t.Run("sort="+field+"&order="+order, func(t *testing.T) {
				check(t, "sort", field, "order", order, "limit", "100")
				for p := 1; p <= 3; p++ {
					check(t, "sort", field, "order", order, "limit", "2", "page", strconv.Itoa(p))
				}
			})
		}
	}
	for _, flt := range res.Filters {
		if flt.Internal {
			continue
		}
		var values []string
		switch {
		case len(flt.Values) > 0:
			values = flt.Values
		case flt.Kind == resourceapi.FilterEqual:
			seen := map[string]bool{}
			for _, rec := range recs {
				if v := formatValue(rec[flt.Field]); !seen[v] {
					seen[v] = true
					values = append(values, v)
				}
			}
			values = append(values, strconv.Itoa(resourceapi.MaxID)) // matches nothing
		}
		for _, v := range values {
			t.Run(flt.Param+"="+v, func(t *testing.T) {
				check(t, flt.Param, v, "limit", "100")
				check(t, flt.Param, v, "sort", "id", "order", "desc", "limit", "1")
			})
		}
	}
	if special == nil {
		t.Run("Search/none", func(t *testing.T) { testNoSearch(t, s, res) })
		return
	}
	// The first record's text, in upper case (longer than a trigram, and
	// short), literal wildcards, and nothing.
	text, _ := recs[1][special.Name].(string)
	cases := []string{strings.ToUpper(text[1 : len(text)-1]), strings.ToUpper(text[2:4]), text[len(text)-2:],
		"1%", "1_2", "0%", "x2 AND 1", "%", "nomatch"}
	for _, q := range cases {
		t.Run("Search/"+q, func(t *testing.T) {
			check(t, "q", q, "limit", "100")
			check(t, "q", q, "sort", "id", "order", "desc", "limit", "2", "page", "2")
			if want, _ := expectPage(res, f.alive(res), mustQueryOf(t, res, "q", q, "limit", "100")); q != "nomatch" && q != "1%" && q != "1_2" && len(want) == 0 {
				t.Fatalf("q=%q matches nothing in the suite's own records; it tests nothing", q)
			}
		})
	}
}

// testNoSearch checks a list with q of a resource without searchable fields:
// a VALIDATION_ERROR for q, never a failed query.
func testNoSearch(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	for _, q := range []string{"abc", "ab"} {
		lq, err := resourceapi.NewListQuery(res, resourceapi.ListQuery{Search: q})
		if err == nil {
			_, err = s.List(timeout(t), res, lq)
		}
		mustCode(t, err, resourceapi.CodeValidation, fmt.Sprintf("List(%s, q=%s)", res.Name, q))
		if e := resourceapi.ErrorOf(err); len(e.Details) != 1 || e.Details[0].Field != "q" {
			t.Fatalf("List(%s, q=%s) details = %v, want one for q", res.Name, q, e.Details)
		}
	}
}

// firstSearchable returns the first searchable field of res that a write
// sets, or nil.
func firstSearchable(res *resourceapi.Resource) *resourceapi.Field {
	for i := range res.Fields {
		if fd := &res.Fields[i]; fd.Searchable && !fd.WriteOnly && writable(fd) && fd.Type == resourceapi.TypeString {
			return fd
		}
	}
	return nil
}

// expectPage returns the ids of the page q asks for, and the total, from a
// model of the store: recs filtered, searched, sorted and paged as the
// resourceapi.ListQuery documentation says.
func expectPage(res *resourceapi.Resource, recs []resourceapi.Record, q resourceapi.ListQuery) ([]int64, int) {
	var match []resourceapi.Record
	for _, rec := range recs {
		if matches(res, rec, q) {
			match = append(match, rec)
		}
	}
	match = sorted(match, q.Sort, q.Desc)
	lo, hi := min(q.Offset, len(match)), min(q.Offset+q.Limit, len(match))
	return ids(match[lo:hi]), len(match)
}

func matches(res *resourceapi.Resource, rec resourceapi.Record, q resourceapi.ListQuery) bool {
	for _, fv := range q.Filters {
		switch fv.Filter.Kind {
		case resourceapi.FilterSoftDelete:
			if rec.Bool(res.SoftDelete) != (fv.Value == resourceapi.StatusDeleted) {
				return false
			}
		case resourceapi.FilterContains:
			if !slices.Contains(rec.Strings(fv.Filter.Field), fv.Value.(string)) {
				return false
			}
		case resourceapi.FilterEqual:
			if !equalValue(rec[fv.Filter.Field], fv.Value) {
				return false
			}
		}
	}
	if q.Search == "" {
		return true
	}
	for _, fd := range res.Fields {
		if v, ok := rec[fd.Name].(string); ok && fd.Searchable && !fd.WriteOnly &&
			strings.Contains(strings.ToLower(v), strings.ToLower(q.Search)) {
			return true
		}
	}
	return false
}

// parseValue reads s as a value of fd's type, as a list filter does.
func parseValue(tb testing.TB, fd *resourceapi.Field, s string) any {
	tb.Helper()
	switch fd.Type {
	case resourceapi.TypeInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatalf("%s value %q: %v", fd.Name, s, err)
		}
		return n
	case resourceapi.TypeBool:
		return s == "true"
	}
	return s
}

// formatValue writes v as a list filter reads it.
func formatValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func mustQueryOf(tb testing.TB, res *resourceapi.Resource, params ...string) resourceapi.ListQuery {
	tb.Helper()
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Add(params[i], params[i+1])
	}
	q, err := rhttp.ParseListQuery(res, v)
	if err != nil {
		tb.Fatalf("ParseListQuery(%s, %v) = %v; the suite's own query is invalid", res.Name, v, err)
	}
	return q
}

func mustListOf(tb testing.TB, s resourceapi.Store, res *resourceapi.Resource, params ...string) resourceapi.Page {
	tb.Helper()
	q := mustQueryOf(tb, res, params...)
	page, err := s.List(timeout(tb), res, q)
	if err != nil {
		tb.Fatalf("List(%s %q) error = %v, want nil", res.Name, params, err)
	}
	if len(page.Records) > q.Limit {
		tb.Fatalf("List(%s %q) returned %d records, more than the limit %d", res.Name, params, len(page.Records), q.Limit)
	}
	for _, rec := range page.Records {
		mustShapeOf(tb, res, rec, "List "+res.Name)
	}
	return page
}

// reference is a field that refers to records of another resource: a field
// of the record, or (item not nil) a field of its items.
type reference struct {
	res   *resourceapi.Resource
	field *resourceapi.Field
	item  *resourceapi.Field // the TypeItems field whose items hold field
}

// name is how details name the field: product_id, or items[0].product_id.
func (r reference) name() string {
	if r.item != nil {
		return r.item.Name + "[0]." + r.field.Name
	}
	return r.field.Name
}

// referenceFields returns every reference of res's records and items.
func referenceFields(res *resourceapi.Resource) []reference {
	var out []reference
	for i := range res.Fields {
		fd := &res.Fields[i]
		if fd.References != "" {
			out = append(out, reference{res: res, field: fd})
		}
		if fd.Items != nil {
			for j := range fd.Items.Fields {
				if sub := &fd.Items.Fields[j]; sub.References != "" {
					out = append(out, reference{res: res, field: sub, item: fd})
				}
			}
		}
	}
	return out
}

// testReferences checks each reference of res: a create, update or replace
// that names a record that does not exist fails with CodeUnprocessable and a
// detail for the field, and writes nothing. The rule layer looks up what
// items name before it writes, so a missing record reaches the store only
// when it was deleted in between: the suite fills in the looked-up fields
// itself.
func testReferences(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	f := newMaker(t, s)
	const absent = resourceapi.MaxID
	existing := f.create(res, nil)
	for _, ref := range referenceFields(res) {
		t.Run(ref.name(), func(t *testing.T) {
			dangle := func(rec resourceapi.Record) resourceapi.Record {
				if ref.item == nil {
					rec[ref.field.Name] = int64(absent)
					return rec
				}
				items := rec[ref.item.Name].([]resourceapi.Record)
				items[0][ref.field.Name] = int64(absent)
				return rec
			}
			refused := func(what string, err error) {
				t.Helper()
				mustCode(t, err, resourceapi.CodeUnprocessable, what)
				if e := resourceapi.ErrorOf(err); !slices.ContainsFunc(e.Details, func(d resourceapi.FieldError) bool { return d.Field == ref.name() }) {
					t.Fatalf("%s details = %v, want one for %s", what, e.Details, ref.name())
				}
			}
			before := mustListOf(t, s, res, "limit", "100").Total

			_, err := s.Create(timeout(t), res, dangle(f.record(res, nil)))
			refused("Create naming an absent record", err)
			if got := mustListOf(t, s, res, "limit", "100").Total; got != before {
				t.Fatalf("after a refused Create, %d %s, want %d", got, res.Name, before)
			}

			if ref.field.Computed {
				return // never written by a patch or a replace
			}
			var patch resourceapi.Record
			if ref.item == nil {
				patch = resourceapi.Record{ref.field.Name: int64(absent)}
			} else {
				full := f.record(res, nil)
				patch = dangle(resourceapi.Record{ref.item.Name: full[ref.item.Name]})
			}
			_, err = s.Update(timeout(t), res, existing.ID(), patch, nil)
			refused("Update naming an absent record", err)
			rep := f.raw(res, nil)
			rep = f.prepare(res, rep, resourceapi.ModeReplace, nil)
			_, _, err = s.Replace(timeout(t), res, existing.ID(), dangle(rep), nil)
			refused("Replace naming an absent record", err)
			mustSame(t, f.mustGet(res, existing.ID()), existing, "record after refused writes")
		})
	}
}

// testItems checks the items of every resource that has them (orders): kept
// in order with every item field, replaced as a whole by a write that sends
// them, and kept by one that does not.
func testItems(t *testing.T, open opener) {
	for _, res := range resourceapi.Declared() {
		for i := range res.Fields {
			fd := &res.Fields[i]
			if fd.Items == nil {
				continue
			}
			t.Run(res.Name+"."+fd.Name, func(t *testing.T) { testItemsOf(t, open(t), res, fd) })
		}
	}
}

func testItemsOf(t *testing.T, s resourceapi.Store, res *resourceapi.Resource, fd *resourceapi.Field) {
	f := newMaker(t, s)
	// Items of several examples, more than one naming the same record, in
	// an order that is neither their references' nor their values'.
	var items []resourceapi.Record
	for range 3 {
		ex := f.raw(res, nil)
		items = append(items, ex[fd.Name].([]resourceapi.Record)...)
	}
	items = append(items, maps.Clone(items[0]))
	slices.Reverse(items)
	if len(items) > fd.Items.Max {
		items = items[:fd.Items.Max]
	}
	raw := f.raw(res, nil)
	raw[fd.Name] = items
	rec := f.mustCreate(res, f.prepare(res, raw, resourceapi.ModeCreate, nil))
	got := f.mustGet(res, rec.ID())
	mustSame(t, got, rec, "Get of a record with items")
	if len(got[fd.Name].([]resourceapi.Record)) != len(items) {
		t.Fatalf("%s: %d items, want %d", fd.Name, len(got[fd.Name].([]resourceapi.Record)), len(items))
	}

	// A write without the items keeps them (and what is computed from
	// them); a write of the items replaces them.
	var other *resourceapi.Field
	for i := range res.Fields {
		if c := &res.Fields[i]; writable(c) && c.Type != resourceapi.TypeItems && c.References == "" && c.Default != nil {
			other = c
			break
		}
	}
	if other != nil {
		kept := f.mustUpdate(res, rec.ID(), f.prepare(res, resourceapi.Record{other.Name: other.DefaultValue()}, resourceapi.ModePatch, nil))
		if !equalValue(kept[fd.Name], rec[fd.Name]) {
			t.Fatalf("%s after an update of %s = %s, want them kept: %s", fd.Name, other.Name, showValue(kept[fd.Name]), showValue(rec[fd.Name]))
		}
	}
	newer := f.raw(res, nil)[fd.Name]
	replaced := f.mustUpdate(res, rec.ID(), f.prepare(res, resourceapi.Record{fd.Name: newer}, resourceapi.ModePatch, nil))
	mustSame(t, f.mustGet(res, rec.ID()), replaced, "Get after the items were replaced")

	// A change to a record an item's looked-up field came from leaves the
	// item as it was written.
	for _, sub := range fd.Items.Fields {
		l := sub.Lookup
		if l == nil {
			continue
		}
		from := resourceapi.ResourceNamed(l.Resource)
		id := replaced[fd.Name].([]resourceapi.Record)[0][l.By].(int64)
		cur := f.mustGet(from, id)
		v, ok := cur[l.Field].(int64)
		if !ok {
			continue
		}
		f.mustUpdate(from, id, f.prepare(from, resourceapi.Record{l.Field: v + 1}, resourceapi.ModePatch, nil))
		mustSame(t, f.mustGet(res, rec.ID()), replaced, "record after the "+from.Singular+" its item looked up changed")
	}
}

// testCascades checks, for every resource other records refer to, what
// deleting one of its records does: records that refer to it are deleted
// with it (and records that refer to those), unless a reference is Restrict,
// which refuses the delete with CodeConflict and changes nothing. Every
// record is read first, so that a store with a cache must drop what it holds
// of records it deletes without naming them. It begins by checking that the
// declarations promise what the service documents.
func testCascades(t *testing.T, open opener) {
	t.Run("Declared", func(t *testing.T) {
		want := map[string][]string{
			resourceapi.Users.Name:    {"posts", "reviews", "orders", "articles", "comments", "api_keys", "oauth_clients"},
			resourceapi.Articles.Name: {"comments"},
			resourceapi.Products.Name: {"reviews"},
		}
		for name, deps := range want {
			got := map[string]bool{}
			for _, ref := range referrers(resourceapi.ResourceNamed(name)) {
				if !ref.field.Restrict {
					got[ref.res.Name] = true
				}
			}
			for _, d := range deps {
				if !got[d] {
					t.Errorf("deleting a record of %s does not delete the %s that refer to it", name, d)
				}
			}
		}
		restricted := false
		for _, ref := range referrers(resourceapi.Products) {
			restricted = restricted || (ref.res == resourceapi.Orders && ref.field.Restrict)
		}
		if !restricted {
			t.Errorf("a product that an order lists can be deleted; orders must keep it")
		}
	})
	for _, res := range resourceapi.Declared() {
		if len(referrers(res)) == 0 {
			continue
		}
		t.Run(res.Name, func(t *testing.T) { testCascade(t, open(t), res) })
	}
}

// referrers returns every reference to records of res, in declaration
// order.
func referrers(res *resourceapi.Resource) []reference {
	var out []reference
	for _, d := range resourceapi.Declared() {
		for _, ref := range referenceFields(d) {
			if ref.field.References == res.Name {
				out = append(out, ref)
			}
		}
	}
	return out
}

// doomed is a record expected to go when the victim goes.
type doomed struct {
	res *resourceapi.Resource
	rec resourceapi.Record
}

func testCascade(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) {
	f := newMaker(t, s)
	victim := f.create(res, nil)
	keeper := f.create(res, nil)
	// For every reference to res, a record that refers to the victim and one
	// that refers to the keeper; and, down the chain, records that refer to
	// those that go with the victim. Restricting references to the victim
	// itself get a record too: it blocks the delete until it is gone.
	var gone []doomed
	var blockers []doomed
	var refer func(target *resourceapi.Resource, id int64, depth int, root bool)
	refer = func(target *resourceapi.Resource, id int64, depth int, root bool) {
		if depth > 3 {
			t.Fatalf("references nest deeper than the suite follows")
		}
		for _, ref := range referrers(target) {
			key := ref.field.Name
			if ref.item != nil {
				key = ref.item.Name + "." + ref.field.Name
			}
			if ref.field.Restrict {
				if root {
					blockers = append(blockers, doomed{ref.res, f.create(ref.res, refs{key: id})})
				}
				continue
			}
			rec := f.create(ref.res, refs{key: id})
			gone = append(gone, doomed{ref.res, rec})
			if root {
				f.create(ref.res, refs{key: keeper.ID()})
			}
			refer(ref.res, rec.ID(), depth+1, false)
		}
	}
	refer(res, victim.ID(), 1, true)

	// Read everything (records and pages), so that a cache holds it.
	warm := func() {
		for _, d := range resourceapi.Declared() {
			for _, rec := range f.alive(d) {
				mustSame(t, f.mustGet(d, rec.ID()), rec, "Get before the delete")
			}
			mustListOf(t, s, d, "limit", "100")
		}
	}
	lists := func(what string) {
		t.Helper()
		for _, d := range resourceapi.Declared() {
			params := []string{"limit", "100"}
			if d.SoftDelete != "" {
				params = append(params, "status", resourceapi.StatusAll)
			}
			want := ids(sorted(f.alive(d), "id", false))
			if got := ids(mustListOf(t, s, d, params...).Records); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("after %s, %s listed = %v, want %v", what, d.Name, got, want)
			}
			if got := mustListOf(t, s, d, params...).Total; got != len(want) {
				t.Fatalf("after %s, %s total = %d, want %d", what, d.Name, got, len(want))
			}
		}
	}

	if len(blockers) > 0 {
		warm()
		err := s.Delete(timeout(t), res, victim.ID(), nil)
		mustCode(t, err, resourceapi.CodeConflict, fmt.Sprintf("Delete of a %s that %s keep", res.Singular, blockers[0].res.Name))
		for _, d := range resourceapi.Declared() {
			for _, rec := range f.alive(d) {
				mustSame(t, f.mustGet(d, rec.ID()), rec, "record after a refused delete")
			}
		}
		lists("a refused delete")
		for _, b := range blockers {
			if err := s.Delete(timeout(t), b.res, b.rec.ID(), nil); err != nil {
				t.Fatalf("Delete(%s %d) = %v", b.res.Singular, b.rec.ID(), err)
			}
			f.forget(b.res, b.rec.ID())
		}
	}

	warm()
	if err := s.Delete(timeout(t), res, victim.ID(), nil); err != nil {
		t.Fatalf("Delete(%s %d) = %v, want nil", res.Singular, victim.ID(), err)
	}
	f.forget(res, victim.ID())
	f.mustAbsent(res, victim.ID(), "the delete")
	for _, g := range gone {
		f.mustAbsent(g.res, g.rec.ID(), fmt.Sprintf("deleting the %s it refers to", res.Singular))
		f.forget(g.res, g.rec.ID())
	}
	for _, d := range resourceapi.Declared() {
		for _, rec := range f.alive(d) {
			mustSame(t, f.mustGet(d, rec.ID()), rec, "record that does not refer to the deleted one")
		}
	}
	lists("the delete")

	// The items of deleted records went with them: what only they referred
	// to, with a restricting reference, can be deleted now.
	for _, g := range gone {
		for _, ref := range referenceFields(g.res) {
			if ref.item == nil || !ref.field.Restrict {
				continue
			}
			for _, item := range g.rec[ref.item.Name].([]resourceapi.Record) {
				target := resourceapi.ResourceNamed(ref.field.References)
				id := item[ref.field.Name].(int64)
				if err := s.Delete(timeout(t), target, id, nil); err != nil {
					t.Fatalf("Delete(%s %d), which only a deleted %s listed = %v; want its items gone with it",
						target.Singular, id, g.res.Singular, err)
				}
				f.forget(target, id)
			}
		}
	}
}

// mustShapeOf fails unless rec is a well-formed record of res as stores
// return it: the visible fields exactly, with values of the declared types.
func mustShapeOf(tb testing.TB, res *resourceapi.Resource, rec resourceapi.Record, what string) {
	tb.Helper()
	if problems := shapeOf(res, rec); len(problems) > 0 {
		tb.Fatalf("%s returned a malformed record %s: %s", what, show(rec), strings.Join(problems, "; "))
	}
}

func shapeOf(res *resourceapi.Resource, rec resourceapi.Record) []string {
	if rec == nil {
		return []string{"record is nil"}
	}
	var problems []string
	for name := range rec {
		if f := res.Field(name); f == nil || f.WriteOnly {
			problems = append(problems, fmt.Sprintf("field %q must not be returned", name))
		}
	}
	for _, name := range res.VisibleFields() {
		v, ok := rec[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("field %q missing (absent values are nil, never omitted)", name))
			continue
		}
		problems = append(problems, valueShape(res.Field(name), name, v)...)
	}
	if id, ok := rec["id"].(int64); ok && id <= 0 {
		problems = append(problems, fmt.Sprintf("id = %d, want > 0", id))
	}
	return problems
}

// valueShape checks one value of field f, named name in messages.
func valueShape(f *resourceapi.Field, name string, v any) []string {
	if v == nil {
		if !f.Nullable {
			return []string{fmt.Sprintf("%s = nil, want a %s", name, f.Type)}
		}
		return nil
	}
	bad := func(want string) []string { return []string{fmt.Sprintf("%s = %T, want %s", name, v, want)} }
	switch f.Type {
	case resourceapi.TypeInt:
		if _, ok := v.(int64); !ok {
			return bad("int64")
		}
	case resourceapi.TypeString:
		if _, ok := v.(string); !ok {
			return bad("string")
		}
	case resourceapi.TypeBool:
		if _, ok := v.(bool); !ok {
			return bad("bool")
		}
	case resourceapi.TypeStrings:
		switch l, ok := v.([]string); {
		case !ok:
			return bad("[]string")
		case l == nil:
			return []string{fmt.Sprintf("%s = []string(nil), want a non-nil list (an empty list is [], not null)", name)}
		}
	case resourceapi.TypeTime:
		switch t, ok := v.(time.Time); {
		case !ok:
			return bad("time.Time")
		case t.Location() != time.UTC:
			return []string{fmt.Sprintf("%s location = %v, want UTC", name, t.Location())}
		case !t.Equal(resourceapi.Timestamp(t)):
			return []string{fmt.Sprintf("%s = %s, want millisecond precision", name, t.Format(time.RFC3339Nano))}
		}
	case resourceapi.TypeItems:
		items, ok := v.([]resourceapi.Record)
		if !ok || items == nil {
			return bad("a non-nil []resourceapi.Record")
		}
		var problems []string
		for i, item := range items {
			prefix := fmt.Sprintf("%s[%d].", name, i)
			for k := range item {
				if f.Items.Field(k) == nil {
					problems = append(problems, fmt.Sprintf("%s%s is not an item field", prefix, k))
				}
			}
			for j := range f.Items.Fields {
				sub := &f.Items.Fields[j]
				sv, ok := item[sub.Name]
				if !ok {
					problems = append(problems, prefix+sub.Name+" missing")
					continue
				}
				problems = append(problems, valueShape(sub, prefix+sub.Name, sv)...)
			}
		}
		return problems
	}
	return nil
}
