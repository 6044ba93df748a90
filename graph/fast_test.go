package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
)

// fastCase is a request of the differential tests: a document, its
// variables, and whether the fast path answers it (-1: either).
type fastCase struct {
	query, op string
	vars      map[string]any
	get       bool // sent with GET
	fast      int
}

// fastRig is a store served by several handlers that differ in their
// response limit, with the callers of the differential tests.
type fastRig struct {
	servers []*server
	obs     []*observed
	callers []string // API keys; "" anonymous
	ids     []string // ids of users the documents read
	postIDs []string // ids of posts the documents read
}

// observed is what a server's Observe and Trace were told.
type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) add(s string) {
	o.mu.Lock()
	o.events = append(o.events, s)
	o.mu.Unlock()
}

func (o *observed) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.events
	o.events = nil
	return e
}

// fastLimits are the servers' MaxResponseBytes: the default, and limits
// that stop the response at every field of the documents' users.
var fastLimits = []int64{0, 1, 10, 14, 18, 22, 26, 30, 34, 38, 44, 50, 58, 66, 76, 90, 110, 140}

func newFastRig(tb testing.TB, st store) *fastRig {
	tb.Helper()
	rig := &fastRig{}
	for i, limit := range fastLimits {
		o := &observed{}
		opt := func(g *graph.Options, c *rhttp.Config) {
			g.MaxResponseBytes = limit
			g.Observe = func(op, code string, _ time.Duration) { o.add("observe " + op + " " + code) }
			g.Trace = func(ctx context.Context, op, name string) (context.Context, func(string)) {
				o.add("start " + op + " " + name)
				return ctx, func(code string) { o.add("end " + code) }
			}
		}
		var s *server
		if i == 0 {
			s = mustServer(tb, st, opt)
		} else {
			s = mustServerWith(tb, st, opt)
			s.admin, s.ids = rig.servers[0].admin, rig.servers[0].ids
		}
		rig.servers = append(rig.servers, s)
		rig.obs = append(rig.obs, o)
	}
	s := rig.servers[0]
	owner := s.mustAccount("Owner Person", "owner@test.example")
	other := s.mustAccount("Other Person", "other@test.example", resourceapi.RoleUser)
	editor := s.mustAccount("Editor Person", "editor@test.example", resourceapi.RoleEditor)
	rig.callers = []string{s.admin, owner, other, editor, "", "not-a-key"}
	rig.ids = []string{itoa(s.ids["admin@test.example"]), itoa(s.ids["owner@test.example"]), itoa(s.ids["other@test.example"])}
	for _, name := range []string{`Quote "q" back\slash`, "tab\there", "ünïcödé 😀 <b>&amp;", "line\nbreak", "nul\x01\x1f", "\u2028sep"} {
		u, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, 0,
			resourceapi.Record{"name": name, "email": fmt.Sprintf("odd%d@test.example", len(rig.ids))})
		if err == nil {
			rig.ids = append(rig.ids, itoa(u.ID()))
		}
	}
	gone := s.mustUser("Gone Person", "gone@test.example")
	if err := s.service.Delete(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, resourceapi.Address{ID: gone}, nil); err != nil {
		tb.Fatal(err)
	}
	rig.ids = append(rig.ids, itoa(gone), "999999", "0", "-3", "abc", "99999999999999999999999", "")
	for _, p := range []struct {
		author         string
		title, content string
	}{
		{"admin@test.example", "The admin's", "plain"},
		{"owner@test.example", "The owner's", "plain"},
		{"other@test.example", `Quote "q" back\slash`, "tab\there\nline\x01\u2028 ünï 😀 <b>"},
		{"owner@test.example", "", "empty title"},
	} {
		rec, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Posts, 0,
			resourceapi.Record{"title": p.title, "content": p.content, "author_id": s.ids[p.author]})
		if err == nil {
			rig.postIDs = append(rig.postIDs, itoa(rec.ID()))
		}
	}
	dropped := s.mustPost(s.ids["owner@test.example"], "Dropped")
	if err := s.service.Delete(context.Background(), resourceapi.SystemCaller(), resourceapi.Posts, resourceapi.Address{ID: dropped}, nil); err != nil {
		tb.Fatal(err)
	}
	rig.postIDs = append(rig.postIDs, itoa(dropped), "999999", "0", "abc", "")
	return rig
}

