package http_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// links parses an RFC 8288 Link header as a generic client would: rel to
// URL.
func links(tb testing.TB, r *reply) map[string]string {
	tb.Helper()
	out := map[string]string{}
	re := regexp.MustCompile(`<([^>]*)>;\s*rel="([^"]*)"`)
	for _, v := range r.Header.Values("Link") {
		for _, m := range re.FindAllStringSubmatch(v, -1) {
			out[m[2]] = m[1]
		}
	}
	return out
}

// follow returns the path and query of an absolute link of the test
// server.
func (c *client) follow(tb testing.TB, link string) string {
	tb.Helper()
	rest, ok := strings.CutPrefix(link, c.base)
	if !ok || !strings.HasPrefix(rest, "/") {
		tb.Fatalf("link %q is not an absolute URL of the server %s", link, c.base)
	}
	return rest
}

// walk follows rel links from path to the end of the list and returns the
// ids of every page, in the order read (for prev, each page's own order).
// Each of between, if any, is called after every page, before the next is
// read.
func (c *client) walk(tb testing.TB, path, rel string, between ...func()) [][]int64 {
	tb.Helper()
	var pages [][]int64
	for range 1000 {
		r := c.get(path)
		recs, _ := r.list(tb)
		var ids []int64
		for _, rec := range recs {
			ids = append(ids, idOf(tb, rec))
		}
		pages = append(pages, ids)
		next, ok := links(tb, r)[rel]
		if !ok {
			return pages
		}
		for _, f := range between {
			f()
		}
		path = c.follow(tb, next)
	}
	tb.Fatalf("walk from %s: no end after 1000 pages", path)
	return nil
}

// TestCursorWalk walks the users by their next and prev links, in every
// sort and order, with and without a search and a filter, while users are
// inserted and deleted between its pages: every user that exists throughout
// the walk is seen exactly once and in the order the database sorts them,
// and no user is seen twice.
func TestCursorWalk(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		rng := rand.New(rand.NewPCG(1, 2))
		var stable []int64
		for i := range 40 {
			extra := ""
			if i%3 != 0 { // a third have no age: nulls in the sort
				extra = fmt.Sprintf(`,"age":%d`, rng.IntN(5)) // many ties
			}
			name := []string{"Ann", "Bob", "Émile", "ann", "Zoë"}[rng.IntN(5)]
			stable = append(stable, c.mustUser(name+" walker", fmt.Sprintf("walk%02d@example.com", i), extra))
		}
		for _, sort := range []string{"id", "name", "email", "age", "created_at"} {
			for _, order := range []string{"asc", "desc"} {
				for _, extra := range []string{"", "&q=walker", "&role=user", "&total=false"} {
					query := "?limit=7&sort=" + sort + "&order=" + order + extra
					t.Run(strings.TrimPrefix(query, "?"), func(t *testing.T) {
						want := slices.Concat(c.walk(t, "/api/users?page=1&limit=100&sort="+sort+"&order="+order, "next")...)
						churn := c.churner(t)
						forward := c.walk(t, "/api/users"+query, "next", churn)
						checkWalk(t, "forward", slices.Concat(forward...), want, stable)
						// prev from the last page reads the same list back.
						var back []int64
						for _, p := range c.walk(t, c.lastPagePath(t, "/api/users"+query), "prev", churn) {
							back = append(slices.Clone(p), back...)
						}
						checkWalk(t, "backward", back, want, stable)
					})
				}
			}
		}
	})
}

// lastPagePath follows next links from path and returns the path of the
// last page.
func (c *client) lastPagePath(tb testing.TB, path string) string {
	tb.Helper()
	for range 1000 {
		next, ok := links(tb, c.get(path))["next"]
		if !ok {
			return path
		}
		path = c.follow(tb, next)
	}
	tb.Fatalf("no last page")
	return ""
}

// checkWalk checks the ids a walk saw: none twice, every stable one, and
// the stable ones in the order of want.
func checkWalk(tb testing.TB, what string, got, want, stable []int64) {
	tb.Helper()
	seen := map[int64]bool{}
	for _, id := range got {
		if seen[id] {
			tb.Errorf("%s: user %d seen twice in %v", what, id, got)
		}
		seen[id] = true
	}
	isStable := map[int64]bool{}
	for _, id := range stable {
		isStable[id] = true
	}
	var gotStable, wantStable []int64
	for _, id := range got {
		if isStable[id] {
			gotStable = append(gotStable, id)
		}
	}
	for _, id := range want {
		if isStable[id] {
			wantStable = append(wantStable, id)
		}
	}
	if !slices.Equal(gotStable, wantStable) {
		tb.Errorf("%s: users that exist throughout, in walk order = %v, want %v", what, gotStable, wantStable)
	}
}

