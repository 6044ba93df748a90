package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/internal/graphgen"
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
	// recIDs are the ids of records of every other declared resource
	// that the documents read, by resource name.
	recIDs map[string][]string
	n      int // numbers the examples
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
	odd := s.mustAccount(`Odd "q" back\\slash ünï 😀 \u2028`, "odd@test.example", resourceapi.RoleUser)
	rig.callers = []string{s.admin, owner, other, editor, "", "not-a-key", odd}
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
	rig.recIDs = map[string][]string{}
	for _, res := range fastResources() {
		rig.recIDs[res.Name] = rig.seed(tb, s, res)
	}
	return rig
}

// fastResources are the declared resources of generated types (all but
// users and posts, whose documents are fastCases and fastPostCases).
func fastResources() []*resourceapi.Resource {
	var out []*resourceapi.Resource
	for _, res := range resourceapi.Declared() {
		if res != resourceapi.Users && res != resourceapi.Posts {
			out = append(out, res)
		}
	}
	return out
}

// oddText is a string that needs escaping in every way JSON has.
const oddText = "Quote \"q\" back\\slash\ttab\nline\x01\x1f \u2028 ünï 😀 <b>&amp;"

// seed creates records of res for the differential tests and returns
// their ids: one of the owner's, one of another user's, one whose text
// fields need escaping (or, where a field refuses that, need it in one
// line), one without its nullable fields, a deleted one, and ids of none.
func (rig *fastRig) seed(tb testing.TB, s *server, res *resourceapi.Resource) []string {
	tb.Helper()
	owner, other := s.ids["owner@test.example"], s.ids["other@test.example"]
	var ids []string
	create := func(rec resourceapi.Record) int64 {
		got, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), res, 0, rec)
		if err != nil {
			return 0
		}
		return got.ID()
	}
	for _, who := range []int64{owner, other} {
		id := create(rig.example(tb, s, res, who))
		if id == 0 {
			tb.Fatalf("create a %s for the fast path's tests", res.Singular)
		}
		ids = append(ids, itoa(id))
	}
	for _, text := range []string{oddText, "Quote \"q\" back\\slash ünï 😀 <b>&amp; \u2028"} {
		rec := rig.example(tb, s, res, owner)
		for _, f := range res.Fields {
			if f.Type == resourceapi.TypeString && graphgen.Writable(&f) && graphgen.Shown(&f) && f.References == "" && len(f.Enum) == 0 {
				rec[f.Name] = text
			}
		}
		if id := create(rec); id != 0 {
			ids = append(ids, itoa(id))
			break
		}
	}
	rec := rig.example(tb, s, res, owner)
	for _, f := range res.Fields {
		if f.Nullable && !f.Required {
			delete(rec, f.Name)
		}
	}
	if id := create(rec); id != 0 {
		ids = append(ids, itoa(id))
	}
	gone := create(rig.example(tb, s, res, other))
	if err := s.service.Delete(context.Background(), resourceapi.SystemCaller(), res, resourceapi.Address{ID: gone}, nil); err != nil {
		tb.Fatalf("delete a %s: %v", res.Singular, err)
	}
	return append(ids, itoa(gone), "999999", "0", "abc", "", "99999999999999999999999")
}

// example returns a valid create of res owned by owner, with the records
// it refers to created for it.
func (rig *fastRig) example(tb testing.TB, s *server, res *resourceapi.Resource, owner int64) resourceapi.Record {
	tb.Helper()
	rig.n++
	rec := res.Example(rig.n)
	target := func(ref *resourceapi.Resource) int64 {
		if ref == resourceapi.Users {
			return owner
		}
		got, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), ref, 0, rig.example(tb, s, ref, owner))
		if err != nil {
			tb.Fatalf("create a %s for a %s: %v", ref.Singular, res.Singular, err)
		}
		return got.ID()
	}
	for _, f := range res.Fields {
		switch {
		case f.Name == res.Access.Owner && f.Name != "id" && !f.ReadOnly:
			rec[f.Name] = owner
		case f.References != "" && f.Required:
			rec[f.Name] = target(resourceapi.ResourceNamed(f.References))
		}
		items, _ := rec[f.Name].([]resourceapi.Record)
		for _, item := range items {
			for _, sub := range f.Items.Fields {
				if sub.References != "" {
					item[sub.Name] = target(resourceapi.ResourceNamed(sub.References))
				}
			}
		}
	}
	return rec
}