// fastCases are the documents of the differential tests for id.
func fastCases(id string) []fastCase {
	q := func(query string, fast int) fastCase {
		return fastCase{query: query, vars: map[string]any{"id": id}, fast: fast}
	}
	lit, _ := json.Marshal(id)
	return []fastCase{
		q(`query($id: ID!) { user(id: $id) { name email } }`, 1),
		{query: `query($id: ID!) { user(id: $id) { name email } }`, vars: map[string]any{"id": id}, get: true, fast: 1},
		q(`query Named($id: ID!) { user(id: $id) { id name email createdAt __typename } }`, 1),
		q(`query($id: ID!) { u: user(id: $id) { t: __typename e: email n: name i: id } }`, 1),
		q(`query($id: ID!) { user(id: $id) { name name } }`, 0),
		q(`query($id: ID!) { user(id: $id) { name posts { title } } }`, 0),
		q(`query($id: ID!) { user(id: $id) { ...F } } fragment F on User { name email }`, 0),
		q(`query($id: ID!) { user(id: $id) { name @include(if: true) email } }`, 0),
		q(`query($id: ID!) { user(id: $id) { name } me { name } }`, 0),
		q(`query($id: ID!) { __typename user(id: $id) { name } }`, 0),
		q(`query($id: ID!, $x: Boolean = true) { user(id: $id) { name } }`, 0), // $x unused: invalid
		q(`query($id: ID!) { user(id: $id) { nope } }`, 0),
		q(`query($id: ID!) { user(id: $id) }`, 0),
		q(`query($id: ID!) { user(id: $id) { name email `, 0),
		q(`query($id: String!) { user(id: $id) { name } }`, 0),
		{query: `query A($id: ID!) { user(id: $id) { email } } query B { me { name } }`, op: "A", vars: map[string]any{"id": id}, fast: 1},
		{query: `query A($id: ID!) { user(id: $id) { email } } query B { me { name } }`, op: "B", vars: map[string]any{"id": id}, fast: 0},
		{query: `query A($id: ID!) { user(id: $id) { email } } query B { me { name } }`, vars: map[string]any{"id": id}, fast: 0},
		{query: `{ user(id: ` + string(lit) + `) { name email } }`, fast: 1},
		{query: `{ user(id: ` + string(lit) + `) { id } }`, get: true, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": json.Number("7")}, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": true}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": 2.5}, fast: -1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, fast: 0},
		{query: `{ user(id: 3) { name } }`, fast: 1},
		{query: `{ user(id: 3.5) { name } }`, fast: 0},
	}
}

// fastPostCases are the documents of the differential tests for the post
// of id.
func fastPostCases(id string) []fastCase {
	q := func(query string, fast int) fastCase {
		return fastCase{query: query, vars: map[string]any{"id": id}, fast: fast}
	}
	lit, _ := json.Marshal(id)
	return []fastCase{
		q(`query($id: ID!) { post(id: $id) { title content } }`, 1),
		{query: `query($id: ID!) { post(id: $id) { title } }`, vars: map[string]any{"id": id}, get: true, fast: 1},
		q(`query Named($id: ID!) { post(id: $id) { id title content createdAt __typename } }`, 1),
		q(`query($id: ID!) { p: post(id: $id) { t: __typename c: content i: id } }`, 1),
		q(`query($id: ID!) { post(id: $id) { title title } }`, 0),
		q(`query($id: ID!) { post(id: $id) { title author { name } } }`, 0),
		q(`query($id: ID!) { post(id: $id) { ...F } } fragment F on Post { title }`, 0),
		q(`query($id: ID!) { post(id: $id) { title @skip(if: false) } }`, 0),
		q(`query($id: ID!) { post(id: $id) { title } user(id: $id) { name } }`, 0),
		q(`query($id: ID!) { post(id: $id) { name } }`, 0),
		q(`query($id: ID!) { user(id: $id) { title } }`, 0),
		{query: `{ post(id: ` + string(lit) + `) { title content } }`, fast: 1},
		{query: `query($id: ID!) { post(id: $id) { title } }`, vars: map[string]any{"id": json.Number("2")}, fast: 1},
		{query: `query($id: ID!) { post(id: $id) { title } }`, vars: map[string]any{"id": false}, fast: 0},
	}
}

