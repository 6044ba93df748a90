package http_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

func TestListPagination(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		recs, pag := c.get("/api/users?status=deleted").list(t)
		if len(recs) != 0 || fmt.Sprint(pag) != "map[limit:20 next_cursor:<nil> page:1 pages:0 prev_cursor:<nil> total:0]" {
			t.Errorf("empty list: %d records, pagination %v; want none and pages 0", len(recs), pag)
		}
		// The test server's admin is user 1: 44 more make 45.
		ids := []int64{1}
		for i := range 44 {
			ids = append(ids, c.mustUser(fmt.Sprintf("user%02d", i), fmt.Sprintf("user%02d@example.com", i)))
		}
		tests := []struct {
			query                     string
			first, n                  int // index of the first id, number of records
			page, limit, total, pages int
		}{
			{"", 0, 20, 1, 20, 45, 3},
			{"?page=2", 20, 20, 2, 20, 45, 3},
			{"?page=3", 40, 5, 3, 20, 45, 3},
			{"?page=4", 0, 0, 4, 20, 45, 3}, // past the end: empty, true total
			{"?page=1000", 0, 0, 1000, 20, 45, 3},
			{"?limit=1", 0, 1, 1, 1, 45, 45},
			{"?limit=100", 0, 45, 1, 100, 45, 1},
			{"?limit=45", 0, 45, 1, 45, 45, 1},
			{"?limit=44&page=2", 44, 1, 2, 44, 45, 2},
			{"?limit=15&page=3", 30, 15, 3, 15, 45, 3},
			{"?limit=7&page=7", 42, 3, 7, 7, 45, 7},
		}
		for _, tt := range tests {
			recs, pag := c.get("/api/users" + tt.query).list(t)
			var got []int64
			for _, rec := range recs {
				got = append(got, idOf(t, rec))
			}
			want := ids[tt.first : tt.first+tt.n]
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s: ids = %v, want %v", tt.query, got, want)
			}
			wantPag := map[string]any{"page": num(tt.page), "limit": num(tt.limit), "total": num(tt.total), "pages": num(tt.pages)}
			// The cursors are checked by TestCursor*.
			if _, ok := pag["next_cursor"]; !ok {
				t.Errorf("%s: no next_cursor in %v", tt.query, pag)
			}
			if _, ok := pag["prev_cursor"]; !ok {
				t.Errorf("%s: no prev_cursor in %v", tt.query, pag)
			}
			delete(pag, "next_cursor")
			delete(pag, "prev_cursor")
			if fmt.Sprint(pag) != fmt.Sprint(wantPag) {
				t.Errorf("%s: pagination = %v, want %v", tt.query, pag, wantPag)
			}
		}
		// Exact envelope shape: data then pagination, nothing else.
		r := c.get("/api/users?limit=1")
		if got := objectKeys(t, r.body); !slices.Equal(got, []string{"data", "pagination"}) {
			t.Errorf("envelope keys = %v", got)
		}
		if !strings.Contains(string(r.body), `"pagination":{"page":1,"limit":1,"total":45,"pages":45,"next_cursor":"`) {
			t.Errorf("pagination rendering: %s", r.body)
		}
		// An empty page is [] (never null).
		if r := c.get("/api/users?page=99"); !strings.HasPrefix(string(r.body), `{"data":[],`) {
			t.Errorf("page past the end: %s", r.body)
		}
	})
}