// resourceCases are the documents of the differential tests for the
// record of res with id, made from its declaration: its one-record field
// with its scalar fields, and shapes near it that gqlgen answers.
func resourceCases(res *resourceapi.Resource, id string) []fastCase {
	one := graphgen.OneField(res)
	var scalars []string
	other := "" // a field that is not a scalar
	for _, f := range res.Fields {
		if !graphgen.Shown(&f) {
			continue
		}
		if name := graphgen.RelationName(&f); name != "" && other == "" {
			other = name + " { __typename }"
		}
		if f.Type == resourceapi.TypeItems || f.Type == resourceapi.TypeStrings {
			if other == "" {
				other = graphgen.Camel(f.Name)
				if f.Type == resourceapi.TypeItems {
					other += " { __typename }"
				}
			}
			continue
		}
		scalars = append(scalars, graphgen.Camel(f.Name))
	}
	all := strings.Join(scalars, " ")
	first, last := scalars[0], scalars[len(scalars)-1]
	q := func(query string, fast int) fastCase {
		return fastCase{query: strings.ReplaceAll(query, "ONE", one), vars: map[string]any{"id": id}, fast: fast}
	}
	lit, _ := json.Marshal(id)
	cases := []fastCase{
		q(`query($id: ID!) { ONE(id: $id) { `+all+` __typename } }`, 1),
		q(`query($id: ID!) { x: ONE(id: $id) { t: __typename l: `+last+` f: `+first+` } }`, 1),
		{query: `query($id: ID!) { ` + one + `(id: $id) { ` + last + ` } }`, vars: map[string]any{"id": id}, get: true, fast: 1},
		{query: `{ ` + one + `(id: ` + string(lit) + `) { ` + first + ` ` + last + ` } }`, fast: 1},
		q(`query($id: ID!) { ONE(id: $id) { `+first+` `+first+` } }`, 0),
		q(`query($id: ID!) { ONE(id: $id) { ...F } } fragment F on `+graphgen.TypeName(res)+` { `+first+` }`, 0),
		q(`query($id: ID!) { ONE(id: $id) { `+first+` @include(if: true) } }`, 0),
		q(`query($id: ID!) { ONE(id: $id) { `+first+` } me { name } }`, 0),
		q(`query($id: ID!) { ONE(id: $id) { name email title nope } }`, 0),
		{query: `query($id: ID!) { ` + one + `(id: $id) { ` + last + ` } }`, vars: map[string]any{"id": json.Number("2")}, fast: 1},
		{query: `query($id: ID!) { ` + one + `(id: $id) { ` + last + ` } }`, vars: map[string]any{"id": false}, fast: 0},
	}
	if other != "" {
		cases = append(cases, q(`query($id: ID!) { ONE(id: $id) { `+first+` `+other+` } }`, 0))
	}
	return cases
}