// churned numbers the users churners insert.
var churned atomic.Int64

// churner returns what changes the users under a walk: each call inserts a
// user that every walk's search and filter match, among the walkers in any
// sort (ties included), and, once five of its users exist, deletes the
// oldest of them: a change between every two pages, deterministic and
// bounded by the walk's pages (a goroutine that inserted and deleted as fast
// as it could for the whole walk made hundreds of synchronous commits per
// subtest, and this test the longest of CI under load).
func (c *client) churner(tb testing.TB) func() {
	var made []int64
	return func() {
		tb.Helper()
		n := churned.Add(1) // unique across churners: each leaves five users behind
		u, err := c.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
			"name": "Ann churn walker", "email": fmt.Sprintf("churn%d@example.com", n), "age": n % 5})
		if err != nil {
			tb.Fatalf("churn: create: %v", err)
		}
		made = append(made, u.ID())
		if len(made) > 5 {
			if err := c.service.Delete(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, resourceapi.Address{ID: made[0]}, nil); err != nil {
				tb.Fatalf("churn: delete: %v", err)
			}
			made = made[1:]
		}
	}
}

// TestCursorRefused: a cursor that this server did not make for this list,
// or that was altered, or that is combined with what it cannot be, is a
// 400 naming the parameter, never a page.
func TestCursorRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		for i := range 5 {
			c.mustUser("Ann", fmt.Sprintf("ann%d@example.com", i))
		}
		_, pag := c.get("/api/users?limit=2&sort=name").list(t)
		good := pag["next_cursor"].(string)
		if r := c.get("/api/users?limit=2&sort=name&after=" + good); r.StatusCode != http.StatusOK {
			t.Fatalf("good cursor: %d %s", r.StatusCode, r.body)
		}
		foreign := rhttp.NewCursors([]byte("another server's key, 32 bytes!")).Encode(resourceapi.Users,
			resourceapi.Cursor{Sort: "name", Value: "Ann", ID: 2})
		otherList := rhttp.NewCursors(nil).Encode(resourceapi.Products, resourceapi.Cursor{Sort: "name", Value: "Ann", ID: 2})
		tampered := []byte(good)
		tampered[len(tampered)/2] ^= 1 // still base64url
		if tampered[len(tampered)/2] == '-' || tampered[len(tampered)/2] == '_' {
			tampered[len(tampered)/2] = 'A'
		}
		for _, tt := range []struct{ query, param string }{
			{"after=" + string(tampered), "after"},
			{"before=" + string(tampered), "before"},
			{"after=" + foreign, "after"},
			{"after=" + otherList, "after"},
			{"after=" + good[:len(good)-2], "after"},
			{"after=" + good + "A", "after"},
			{"after=%20", "after"},
			{"after=" + strings.Repeat("A", 3000), "after"},
			{"after=" + good + "&page=2", "after"},
			{"after=" + good + "&before=" + good, "before"},
			{"after=" + good + "&after=" + good, "after"},
			{"total=maybe", "total"},
		} {
			query := "limit=2&sort=name&" + tt.query
			details := c.lenient().get("/api/users?"+query).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			if got := detailFields(details); !slices.Equal(got, []string{tt.param}) {
				t.Errorf("%.80s: details %v, want one for %s", query, details, tt.param)
			}
		}
		// The same cursor in another sort or order is refused as well.
		for _, query := range []string{"limit=2&sort=email&after=" + good, "limit=2&sort=name&order=desc&after=" + good, "limit=2&after=" + good} {
			details := c.get("/api/users?"+query).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			if got := detailFields(details); !slices.Equal(got, []string{"after"}) {
				t.Errorf("%.80s: details %v, want one for after", query, details)
			}
		}
	})
}