// send sends c to h as key's holder and returns the status, the headers
// that describe the body and the body.
func (c fastCase) send(tb testing.TB, h http.Handler, key, accept string) string {
	var req *http.Request
	if c.get {
		v := url.Values{"query": {c.query}}
		if c.op != "" {
			v.Set("operationName", c.op)
		}
		if c.vars != nil {
			b, _ := json.Marshal(c.vars)
			v.Set("variables", string(b))
		}
		req = httptest.NewRequest(http.MethodGet, "/graphql?"+v.Encode(), nil)
	} else {
		env := map[string]any{"query": c.query}
		if c.op != "" {
			env["operationName"] = c.op
		}
		if c.vars != nil {
			env["variables"] = c.vars
		}
		b, _ := json.Marshal(env)
		req = httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
	}
	return sendRaw(h, req, key, accept)
}

func sendRaw(h http.Handler, req *http.Request, key, accept string) string {
	req.RemoteAddr = "127.0.0.1:40000"
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	hd := w.Header()
	return fmt.Sprintf("%d\nContent-Type: %s\nCache-Control: %s\nVary: %s\nAllow: %s\n%s",
		w.Code, hd.Values("Content-Type"), hd.Values("Cache-Control"), hd.Values("Vary"), hd.Values("Allow"), w.Body.Bytes())
}

// compare sends one request through gqlgen, the fast path, and gqlgen
// again, and, when the fast path answered it, fails unless the three
// answers and what the observer was told are the same. It returns whether
// the fast path answered.
func (rig *fastRig) compare(tb testing.TB, si int, key, accept string, send func(h http.Handler) string) bool {
	tb.Helper()
	s, o := rig.servers[si], rig.obs[si]
	o.take()
	graph.SetFastPath(s.gql, false)
	want := send(s.handler)
	wantObs := o.take()
	graph.SetFastPath(s.gql, true)
	before := graph.FastAnswered(s.gql)
	got := send(s.handler)
	gotObs := o.take()
	fast := graph.FastAnswered(s.gql) > before
	graph.SetFastPath(s.gql, false)
	again := send(s.handler)
	o.take()
	graph.SetFastPath(s.gql, true)
	if !fast {
		// All three went through gqlgen, whose answer may vary (the
		// errors of root fields that run at once come in either order).
		return false
	}
	if want != again {
		tb.Fatalf("gqlgen answered differently twice (server %d, key %q):\n%s\n---\n%s", si, key, want, again)
	}
	if got != want {
		tb.Fatalf("fast path (server %d, limit %d, key %q):\n%s\n--- gqlgen:\n%s", si, fastLimits[si], key, got, want)
	}
	if fmt.Sprint(gotObs) != fmt.Sprint(wantObs) {
		tb.Fatalf("observed %v, gqlgen %v", gotObs, wantObs)
	}
	return fast
}