func num(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func TestListBadParameters(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		tests := []struct {
			query  string
			fields []string
		}{
			{"page=0", []string{"page"}},
			{"page=-1", []string{"page"}},
			{"page=x", []string{"page"}},
			{"page=1.5", []string{"page"}},
			{"page=99999999999999999999", []string{"page"}},
			{"limit=0", []string{"limit"}},
			{"limit=101", []string{"limit"}},
			{"limit=ten", []string{"limit"}},
			{"limit=", []string{"limit"}},
			{"page=1&page=2", []string{"page"}},
			{"sort=password", []string{"sort"}},
			{"sort=roles", []string{"sort"}},
			{"sort=nope", []string{"sort"}},
			{"order=up", []string{"order"}},
			{"order=ASC", []string{"order"}},
			{"status=gone", []string{"status"}},
			{"status=", []string{"status"}},
			{"role=king", []string{"role"}},
			{"fields=id,password", []string{"fields"}},
			{"fields=nope", []string{"fields"}},
			{"q=" + strings.Repeat("a", 201), []string{"q"}},
			{"page=0&limit=0&sort=x&order=x&status=x&role=x&fields=x", []string{"page", "limit", "sort", "order", "fields", "status", "role"}},
		}
		for _, tt := range tests {
			details := c.get("/api/users?"+tt.query).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			got := detailFields(details)
			slices.Sort(got)
			want := slices.Clone(tt.fields)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: detail fields = %v, want %v", tt.query, got, want)
			}
		}
		// Parameters outside the list interface are ignored.
		c.get("/api/users?foo=bar&utm_source=x").mustStatus(t, http.StatusOK)
	})
}

func TestListFilters(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		ann := c.mustUser("Ann Smith", "ann@alpha.example", `,"roles":["admin"]`)
		bob := c.mustUser("Bob Jones", "bob@beta.example", `,"roles":["editor","user"]`)
		cat := c.mustUser("Cat SMITHERS", "cat@gamma.example")
		dan := c.mustUser("Dan", "dan.smith@delta.example", `,"roles":["editor"]`)
		eve := c.mustUser("Eve", "eve@alpha.example", `,"roles":["admin","user"]`)
		c.do("PATCH", fmt.Sprintf("/api/users/%d", eve), `{"deleted":true}`).mustStatus(t, http.StatusOK)

		const admin = 1 // the test server's own admin
		tests := []struct {
			query string
			want  []int64
		}{
			{"", []int64{admin, ann, bob, cat, dan}},
			{"status=active", []int64{admin, ann, bob, cat, dan}},
			{"status=deleted", []int64{eve}},
			{"status=all", []int64{admin, ann, bob, cat, dan, eve}},
			{"role=admin", []int64{admin, ann}},
			{"role=admin&status=all", []int64{admin, ann, eve}},
			{"role=editor", []int64{bob, dan}},
			{"role=user", []int64{bob, cat}},
			{"q=smith", []int64{ann, cat, dan}}, // name or email, any case
			{"q=SMITH", []int64{ann, cat, dan}},
			{"q=Smi", []int64{ann, cat, dan}},
			{"q=alpha", []int64{ann}},
			{"q=alpha&status=all", []int64{ann, eve}},
			{"q=%20smith%20", []int64{ann, cat, dan}}, // trimmed
			{"q=jones&role=editor", []int64{bob}},
			{"q=jones&role=admin", nil},
			{"q=nobody", nil},
			{"q=%25", nil}, // literal, not a wildcard
			{"q=_", nil},
			{"q=", []int64{admin, ann, bob, cat, dan}},
			{"q=smith&sort=name&order=desc", []int64{dan, cat, ann}},
		}
		for _, tt := range tests {
			mustIDs(t, c, "/api/users?"+tt.query, tt.want...)
		}
	})
}

