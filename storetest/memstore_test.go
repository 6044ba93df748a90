package storetest_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// memStore is NOT a product store. It exists only so that the suite can be
// run, and shown to pass and to fail, without a database: maps under a
// mutex implementing resourceapi.Store the way the suite says a store must,
// for every declared resource (references, cascades and restricting
// references included, from the declarations). Each entry of bugs switches
// on one deliberate defect (see mutants in storetest_test.go), to prove that
// the suite notices it.
type memStore struct {
	mu sync.Mutex
	// tables holds the stored records of each resource, password included.
	tables map[*resourceapi.Resource]map[int64]resourceapi.Record
	last   map[*resourceapi.Resource]int64 // the last id Create handed out
	now    resourceapi.Clock
	bugs   map[string]bool
	// cached holds the records Get returned, for the stale-cascade-cache
	// defect: a cache that only the writes that name a record invalidate.
	cached map[*resourceapi.Resource]map[int64]resourceapi.Record
	// warm holds the reads already answered, for the cached-reads-ignore-
	// context defect: a cache that answers them again without a look at the
	// context.
	warm map[string]bool
	// retired holds the ids deleted records held.
	retired map[rowKey]bool
}

var _ resourceapi.Store = (*memStore)(nil)

func newMemStore(now resourceapi.Clock, bugs ...string) *memStore {
	s := &memStore{tables: make(map[*resourceapi.Resource]map[int64]resourceapi.Record), last: make(map[*resourceapi.Resource]int64),
		now: now, bugs: make(map[string]bool), warm: make(map[string]bool), cached: make(map[*resourceapi.Resource]map[int64]resourceapi.Record),
		retired: make(map[rowKey]bool)}
	for _, b := range bugs {
		s.bugs[b] = true
	}
	return s
}

// table returns the records of res; s.mu is held.
func (s *memStore) table(res *resourceapi.Resource) map[int64]resourceapi.Record {
	t := s.tables[res]
	if t == nil {
		t = make(map[int64]resourceapi.Record)
		s.tables[res] = t
	}
	return t
}

func (s *memStore) Ping(ctx context.Context) error {
	return s.ctxErr(ctx)
}

func (s *memStore) ctxErr(ctx context.Context) error {
	if s.bugs["ignore-context"] {
		return nil
	}
	return ctx.Err()
}

// readCtxErr is ctxErr for the read identified by key.
func (s *memStore) readCtxErr(ctx context.Context, key string) error {
	if s.bugs["cached-reads-ignore-context"] {
		s.mu.Lock()
		warm := s.warm[key]
		s.warm[key] = true
		s.mu.Unlock()
		if warm {
			return nil
		}
	}
	return s.ctxErr(ctx)
}

func (s *memStore) stamp() time.Time {
	t := s.now()
	if s.bugs["nanosecond-local-time"] {
		return t.Local()
	}
	return resourceapi.Timestamp(t)
}