// TestFastPathAsGqlgen checks that every request the fast path answers
// gets the answer gqlgen gives it, byte for byte: for documents of its
// shape and close to it, every caller (admin, the owner, another user, an
// editor, anonymous, a refused key), ids of users that exist, are hidden,
// were never there or are malformed, names that need escaping, and
// response limits that stop the response at each of its fields.
func TestFastPathAsGqlgen(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a database")
	}
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			rig := newFastRig(t, be.open(t, nil))
			fastN, total := 0, 0
			for _, id := range rig.ids {
				for ci, c := range fastCases(id) {
					for ki, key := range rig.callers {
						for si := range rig.servers {
							if si > 0 && (ki > 1 || c.fast == 0) {
								continue // the limits with the admin and the owner
							}
							accept := ""
							if (ci+ki+si)%3 == 1 {
								accept = "application/graphql-response+json"
							}
							fast := rig.compare(t, si, key, accept, func(h http.Handler) string { return c.send(t, h, key, accept) })
							total++
							if fast {
								fastN++
							}
							if (c.fast == 1 && !fast) || (c.fast == 0 && fast) {
								t.Fatalf("%s %v: fast path %v, want %d", c.query, c.vars, fast, c.fast)
							}
						}
					}
				}
			}
			for _, id := range rig.postIDs {
				for ci, c := range fastPostCases(id) {
					for ki, key := range rig.callers {
						for si := range rig.servers {
							if si > 0 && (ki > 2 || c.fast == 0) {
								continue // the limits with the admin, the owner and another user
							}
							accept := ""
							if (ci+ki+si)%3 == 1 {
								accept = "application/graphql-response+json"
							}
							fast := rig.compare(t, si, key, accept, func(h http.Handler) string { return c.send(t, h, key, accept) })
							total++
							if fast {
								fastN++
							}
							if (c.fast == 1 && !fast) || (c.fast == 0 && fast) {
								t.Fatalf("%s %v: fast path %v, want %d", c.query, c.vars, fast, c.fast)
							}
						}
					}
				}
			}
			t.Logf("%d requests, %d on the fast path", total, fastN)
		})
	}
}

// FuzzFastPath sends a document with variables through gqlgen and the fast
// path and compares the answers (TestFastPathAsGqlgen's comparison). Its
// seeds, which the ordinary tests run, are that test's documents.
func FuzzFastPath(f *testing.F) {
	if testing.Short() {
		f.Skip("seeds a database")
	}
	for _, c := range append(fastCases("3"), fastPostCases("1")...) {
		vars, _ := json.Marshal(c.vars)
		f.Add(c.query, string(vars), uint8(0), uint8(0))
	}
	f.Add(`{ post(id: "2") { title content } }`, `null`, uint8(2), uint8(5))
	f.Add(`{ user(id: "2") { name email } }`, `null`, uint8(4), uint8(3))
	f.Add(`query($id: ID!) { user(id: $id) { createdAt } }`, `{"id":"1"}`, uint8(2), uint8(7))
	f.Add(`query($id: ID!) { user(id: $id) { id } }`, `{"id":"9"}`, uint8(5), uint8(1))
	rig := newFastRig(f, mustSQLite(f, sqlitetest.Migrated(f), nil))
	f.Fuzz(func(t *testing.T, query, vars string, who, limit uint8) {
		if !utf8.ValidString(query) || len(query) > 2000 || strings.Contains(query, "mutation") {
			return // a mutation would change what the next request reads
		}
		env := map[string]any{"query": query}
		var v map[string]any
		if d := json.NewDecoder(strings.NewReader(vars)); d.Decode(&v) == nil && v != nil {
			env["variables"] = v
		}
		body, _ := json.Marshal(env)
		key := rig.callers[int(who)%len(rig.callers)]
		si := int(limit) % len(rig.servers)
		rig.compare(t, si, key, "", func(h http.Handler) string {
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			return sendRaw(h, req, key, "")
		})
	})
}

// FuzzAppendQuoted checks that the fast path quotes strings as gqlgen's
// graphql.MarshalString does, invalid UTF-8 included.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\`, "\t\r\n\x00\x01\x1f\x7f", "ünï 😀", "\xff\xfe", "a\xc3", "\u2028\u2029", "<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		graphql.MarshalString(s).MarshalGQL(&want)
		if got := graph.AppendQuoted([]byte("x"), s); string(got) != "x"+want.String() {
			t.Fatalf("%q: %q, gqlgen %q", s, got[1:], want.Bytes())
		}
	})
}