// TestCursorSharedKey: servers with the same key (instances of one
// database) accept each other's cursors; with another key, they do not.
func TestCursorSharedKey(t *testing.T) {
	store := mustSQLite(t, newClock().Now)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := mustServer(t, store, func(cfg *rhttp.Config) { cfg.CursorKey = key })
	for i := range 3 {
		a.mustUser("Ann", fmt.Sprintf("ann%d@example.com", i))
	}
	_, pag := a.get("/api/users?limit=2").list(t)
	tok := pag["next_cursor"].(string)
	b := mustServerOn(t, store, "", func(cfg *rhttp.Config) { cfg.CursorKey = key })
	b = b.as(a.auth[1])
	if recs, _ := b.get("/api/users?limit=2&after=" + tok).list(t); len(recs) != 2 {
		t.Errorf("other instance, same key: %d records, want 2", len(recs))
	}
	other := mustServerOn(t, store, "", func(cfg *rhttp.Config) { cfg.CursorKey = []byte("another key of thirty-two bytes!") }).as(a.auth[1])
	other.get("/api/users?limit=2&after="+tok).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
}

// TestLinkHeaders: a page-numbered list links first, prev, next and last by
// page; a list read by cursor links by cursor; both keep the request's
// other parameters.
func TestLinkHeaders(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		for i := range 9 {
			c.mustUser("Ann", fmt.Sprintf("ann%d@example.com", i))
		}
		// 10 users with the admin.
		r := c.get("/api/users?page=2&limit=3&sort=email&order=desc&q=example")
		l := links(t, r)
		for rel, page := range map[string]string{"first": "1", "prev": "1", "next": "3", "last": "4"} {
			u, err := url.Parse(l[rel])
			if err != nil || u.Query().Get("page") != page || u.Query().Get("sort") != "email" ||
				u.Query().Get("order") != "desc" || u.Query().Get("q") != "example" || u.Query().Get("limit") != "3" {
				t.Errorf("rel=%s: %q, want page %s with the other parameters", rel, l[rel], page)
			}
		}
		r = c.get("/api/users?limit=3&fields=id")
		l = links(t, r)
		if _, ok := l["prev"]; ok {
			t.Errorf("first page has prev: %v", l)
		}
		if l["first"] != c.base+"/api/users?fields=id&limit=3" {
			t.Errorf("first = %q", l["first"])
		}
		u, _ := url.Parse(l["next"])
		if u.Query().Get("after") == "" || u.Query().Get("fields") != "id" {
			t.Errorf("next = %q, want after= and fields", l["next"])
		}
		pages := c.walk(t, "/api/users?limit=3", "next")
		if n := len(slices.Concat(pages...)); n != 10 || len(pages) != 4 {
			t.Errorf("walk: %d pages, %d users; want 4 and 10", len(pages), n)
		}
	})
}

// TestLinkQueries: each link is the request's URL with its position set,
// its query exactly what url.Values.Encode makes of the request's other
// parameters and the position: keys sorted, every value kept and escaped,
// whatever the parameters around page, after and before.
func TestLinkQueries(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		for i := range 5 {
			c.mustUser(fmt.Sprintf("Linked %d", i), fmt.Sprintf("linked%d@example.com", i))
		}
		c = c.lenient() // parameters the API does not define are kept in links
		for _, query := range []string{
			"page=2&limit=1&q=Linked&zz=%C3%A9+%26x&aaa=1&aaa=2&b%20c=%3D",
			"limit=2&sort=name&order=desc&pagination=x&afte=1&before_=2&fields=id,name",
			"limit=1&total=false",
		} {
			r := c.get("/api/users?" + query)
			r.mustStatus(t, http.StatusOK)
			params, err := url.ParseQuery(query)
			if err != nil {
				t.Fatal(err)
			}
			_, paged := params["page"]
			for rel, link := range links(t, r) {
				u, err := url.Parse(link)
				if err != nil {
					t.Fatalf("%s: %s link %q: %v", query, rel, link, err)
				}
				got := u.Query()
				want := url.Values{}
				for k, vs := range params {
					if k != "page" && k != "after" && k != "before" {
						want[k] = vs
					}
				}
				for _, name := range []string{"page", "after", "before"} {
					if v, ok := got[name]; ok {
						want[name] = v
					}
				}
				if u.RawQuery != want.Encode() && !(u.RawQuery == "" && len(want) == 0) {
					t.Errorf("%s: %s link query %q, want %q", query, rel, u.RawQuery, want.Encode())
				}
				if _, hasPage := got["page"]; paged != hasPage && rel != "first" {
					t.Errorf("%s: %s link %q: page= %v, want %v", query, rel, link, hasPage, paged)
				}
			}
		}
	})
}