// fastMeCases are the documents of the differential tests for me.
func fastMeCases() []fastCase {
	return []fastCase{
		{query: `{ me { name email } }`, fast: 1},
		{query: `{ me { name email } }`, get: true, fast: 1},
		{query: `query Named { me { id name email createdAt __typename } }`, fast: 1},
		{query: `{ m: me { t: __typename e: email i: id } }`, fast: 1},
		{query: `{ me { name name } }`, fast: 0},
		{query: `{ me { name posts { title } } }`, fast: 0},
		{query: `{ me { ...F } } fragment F on User { name }`, fast: 0},
		{query: `{ me { name @include(if: true) } }`, fast: 0},
		{query: `query($x: Boolean!) { me { name @skip(if: $x) } }`, vars: map[string]any{"x": false}, fast: 0},
		{query: `{ me(id: "1") { name } }`, fast: 0},
		{query: `{ me { name } again: me { email } }`, fast: 0},
		{query: `{ me { title } }`, fast: 0},
	}
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
		{query: `query A($id: ID!) { user(id: $id) { email } } query B { me { name } }`, op: "B", vars: map[string]any{"id": id}, fast: 1},
		{query: `query A($id: ID!) { user(id: $id) { email } } query B { me { name } }`, vars: map[string]any{"id": id}, fast: 0},
		{query: `{ user(id: ` + string(lit) + `) { name email } }`, fast: 1},
		{query: `{ user(id: ` + string(lit) + `) { id } }`, get: true, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": json.Number("7")}, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": true}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { name } }`, vars: map[string]any{"id": 2.5}, fast: -1},
		{query: `query($id: ID!) { user(id: $id) { name } }`, fast: 0},
		{query: `{ user(id: 3) { name } }`, fast: 1},
		{query: `{ user(id: 3.5) { name } }`, fast: 0},
		// A document the fast path answered has a plan (plan.go): the
		// variables it does not coerce itself go to gqlgen, which coerces
		// or refuses them, and undeclared ones are ignored.
		q(`query($id: ID!) { user(id: $id) { email } }`, 1),
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"id": id, "other": "x"}, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"ID": id}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"id": nil}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"id": []any{id}}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"id": map[string]any{"id": id}}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{"id": json.Number("3")}, fast: 1},
		{query: `query($id: ID!) { user(id: $id) { email } }`, vars: map[string]any{}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, op: "Other", vars: map[string]any{"id": id}, fast: 0},
		{query: `query($id: ID!) { user(id: $id) { email } }`, get: true, vars: map[string]any{"id": id}, fast: 1},
		{query: `{ user(id: 4) { email } }`, fast: 1},
		{query: `{ user(id: 4) { email } }`, vars: map[string]any{"id": id}, fast: 1},
		{query: `{ user(id: 4) { email } }`, vars: map[string]any{}, fast: 1},
		{query: `query($id: ID) { user(id: $id) { email } }`, fast: 0},
		{query: `query($id: ID! = "3") { user(id: $id) { email } }`, fast: 1},
		{query: `query($id: ID! = "3") { user(id: $id) { email } }`, vars: map[string]any{"id": id}, fast: 1},
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
		limit := graph.SetMaxResponseBytes(s.gql, 0)
		graph.SetMaxResponseBytes(s.gql, limit)
		tb.Fatalf("fast path (server %d, limit %d, key %q):\n%s\n--- gqlgen:\n%s", si, limit, key, got, want)
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
			if got, want := graph.FastRoots(rig.servers[0].gql), fastRootNames(); !slices.Equal(got, want) {
				t.Fatalf("fast roots %v, want %v", got, want)
			}
			fastN, total := 0, 0
			// run sends c as each caller to each server whose limit it is
			// sent with: limited, the callers up to index limited, and
			// only the cases that limit says (nil: every fast one).
			run := func(cases []fastCase, limited int, withLimits func(ci int) bool) {
				for ci, c := range cases {
					for ki, key := range rig.callers {
						for si := range rig.servers {
							if si > 0 && (ki > limited || c.fast == 0 || (withLimits != nil && !withLimits(ci))) {
								continue
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
								t.Fatalf("%s %v as caller %d: fast path %v, want %d", c.query, c.vars, ki, fast, c.fast)
							}
						}
					}
				}
			}
			for _, id := range rig.ids {
				run(fastCases(id), 1, nil) // the limits with the admin and the owner
			}
			for _, id := range rig.postIDs {
				run(fastPostCases(id), 2, nil) // and another user
			}
			run(fastMeCases(), len(rig.callers), nil)
			for _, res := range fastResources() {
				for _, id := range rig.recIDs[res.Name] {
					// The limits with the admin, the owner and another
					// user, for every field and for aliases.
					run(resourceCases(res, id), 2, func(ci int) bool { return ci < 2 })
				}
			}
			// Every response limit from 1 byte to past the whole answer,
			// for the documents of every field and of aliases of each
			// record the admin reads, and for me: a charge a byte off
			// shows at one of them.
			sweep := func(c fastCase, key string) {
				s := rig.servers[0]
				n := 2*len(c.send(t, s.handler, key, "")) + 16
				defer graph.SetMaxResponseBytes(s.gql, 0)
				for limit := 1; limit <= n; limit++ {
					graph.SetMaxResponseBytes(s.gql, int64(limit))
					if !rig.compare(t, 0, key, "", func(h http.Handler) string { return c.send(t, h, key, "") }) {
						t.Fatalf("%s %v: not on the fast path", c.query, c.vars)
					}
					total++
					fastN++
				}
			}
			for _, res := range fastResources() {
				for _, id := range rig.recIDs[res.Name][:4] {
					for _, c := range resourceCases(res, id)[:2] {
						sweep(c, rig.callers[0])
					}
				}
			}
			for _, c := range fastMeCases()[2:4] {
				sweep(c, rig.callers[6])
			}
			if n := graph.FastPlanned(rig.servers[0].gql); n == 0 {
				t.Errorf("no request was answered by a plan")
			}
			t.Logf("%d requests, %d on the fast path, %d of them by a plan on the first server", total, fastN, graph.FastPlanned(rig.servers[0].gql))
		})
	}
}

// fastRootNames are the fields of Query the fast path must answer: every
// declared resource's one-record field, and me.
func fastRootNames() []string {
	names := []string{"me"}
	for _, res := range resourceapi.Declared() {
		names = append(names, graphgen.OneField(res))
	}
	sort.Strings(names)
	return names
}

// FuzzFastPath sends a document with variables through gqlgen and the fast
// path and compares the answers (TestFastPathAsGqlgen's comparison). Its
// seeds, which the ordinary tests run, are that test's documents.
func FuzzFastPath(f *testing.F) {
	if testing.Short() {
		f.Skip("seeds a database")
	}
	seeds := append(fastCases("3"), fastPostCases("1")...)
	seeds = append(seeds, fastMeCases()...)
	for _, res := range fastResources() {
		seeds = append(seeds, resourceCases(res, "1")...)
	}
	for _, c := range seeds {
		vars, _ := json.Marshal(c.vars)
		f.Add(c.query, string(vars), uint8(0), uint8(0))
	}
	f.Add(`{ post(id: "2") { title content } }`, `null`, uint8(2), uint8(5))
	f.Add(`{ user(id: "2") { name email } }`, `null`, uint8(4), uint8(3))
	f.Add(`query($id: ID!) { user(id: $id) { createdAt } }`, `{"id":"1"}`, uint8(2), uint8(7))
	f.Add(`query($id: ID!) { user(id: $id) { id } }`, `{"id":"9"}`, uint8(5), uint8(1))
	f.Add(`{ me { name email } }`, `null`, uint8(6), uint8(9))
	f.Add(`{ me { id } }`, `null`, uint8(4), uint8(0))
	f.Add(`{ order(id: "2") { id totalCents status } }`, `null`, uint8(2), uint8(6))
	f.Add(`{ apiKey(id: "3") { key prefix expiresAt } }`, `null`, uint8(1), uint8(0))
	f.Add(`query($id: ID!) { oauthClient(id: $id) { clientId public } }`, `{"id":"1"}`, uint8(0), uint8(4))
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

// TestFastResolversSeeNoOperation checks that the resolver of a fast root
// runs in a context without gqlgen's operation, response or field
// contexts, whether its operation was prepared by gqlgen or by a plan: a
// plan's operation context leaves out the variables and the statistics'
// extensions, which nothing the fast path runs may read (plan.go).
func TestFastResolversSeeNoOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a database")
	}
	s := servedSQLite(t)
	var seen []string
	watch := func(ctx context.Context) {
		var what []string
		if graphql.HasOperationContext(ctx) {
			what = append(what, "operation")
		}
		if graphql.GetFieldContext(ctx) != nil {
			what = append(what, "field")
		}
		if graphql.GetPath(ctx) != nil {
			what = append(what, "path")
		}
		seen = append(seen, strings.Join(what, "+"))
	}
	graph.WatchFastRoot(s.gql, "user", watch)
	graph.WatchFastRoot(s.gql, "me", watch)
	planned := graph.FastPlanned(s.gql)
	for _, body := range []string{
		`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"7"}}`,
		`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"8"}}`,
		`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"9","x":1}}`,
		`{"query":"{ me { name } }"}`,
		`{"query":"{ me { name } }"}`,
	} {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", s.admin)
		w := httptest.NewRecorder()
		s.handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"errors"`) {
			t.Fatalf("%s: %d %s", body, w.Code, w.Body)
		}
	}
	if want := []string{"", "", "", "", ""}; !slices.Equal(seen, want) {
		t.Errorf("the resolvers saw %q, want %q", seen, want)
	}
	if got := graph.FastPlanned(s.gql) - planned; got != 2 {
		t.Errorf("%d operations answered by a plan, want 2", got)
	}
}