// show returns the record as stores return it: every field but the
// write-only ones (internal fields included, for the rule layer), copied.
func (s *memStore) show(res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Record {
	out := make(resourceapi.Record, len(rec))
	for name, v := range rec {
		if f := res.Field(name); (f == nil || f.WriteOnly) && !s.bugs["returns-password"] {
			continue
		}
		switch l := v.(type) {
		case []string:
			v = slices.Clone(l)
		case []resourceapi.Record:
			items := make([]resourceapi.Record, len(l))
			for i, item := range l {
				items[i] = maps.Clone(item)
			}
			v = items
		}
		out[name] = v
	}
	return out
}

func (s *memStore) Get(ctx context.Context, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	if err := s.readCtxErr(ctx, fmt.Sprint("get ", id)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bugs["stale-cascade-cache"] {
		if rec, ok := s.cached[res][id]; ok {
			return s.show(res, rec), nil
		}
	}
	rec, ok := s.table(res)[id]
	if !ok {
		return nil, notFound(res)
	}
	if s.cached[res] == nil {
		s.cached[res] = make(map[int64]resourceapi.Record)
	}
	s.cached[res][id] = rec
	return s.show(res, rec), nil
}

// drop removes record id of res from the Get cache, as every write that names
// it does; s.mu is held.
func (s *memStore) drop(res *resourceapi.Resource, id int64) { delete(s.cached[res], id) }

func notFound(res *resourceapi.Resource) error {
	return resourceapi.Errorf(resourceapi.CodeNotFound, "%s not found", res.Singular)
}

func (s *memStore) Create(ctx context.Context, res *resourceapi.Resource, rec resourceapi.Record, before ...resourceapi.Prerequisite) (resourceapi.Record, error) {
	if err := s.ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(before) > 0 {
		// One transaction: the prerequisites and the record, or nothing.
		last := maps.Clone(s.last)
		var made []rowKey
		undo := func() {
			for _, k := range made {
				delete(s.table(k.res), k.id)
			}
			s.last = last
		}
		rec = rec.Clone()
		for _, p := range before {
			pre, err := s.createLocked(ctx, p.Resource, p.Record)
			if err != nil {
				undo()
				return nil, err
			}
			made = append(made, rowKey{p.Resource, pre.ID()})
			rec[p.Link] = pre.ID()
		}
		out, err := s.createLocked(ctx, res, rec)
		if err != nil {
			undo()
		}
		return out, err
	}
	return s.createLocked(ctx, res, rec)
}

// createLocked is Create of one record, with s.mu held.
func (s *memStore) createLocked(ctx context.Context, res *resourceapi.Resource, rec resourceapi.Record) (resourceapi.Record, error) {
	rows := s.table(res)
	id := s.last[res] + 1
	if s.bugs["reuse-ids"] {
		id = int64(len(rows)) + 1
	}
	for rows[id] != nil && !s.bugs["no-skip"] {
		id++
	}
	if rows[id] != nil {
		// Like a store that inserts the next id of its sequence as it is.
		return nil, resourceapi.Errorf(resourceapi.CodeConflict, "A %s with this id already exists", res.Singular)
	}
	if id > resourceapi.MaxID {
		return nil, resourceapi.Errorf(resourceapi.CodeUnprocessable, "no id left")
	}
	out, err := s.insert(res, id, rec)
	if err == nil && !s.bugs["reuse-ids"] {
		s.last[res] = id
	}
	if err == nil && s.bugs["late-cancel"] {
		// Like a store that stops waiting for a commit that still happens.
		s.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		s.mu.Lock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, err
}

// insert stores rec under id with defaults and timestamps; s.mu is held.
func (s *memStore) insert(res *resourceapi.Resource, id int64, rec resourceapi.Record) (resourceapi.Record, error) {
	row := make(resourceapi.Record)
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.ReadOnly && !f.Computed || f.Transient {
			continue
		}
		if v, ok := rec[f.Name]; ok {
			switch x := v.(type) {
			case resourceapi.IfCreated:
				v = x.Value
			case resourceapi.IfChanged:
				v = x.Value
			}
			row[f.Name] = v
		} else if f.Type == resourceapi.TypeItems {
			row[f.Name] = []resourceapi.Record{}
		} else if !s.bugs["no-defaults"] {
			row[f.Name] = f.DefaultValue()
		}
	}
	if s.bugs["partial-writes"] {
		s.table(res)[id] = row
	}
	if err := s.unique(res, id, row); err != nil {
		return nil, err
	}
	if err := s.references(res, row); err != nil {
		return nil, err
	}
	now := s.stamp()
	row["id"], row["created_at"], row["updated_at"] = id, now, now
	s.table(res)[id] = row
	s.drop(res, id)
	if s.bugs["put-moves-sequence"] {
		// Like AUTOINCREMENT, which goes on after the largest id inserted.
		s.last[res] = max(s.last[res], id)
	}
	return s.show(res, row), nil
}

// unique reports CodeConflict when a unique field of row is held by another
// record; s.mu is held.
func (s *memStore) unique(res *resourceapi.Resource, id int64, row resourceapi.Record) error {
	for _, f := range res.Fields {
		v, ok := row[f.Name].(string)
		if !f.Unique || !ok {
			continue
		}
		for oid, other := range s.table(res) {
			o, _ := other[f.Name].(string)
			same := strings.EqualFold(o, v)
			if s.bugs["case-sensitive-unique"] {
				same = o == v
			}
			if oid != id && same && !(s.bugs["deleted-frees-unique"] && other.Bool(res.SoftDelete)) {
				return resourceapi.Errorf(resourceapi.CodeConflict, "A %s with this %s already exists", res.Singular, f.Name)
			}
		}
	}
	return nil
}

// retain reports the Retain error when changing cur into next would leave no
// active holder; s.mu is held. next is nil for a delete.
func (s *memStore) retain(res *resourceapi.Resource, cur, next resourceapi.Record) error {
	if res.Retain == nil || s.bugs["no-retain"] || !s.holds(res, cur) || (next != nil && s.holds(res, next)) {
		return nil
	}
	id := cur.ID()
	if s.bugs["racy-retain"] {
		// Check on a snapshot, then let others run, as a store that checks
		// outside its write lock would.
		snapshot := maps.Clone(s.table(res))
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		defer s.mu.Lock()
		for oid, other := range snapshot {
			if oid != id && s.holds(res, other) {
				return nil
			}
		}
		return resourceapi.Errorf(resourceapi.CodeUnprocessable, "%s", res.Retain.Message)
	}
	for oid, other := range s.table(res) {
		if oid != id && s.holds(res, other) {
			return nil
		}
	}
	return resourceapi.Errorf(resourceapi.CodeUnprocessable, "%s", res.Retain.Message)
}

// references reports CodeUnprocessable, with a detail per field, when row
// refers to records that do not exist; s.mu is held.
func (s *memStore) references(res *resourceapi.Resource, row resourceapi.Record) error {
	if s.bugs["dangling-references"] {
		return nil
	}
	var details []resourceapi.FieldError
	absent := func(name, to string, v any) {
		if id, ok := v.(int64); ok && s.table(resourceapi.ResourceNamed(to))[id] == nil {
			details = append(details, resourceapi.FieldError{Field: name, Message: "names no record"})
		}
	}
	for _, f := range res.Fields {
		if f.References != "" {
			absent(f.Name, f.References, row[f.Name])
		}
		items, _ := row[f.Name].([]resourceapi.Record)
		for i, item := range items {
			for _, sub := range f.Items.Fields {
				if sub.References != "" {
					absent(fmt.Sprintf("%s[%d].%s", f.Name, i, sub.Name), sub.References, item[sub.Name])
				}
			}
		}
	}
	if len(details) > 0 {
		return &resourceapi.Error{Code: resourceapi.CodeUnprocessable, Message: "refers to records that do not exist", Details: details}
	}
	return nil
}

// refersTo reports whether rec, a record of res, refers to record id of
// target through a reference that is Restrict (restrict true) or not.
func refersTo(res *resourceapi.Resource, rec resourceapi.Record, target *resourceapi.Resource, id int64, restrict bool) bool {
	for _, f := range res.Fields {
		if f.References == target.Name && f.Restrict == restrict && rec[f.Name] == id {
			return true
		}
		items, _ := rec[f.Name].([]resourceapi.Record)
		for _, item := range items {
			for _, sub := range f.Items.Fields {
				if sub.References == target.Name && sub.Restrict == restrict && item[sub.Name] == id {
					return true
				}
			}
		}
	}
	return false
}

type rowKey struct {
	res *resourceapi.Resource
	id  int64
}

// cascade returns record id of res and every record that refers to it,
// directly or through others, by a reference that is not Restrict; s.mu is
// held.
func (s *memStore) cascade(res *resourceapi.Resource, id int64) []rowKey {
	out := []rowKey{{res, id}}
	if s.bugs["no-cascade"] {
		return out
	}
	for i := 0; i < len(out); i++ {
		for _, d := range resourceapi.Declared() {
			for oid, rec := range s.table(d) {
				k := rowKey{d, oid}
				if refersTo(d, rec, out[i].res, out[i].id, false) && !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// restricted reports whether a record outside gone keeps one in it by a
// restricting reference; s.mu is held.
func (s *memStore) restricted(gone []rowKey) bool {
	if s.bugs["no-restrict"] {
		return false
	}
	for _, g := range gone {
		for _, d := range resourceapi.Declared() {
			for oid, rec := range s.table(d) {
				if refersTo(d, rec, g.res, g.id, true) && !slices.Contains(gone, rowKey{d, oid}) {
					return true
				}
			}
		}
	}
	return false
}

func (s *memStore) holds(res *resourceapi.Resource, rec resourceapi.Record) bool {
	if s.bugs["retain-counts-deleted"] {
		return rec != nil && slices.Contains(rec.Strings(res.Retain.Field), res.Retain.Value)
	}
	return res.Holds(rec)
}

// check runs cond against the current record (nil when absent); s.mu is held.
func (s *memStore) check(res *resourceapi.Resource, cond resourceapi.Condition, cur resourceapi.Record) error {
	if cond == nil || s.bugs["ignore-condition"] {
		return nil
	}
	var shown resourceapi.Record
	if cur != nil {
		shown = s.show(res, cur)
	}
	if err := cond(shown); err != nil {
		if s.bugs["wrap-condition-error"] {
			return fmt.Errorf("condition: %w", err)
		}
		return err
	}
	return nil
}

func (s *memStore) Replace(ctx context.Context, res *resourceapi.Resource, id int64, rec resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, bool, error) {
	if err := s.ctxErr(ctx); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.table(res)[id]
	if err := s.check(res, cond, cur); err != nil {
		return nil, false, err
	}
	if cur == nil && s.bugs["racy-replace"] {
		// Like a store that finds the id absent, then inserts it without
		// having kept others from doing the same in between.
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		if s.table(res)[id] != nil {
			return nil, false, resourceapi.Errorf(resourceapi.CodeConflict, "A %s with this id already exists", res.Singular)
		}
	}
	if cur == nil {
		if s.retired[rowKey{res, id}] && !resourceapi.IDReuseAllowed(ctx) {
			return nil, false, resourceapi.Errorf(resourceapi.CodeConflict, "The id %d belonged to a deleted %s", id, res.Singular)
		}
		out, err := s.insert(res, id, rec)
		return out, err == nil, err
	}
	out, err := s.write(res, cur, rec)
	return out, false, err
}

func (s *memStore) Update(ctx context.Context, res *resourceapi.Resource, id int64, patch resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, error) {
	if err := s.ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.table(res)[id]
	if cur == nil {
		return nil, notFound(res)
	}
	if err := s.check(res, cond, cur); err != nil {
		return nil, err
	}
	return s.write(res, cur, patch)
}

// write applies the fields of rec to cur; s.mu is held.
func (s *memStore) write(res *resourceapi.Resource, cur, rec resourceapi.Record) (resourceapi.Record, error) {
	next := maps.Clone(cur)
	for name, v := range rec {
		switch x := v.(type) {
		case resourceapi.IfCreated:
			continue // the record exists: its owner stays
		case resourceapi.IfChanged:
			if !res.Changes(s.show(res, cur), rec, x.Fields) {
				continue
			}
			v = x.Value
		}
		if f := res.Field(name); f != nil && (!f.ReadOnly || f.Computed) && !f.Transient {
			next[name] = v
		}
	}
	if s.bugs["items-dropped"] {
		for _, f := range res.Fields {
			if _, sent := rec[f.Name]; f.Type == resourceapi.TypeItems && !sent {
				next[f.Name] = []resourceapi.Record{}
			}
		}
	}
	if !s.bugs["frozen-updated-at"] {
		next["updated_at"] = s.stamp()
	}
	if s.bugs["partial-writes"] {
		s.table(res)[cur.ID()] = next
	}
	if err := s.unique(res, cur.ID(), next); err != nil {
		return nil, err
	}
	if err := s.retain(res, cur, next); err != nil {
		return nil, err
	}
	if err := s.references(res, next); err != nil {
		return nil, err
	}
	s.table(res)[cur.ID()] = next
	s.drop(res, cur.ID())
	return s.show(res, next), nil
}

func (s *memStore) Delete(ctx context.Context, res *resourceapi.Resource, id int64, cond resourceapi.Condition) error {
	if err := s.ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.table(res)[id]
	if cur == nil {
		return notFound(res)
	}
	if err := s.check(res, cond, cur); err != nil {
		return err
	}
	if err := s.retain(res, cur, nil); err != nil {
		return err
	}
	gone := s.cascade(res, id)
	if s.restricted(gone) {
		return resourceapi.Errorf(resourceapi.CodeConflict, "The %s is kept by records that refer to it", res.Singular)
	}
	for _, g := range gone {
		delete(s.table(g.res), g.id)
		if !s.bugs["ids-come-back"] {
			s.retired[g] = true
		}
	}
	s.drop(res, id)
	return nil
}

func (s *memStore) List(ctx context.Context, res *resourceapi.Resource, q resourceapi.ListQuery) (resourceapi.Page, error) {
	if err := s.readCtxErr(ctx, fmt.Sprintf("list %+v", q)); err != nil {
		return resourceapi.Page{}, err
	}
	if err := q.Check(res); err != nil {
		return resourceapi.Page{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []resourceapi.Record
	for _, rec := range s.table(res) {
		if s.matches(res, rec, q) {
			match = append(match, rec)
		}
	}
	slices.SortFunc(match, func(a, b resourceapi.Record) int {
		c := compare(a[q.Sort], b[q.Sort], s.bugs["nulls-last"])
		if q.Desc {
			c = -c
		}
		byID := cmp.Compare(a.ID(), b.ID())
		if q.Desc && !s.bugs["ties-ascending"] {
			byID = -byID
		}
		return cmp.Or(c, byID)
	})
	page := resourceapi.Page{Total: len(match)}
	lo, hi := min(q.Offset, len(match)), min(q.Offset+q.Limit, len(match))
	for _, rec := range match[lo:hi] {
		page.Records = append(page.Records, s.show(res, rec))
	}
	return page, nil
}

func (s *memStore) matches(res *resourceapi.Resource, rec resourceapi.Record, q resourceapi.ListQuery) bool {
	for _, fv := range q.Filters {
		switch fv.Filter.Kind {
		case resourceapi.FilterSoftDelete:
			if rec.Bool(res.SoftDelete) != (fv.Value == resourceapi.StatusDeleted) {
				return false
			}
		case resourceapi.FilterContains:
			if v, _ := fv.Value.(string); !slices.Contains(rec.Strings(fv.Filter.Field), v) {
				return false
			}
		case resourceapi.FilterEqual:
			if rec[fv.Filter.Field] != fv.Value {
				return false
			}
		}
	}
	if q.Search == "" {
		return true
	}
	for _, f := range res.Fields {
		v, ok := rec[f.Name].(string)
		if f.Searchable && ok && s.contains(v, q.Search) {
			return true
		}
	}
	return false
}

// contains is the search match: a literal, case-insensitive substring.
func (s *memStore) contains(v, q string) bool {
	switch {
	case s.bugs["like-wildcards"]:
		var re strings.Builder
		re.WriteString("(?is)")
		for _, r := range q {
			switch r {
			case '%':
				re.WriteString(".*")
			case '_':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		return regexp.MustCompile(re.String()).MatchString(v)
	case s.bugs["ascii-case-folding"]:
		return strings.Contains(asciiLower(v), asciiLower(q))
	}
	return strings.Contains(strings.ToLower(v), strings.ToLower(q))
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// compare orders two values of one field; null is smallest unless nullsLast.
func compare(a, b any, nullsLast bool) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil && nullsLast, b == nil && !nullsLast:
		return 1
	case a == nil, b == nil:
		return -1
	}
	switch a := a.(type) {
	case int64:
		return cmp.Compare(a, b.(int64))
	case string:
		return strings.Compare(a, b.(string))
	case time.Time:
		return a.Compare(b.(time.Time))
	case bool:
		switch bb := b.(bool); {
		case a == bb:
			return 0
		case !a:
			return -1
		}
		return 1
	}
	panic(fmt.Sprintf("cannot compare %T", a))
}
