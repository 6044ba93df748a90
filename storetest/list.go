package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

func testList(t *testing.T, open opener) {
	t.Run("InvalidQuery", func(t *testing.T) {
		// Queries built by hand (as GraphQL builds them), not by
		// ParseListQuery: the store refuses what is invalid with an error
		// of CodeValidation, never a panic or a query with a negative
		// OFFSET.
		s := open(t)
		seed(t, s, 3)
		role := users.Filter("role")
		foreign := &resourceapi.Filter{Param: "role", Kind: resourceapi.FilterContains, Field: "roles"}
		for name, q := range map[string]resourceapi.ListQuery{
			"zero value":          {},
			"empty sort":          {Limit: 10},
			"unknown sort":        {Limit: 10, Sort: "nope"},
			"write-only sort":     {Limit: 10, Sort: "password"},
			"zero limit":          {Sort: "id"},
			"limit over the max":  {Sort: "id", Limit: resourceapi.MaxLimit + 1},
			"negative offset":     {Sort: "id", Limit: 10, Offset: -10},
			"huge offset":         {Sort: "id", Limit: 10, Offset: resourceapi.MaxOffset + 1},
			"search with NUL":     {Sort: "id", Limit: 10, Search: "a\x00b"},
			"foreign filter":      {Sort: "id", Limit: 10, Filters: []resourceapi.FilterValue{{Filter: foreign, Value: "admin"}}},
			"nil filter":          {Sort: "id", Limit: 10, Filters: []resourceapi.FilterValue{{Value: "admin"}}},
			"filter value type":   {Sort: "id", Limit: 10, Filters: []resourceapi.FilterValue{{Filter: role, Value: int64(1)}}},
			"unknown field shown": {Sort: "id", Limit: 10, Fields: []string{"password"}},
		} {
			page, err := s.List(timeout(t), users, q)
			if resourceapi.ErrorCode(err) != resourceapi.CodeValidation {
				t.Errorf("List(%s) = %d records, %v; want a VALIDATION_ERROR", name, len(page.Records), err)
			}
		}
		// A valid query built by hand works.
		q, err := resourceapi.NewListQuery(users, resourceapi.ListQuery{Offset: 1, Limit: 1})
		if err != nil {
			t.Fatalf("NewListQuery = %v", err)
		}
		page, err := s.List(timeout(t), users, q)
		if err != nil || len(page.Records) != 1 || page.Total != 3 {
			t.Fatalf("List(offset 1, limit 1) = %d records of %d, %v; want 1 of 3", len(page.Records), page.Total, err)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		s := open(t)
		page := mustList(t, s)
		if len(page.Records) != 0 || page.Total != 0 {
			t.Fatalf("List of an empty store = %d records, total %d; want 0, 0", len(page.Records), page.Total)
		}
	})

	t.Run("DefaultPage", func(t *testing.T) {
		s := open(t)
		all := seed(t, s, 25)
		page := mustList(t, s)
		if page.Total != 25 {
			t.Fatalf("total = %d, want 25", page.Total)
		}
		if got, want := ids(page.Records), ids(all[:resourceapi.DefaultLimit]); !slices.Equal(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
		for i, rec := range page.Records {
			mustSame(t, rec, all[i], "listed record (want what Create returned)")
		}
	})

	t.Run("Paging", func(t *testing.T) {
		s := open(t)
		all := seed(t, s, 25)
		tests := []struct {
			params []string
			lo, hi int // want all[lo:hi]
		}{
			{[]string{"limit", "10"}, 0, 10},
			{[]string{"limit", "10", "page", "2"}, 10, 20},
			{[]string{"limit", "10", "page", "3"}, 20, 25},
			{[]string{"limit", "10", "page", "4"}, 25, 25},
			{[]string{"page", "2"}, 20, 25},
			{[]string{"page", "3"}, 25, 25},
			{[]string{"page", "1000"}, 25, 25},
			{[]string{"limit", "100"}, 0, 25},
			{[]string{"limit", "1"}, 0, 1},
			{[]string{"limit", "1", "page", "25"}, 24, 25},
			{[]string{"limit", "1", "page", "26"}, 25, 25},
			{[]string{"limit", "7", "page", "2"}, 7, 14},
		}
		for _, tt := range tests {
			t.Run(queryName(tt.params), func(t *testing.T) {
				page := mustList(t, s, tt.params...)
				if page.Total != 25 {
					t.Fatalf("total = %d, want 25", page.Total)
				}
				if got, want := ids(page.Records), ids(all[tt.lo:tt.hi]); !slices.Equal(got, want) {
					t.Fatalf("ids = %v, want %v", got, want)
				}
			})
		}
	})

	t.Run("Sort", func(t *testing.T) { testSort(t, open(t)) })

	t.Run("Status", func(t *testing.T) {
		s := open(t)
		all := seed(t, s, 5)
		for _, i := range []int{1, 3} {
			all[i] = mustUpdate(t, s, all[i].ID(), resourceapi.Record{"deleted": true})
		}
		active, deleted := []int64{all[0].ID(), all[2].ID(), all[4].ID()}, []int64{all[1].ID(), all[3].ID()}
		tests := []struct {
			params []string
			want   []int64
			total  int // 0: len(want)
		}{
			{nil, active, 0},
			{[]string{"status", "active"}, active, 0},
			{[]string{"status", "deleted"}, deleted, 0},
			{[]string{"status", "all"}, ids(all), 0},
			{[]string{"status", "all", "order", "desc"}, reversed(ids(all)), 0},
			{[]string{"status", "deleted", "limit", "1", "page", "2"}, deleted[1:], 2},
		}
		for _, tt := range tests {
			t.Run(queryName(tt.params), func(t *testing.T) { mustListIDs(t, s, tt.params, tt.want, tt.total) })
		}
	})

	t.Run("Role", func(t *testing.T) {
		s := open(t)
		roles := [][]string{{"user"}, {"editor"}, {"admin", "editor"}, {"admin"}, {"admin"}, {}, {"editor", "user"}}
		var u []int64
		for i, r := range roles {
			in := user("R"+strconv.Itoa(i), "r"+strconv.Itoa(i)+"@example.com")
			in["roles"] = r
			u = append(u, mustCreate(t, s, in).ID())
		}
		mustUpdate(t, s, u[4], resourceapi.Record{"deleted": true})
		tests := []struct {
			params []string
			want   []int64
			total  int // 0: len(want)
		}{
			{[]string{"role", "admin"}, []int64{u[2], u[3]}, 0},
			{[]string{"role", "admin", "status", "all"}, []int64{u[2], u[3], u[4]}, 0},
			{[]string{"role", "admin", "status", "deleted"}, []int64{u[4]}, 0},
			{[]string{"role", "editor"}, []int64{u[1], u[2], u[6]}, 0},
			{[]string{"role", "user"}, []int64{u[0], u[6]}, 0},
			{[]string{"role", "editor", "sort", "id", "order", "desc", "limit", "2"}, []int64{u[6], u[2]}, 3},
		}
		for _, tt := range tests {
			t.Run(queryName(tt.params), func(t *testing.T) { mustListIDs(t, s, tt.params, tt.want, tt.total) })
		}
	})

	t.Run("Search", func(t *testing.T) { testSearch(t, open(t)) })
}

// queryName names a subtest after its query parameters.
func queryName(params []string) string {
	if len(params) == 0 {
		return "defaults"
	}
	var b strings.Builder
	for i := 0; i+1 < len(params); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(params[i] + "=" + params[i+1])
	}
	return b.String()
}

func reversed(s []int64) []int64 {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// seed creates n users, named and mailed in id order, and returns them.
func seed(tb testing.TB, s resourceapi.Store, n int) []resourceapi.Record {
	tb.Helper()
	all := make([]resourceapi.Record, n)
	for i := range all {
		name := fmt.Sprintf("user%02d", i)
		all[i] = mustCreate(tb, s, user(name, name+"@example.com"))
	}
	return all
}

// mustListIDs fails unless listing with params gives exactly the ids want, in
// order, with total the number of matches (len(want) when total is 0).
func mustListIDs(tb testing.TB, s resourceapi.Store, params []string, want []int64, total int) {
	tb.Helper()
	if total == 0 {
		total = len(want)
	}
	page := mustList(tb, s, params...)
	if got := ids(page.Records); !slices.Equal(got, want) {
		tb.Fatalf("List(%q) ids = %v, want %v", params, got, want)
	}
	if page.Total != total {
		tb.Fatalf("List(%q) total = %d, want %d", params, page.Total, total)
	}
}

func testSort(t *testing.T, s resourceapi.Store) {
	// Lower-case ASCII names and distinct first letters of emails order the
	// same under byte, case-insensitive and linguistic collations, so the
	// suite does not pin a collation the domain leaves open.
	names := []string{"carol", "alice", "bob", "alice", "dave", "bob", "alice", "erin", "bob"}
	emails := []string{"mike", "fred", "zed", "amy", "quinn", "hank", "olga", "bea", "kim"}
	ages := []any{int64(30), nil, int64(25), int64(30), nil, int64(41), int64(0), int64(25), nil}
	all := make([]resourceapi.Record, len(names))
	for i := range names {
		in := user(names[i], emails[i]+"@example.com")
		in["age"] = ages[i]
		all[i] = mustCreate(t, s, in)
	}
	// Touch a few, out of id order, so that updated_at differs from created_at
	// order.
	for _, i := range []int{5, 0, 3} {
		time.Sleep(2 * time.Millisecond)
		all[i] = mustUpdate(t, s, all[i].ID(), resourceapi.Record{"age": ages[i]})
	}
	for _, field := range users.SortableFields() {
		for _, desc := range []bool{false, true} {
			order := "asc"
			if desc {
				order = "desc"
			}
			t.Run(field+"/"+order, func(t *testing.T) {
				want := ids(sorted(all, field, desc))
				mustListIDs(t, s, []string{"sort", field, "order", order, "limit", "100"}, want, 0)
				// Paging must walk the same order without skipping or
				// repeating a record.
				var paged []int64
				for p := 1; p <= 4; p++ {
					page := mustList(t, s, "sort", field, "order", order, "limit", "3", "page", strconv.Itoa(p))
					paged = append(paged, ids(page.Records)...)
				}
				if !slices.Equal(paged, want) {
					t.Fatalf("ids over pages of 3 = %v, want %v", paged, want)
				}
			})
		}
	}
	t.Run("DefaultIsIDAscending", func(t *testing.T) {
		mustListIDs(t, s, nil, ids(all), 0)
		mustListIDs(t, s, []string{"order", "desc"}, reversed(ids(all)), 0)
	})
}

// sorted returns recs ordered by field, null first, ties broken by id, and the
// whole order reversed when desc.
func sorted(recs []resourceapi.Record, field string, desc bool) []resourceapi.Record {
	out := slices.Clone(recs)
	slices.SortFunc(out, func(a, b resourceapi.Record) int {
		return cmp.Or(compareValues(a[field], b[field]), cmp.Compare(a.ID(), b.ID()))
	})
	if desc {
		slices.Reverse(out)
	}
	return out
}

// compareValues orders two values of one field, null before everything.
func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch a := a.(type) {
	case int64:
		return cmp.Compare(a, b.(int64))
	case string:
		return strings.Compare(a, b.(string))
	case time.Time:
		return a.Compare(b.(time.Time))
	case bool:
		bb := b.(bool)
		switch {
		case a == bb:
			return 0
		case !a:
			return -1
		}
		return 1
	}
	panic(fmt.Sprintf("storetest: cannot compare %T", a))
}

func testSearch(t *testing.T, s resourceapi.Store) {
	type person struct {
		key, name, email string
		roles            []string
		deleted          bool
	}
	people := []person{
		{"alice", "Alice Smith", "alice@example.com", []string{"admin"}, false},
		{"bob", "Bob O'Brien", "bob@example.com", nil, false},
		{"carol", "Carol 100% Real", "carol@example.com", nil, false},
		{"daveu", "Dave_D", "dave@example.com", nil, false},
		{"davex", "DaveXD", "davex@example.com", nil, false},
		{"eve", `Eve "Quotes"`, "eve@example.com", nil, false},
		{"frank", `Frank\Back`, "frank@example.com", nil, false},
		{"zoe", "Zoë Kravitz", "zoe@example.com", []string{"admin", "editor"}, false},
		{"emile", "émile zola", "emile@example.net", []string{"editor"}, false},
		{"gus", "Gus", "gus@mail.example.org", nil, false},
		{"hal", "Hal 1000", "hal@example.com", nil, false},
		{"asa", "ÅSA Öberg", "asa@example.com", nil, false},
		{"alina", "Alina Deleted", "alina@example.com", nil, true},
	}
	recs := make(map[string]resourceapi.Record)
	var all []resourceapi.Record
	for _, p := range people {
		in := user(p.name, p.email)
		if p.roles != nil {
			in["roles"] = p.roles
		}
		in["deleted"] = p.deleted
		recs[p.key] = mustCreate(t, s, in)
		all = append(all, recs[p.key])
	}
	idsOf := func(keys ...string) []int64 {
		out := make([]int64, len(keys))
		for i, k := range keys {
			out[i] = recs[k].ID()
		}
		return out
	}

	tests := []struct {
		name string
		q    string
		want []string // keys, in id order
	}{
		{"word", "alice", []string{"alice"}},
		{"upper", "ALICE", []string{"alice"}},
		{"trimmed", "  alice  ", []string{"alice"}},
		{"one character", "z", []string{"zoe", "emile"}},
		{"two characters", "zO", []string{"zoe", "emile"}},
		{"email part", "EXAMPLE.NET", []string{"emile"}},
		{"email domain", "mail.example", []string{"gus"}},
		{"every email", "@", []string{"alice", "bob", "carol", "daveu", "davex", "eve", "frank", "zoe", "emile", "gus", "hal", "asa"}},
		{"percent", "%", []string{"carol"}},
		{"percent after digits", "100%", []string{"carol"}},
		{"underscore", "_", []string{"daveu"}},
		{"underscore between letters", "e_d", []string{"daveu"}},
		{"backslash", `\`, []string{"frank"}},
		{"backslash percent", `\%`, nil},
		{"backslash underscore", `\_`, nil},
		{"double percent", "%%", nil},
		{"double quote", `"`, []string{"eve"}},
		{"quoted word", `"quotes"`, []string{"eve"}},
		{"single quote", "'", []string{"bob"}},
		{"quote in word", "o'b", []string{"bob"}},
		{"non-ASCII", "zoë", []string{"zoe"}},
		{"non-ASCII upper", "ZOË", []string{"zoe"}},
		{"non-ASCII lower query, upper data", "åsa", []string{"asa"}},
		{"non-ASCII mixed", "öBERG", []string{"asa"}},
		{"accented upper", "ÉMILE", []string{"emile"}},
		{"accent only", "ë", []string{"zoe"}},
		{"no accent folding", "zoe k", nil},
		{"no match", "nomatch", nil},
		{"soft-deleted excluded", "alina", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustListIDs(t, s, []string{"q", tt.q}, idsOf(tt.want...), 0)
		})
	}

	// Search combines with filters, sort and paging by AND; the model below is
	// enough for this data set (no case folding beyond strings.ToLower).
	match := func(rec resourceapi.Record, q string) bool {
		q = strings.ToLower(strings.TrimSpace(q))
		for _, f := range []string{"name", "email"} {
			if strings.Contains(strings.ToLower(rec[f].(string)), q) {
				return true
			}
		}
		return false
	}
	combined := []struct {
		q      string
		params []string
		keep   func(resourceapi.Record) bool
	}{
		{"example.com", []string{"role", "admin"}, func(r resourceapi.Record) bool { return users.Holds(r) }},
		{"example.com", []string{"role", "admin", "sort", "name", "order", "desc"}, func(r resourceapi.Record) bool { return users.Holds(r) }},
		{"e", []string{"status", "deleted"}, func(r resourceapi.Record) bool { return r["deleted"] == true }},
		{"AL", []string{"status", "all"}, func(resourceapi.Record) bool { return true }},
		{"a", []string{"status", "all", "sort", "email", "order", "desc", "limit", "4", "page", "2"}, func(resourceapi.Record) bool { return true }},
		{"e", []string{"role", "editor", "sort", "name"}, func(r resourceapi.Record) bool {
			return slices.Contains(r.Strings("roles"), "editor") && r["deleted"] == false
		}},
		{"o", []string{"sort", "name", "limit", "3", "page", "2"}, func(r resourceapi.Record) bool { return r["deleted"] == false }},
		{"o", []string{"sort", "name", "limit", "3", "page", "9"}, func(r resourceapi.Record) bool { return r["deleted"] == false }},
	}
	for _, tt := range combined {
		params := append([]string{"q", tt.q}, tt.params...)
		t.Run("combined/"+queryName(params), func(t *testing.T) {
			q := mustQuery(t, params...)
			var matches []resourceapi.Record
			for _, rec := range all {
				if match(rec, tt.q) && tt.keep(rec) {
					matches = append(matches, rec)
				}
			}
			matches = sorted(matches, q.Sort, q.Desc)
			lo, hi := min(q.Offset, len(matches)), min(q.Offset+q.Limit, len(matches))
			want := ids(matches[lo:hi])
			if len(want) == 0 {
				want = nil
			}
			mustListIDs(t, s, params, want, len(matches))
			if len(matches) == 0 {
				t.Fatalf("the suite's case matches nothing; it tests nothing")
			}
		})
	}
}