func TestListSort(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		// Lower-case ASCII names and distinct first letters of emails sort
		// the same under any collation; ties (names, ages) test the id
		// tie-break; nulls sort first ascending.
		names := []string{"carol", "alice", "bob", "alice", "dave", "bob", "alice", "erin", "bob"}
		emails := []string{"mike", "fred", "zed", "amy", "quinn", "hank", "olga", "bea", "kim"}
		ages := []string{"30", "null", "25", "30", "null", "41", "0", "25", "null"}
		// The test server's admin (user 1) is listed too.
		all := []map[string]any{c.get("/api/users/1").object(t)}
		for i := range names {
			all = append(all, c.mustCreate(fmt.Sprintf(`{"name":%q,"email":"%s@example.com","age":%s}`, names[i], emails[i], ages[i])))
		}
		// Touch some out of id order so updated_at differs from created_at.
		for _, i := range []int{5, 0, 3} {
			r := c.do("PATCH", fmt.Sprintf("/api/users/%d", idOf(t, all[i+1])), `{"name":"`+names[i]+`"}`)
			r.mustStatus(t, http.StatusOK)
			all[i+1] = r.object(t)
		}
		for _, field := range resourceapi.Users.SortableFields() {
			for _, order := range []string{"asc", "desc"} {
				want := sortedIDs(t, all, field, order == "desc")
				mustIDs(t, c, fmt.Sprintf("/api/users?sort=%s&order=%s", field, order), want...)
				// Pages walk the same order, skipping and repeating nothing.
				var paged []int64
				for p := 1; p <= 4; p++ {
					recs, _ := c.get(fmt.Sprintf("/api/users?sort=%s&order=%s&limit=2&page=%d", field, order, p)).list(t)
					for _, rec := range recs {
						paged = append(paged, idOf(t, rec))
					}
				}
				if !slices.Equal(paged, want[:8]) {
					t.Errorf("sort=%s&order=%s over pages of 2: %v, want %v", field, order, paged, want[:8])
				}
			}
		}
		// Default: id ascending; order alone reverses it.
		mustIDs(t, c, "/api/users", sortedIDs(t, all, "id", false)...)
		mustIDs(t, c, "/api/users?order=desc", sortedIDs(t, all, "id", true)...)
	})
}

// sortedIDs orders users by field (null first, ties by id), all reversed for
// desc, and returns their ids.
func sortedIDs(t *testing.T, users []map[string]any, field string, desc bool) []int64 {
	t.Helper()
	us := slices.Clone(users)
	slices.SortFunc(us, func(a, b map[string]any) int {
		return cmp.Or(compareJSON(a[field], b[field]), cmp.Compare(idOf(t, a), idOf(t, b)))
	})
	ids := make([]int64, len(us))
	for i, u := range us {
		ids[i] = idOf(t, u)
	}
	if desc {
		slices.Reverse(ids)
	}
	return ids
}

func compareJSON(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	if x, ok := a.(json.Number); ok {
		xi, _ := x.Int64()
		yi, _ := b.(json.Number).Int64()
		return cmp.Compare(xi, yi)
	}
	if x, ok := a.(bool); ok { // false first
		y := b.(bool)
		return cmp.Compare(boolRank(x), boolRank(y))
	}
	// Strings, including timestamps, whose fixed format sorts as text.
	return cmp.Compare(a.(string), b.(string))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestListFields(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		c.mustUser("Ann", "ann@example.com")
		c.mustUser("Bo", "bo@example.com")
		r := c.get("/api/users?fields=email,name,id")
		r.mustStatus(t, http.StatusOK)
		var env struct{ Data []json.RawMessage }
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		if len(env.Data) != 3 { // and the test server's admin
			t.Fatalf("%d records, want 3", len(env.Data))
		}
		for _, rec := range env.Data {
			if got := objectKeys(t, rec); !slices.Equal(got, []string{"id", "name", "email"}) {
				t.Errorf("fields=email,name,id: keys = %v, want [id name email]", got)
			}
		}
		// Spaces around names are forgiven (the document's names have none).
		r = c.lenient().get("/api/users?fields=%20roles%20,deleted,roles")
		if got := objectKeys(t, mustFirst(t, r.body)); !slices.Equal(got, []string{"roles", "deleted"}) {
			t.Errorf("keys = %v, want [roles deleted]", got)
		}
		// Sorting by a field that is not shown still sorts.
		r = c.get("/api/users?fields=id&sort=email&order=desc")
		if !strings.HasPrefix(string(r.body), `{"data":[{"id":3},{"id":2},{"id":1}]`) {
			t.Errorf("fields=id&sort=email&order=desc: %s", r.body)
		}
	})
}

func mustFirst(t *testing.T, body []byte) []byte {
	t.Helper()
	var env struct{ Data []json.RawMessage }
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		t.Fatalf("no first record in %s (%v)", body, err)
	}
	return env.Data[0]
}
