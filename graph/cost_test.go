package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// introspectionQuery is graphql-js's getIntrospectionQuery with every
// option on (descriptions, specifiedByURL, isRepeatable, the schema's
// description, deprecated input values, isOneOf) and ofType nested ten
// deep: the most that GraphiQL and client generators send.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    description
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name description isRepeatable locations args(includeDeprecated: true) { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL isOneOf
  fields(includeDeprecated: true) {
    name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason
  }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type {
  kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }
}`

// introspectionBomb is the document that answered 49 MB with n = 120: the
// __Type fragment F0 holds n aliased fields { type { ...F1 } } and
// ofType { ...F1 }, and F1 n aliased names.
func introspectionBomb(n int) string {
	var b strings.Builder
	b.WriteString("{ __schema { types { ...F0 } } }\nfragment F0 on __Type {")
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, " a%d: fields { type { ...F1 } }", i)
		} else {
			fmt.Fprintf(&b, " a%d: ofType { ...F1 }", i)
		}
	}
	b.WriteString(" }\nfragment F1 on __Type {")
	for i := range n {
		fmt.Fprintf(&b, " n%d: name", i)
	}
	return b.String() + " }"
}

// fragmentChain spreads n fragments into each other, each twice: 2^n
// selections from a document of a few hundred bytes.
func fragmentChain(n int) string {
	var b strings.Builder
	b.WriteString("{ ...F0 }\n")
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Query { hello }", n)
	return b.String()
}

// sideBySide spreads n fragments of one aliased hello each in one
// selection set.
func sideBySide(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " ...F%d", i)
	}
	b.WriteString(" }\n")
	for i := range n {
		fmt.Fprintf(&b, "fragment F%d on Query { h%d: hello }\n", i, i)
	}
	return b.String()
}

// wantRefusedBeforeRunning checks that r is a request error of code:
// 400 with application/graphql-response+json, no data.
func wantRefusedBeforeRunning(t *testing.T, r *response, code, message string) {
	t.Helper()
	wantError(t, r, code, "")
	if message != "" && !strings.Contains(r.Errors[0].Message, message) {
		t.Fatalf("message = %q, want it to say %q", r.Errors[0].Message, message)
	}
	if r.status != http.StatusBadRequest || len(r.Data) != 0 {
		t.Fatalf("status %d, data %s; want 400 and no data", r.status, r.Data)
	}
}

var graphqlResponse = []string{"Accept", "application/graphql-response+json"}

// Introspection answers the standard query, to anyone, and is priced: a
// document that would make it answer more than MaxIntrospection fields, or
// that holds more than MaxFields selections once its fragments are
// expanded, is refused before it runs. So are the documents whose
// validation alone would cost seconds.
func TestIntrospectionIsBounded(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))

	t.Run("the standard query", func(t *testing.T) {
		var d struct {
			Schema struct {
				Types []struct {
					Name   string
					Fields []struct{ Name string }
				}
			} `json:"__schema"`
		}
		s.mustData("", introspectionQuery, nil, &d)
		// The specification's six fields, among those of the declared
		// resources (resources.graphqls).
		found := 0
		for _, typ := range d.Schema.Types {
			for _, f := range typ.Fields {
				if typ.Name == "Query" && strings.Contains(" hello users user posts post adminData ", " "+f.Name+" ") {
					found++
				}
			}
		}
		if found != 6 {
			t.Fatalf("no Query type with the specification's 6 fields in %+v", d.Schema.Types)
		}
		r := s.send(http.MethodGet, "/graphql?query="+url.QueryEscape(introspectionQuery), "", nil)
		if r.status != http.StatusOK || len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"name":"User"`) {
			t.Fatalf("GET: %d %+v", r.status, r.Errors)
		}
	})

	for _, tc := range []struct {
		name, query, message string
	}{
		// 14,400 selections once expanded; it answered 49 MB.
		{"the aliases of the issue", introspectionBomb(120), "selections"},
		// 620 selections, but some 25,000 fields answered.
		{"fewer aliases", introspectionBomb(24), "introspection answers more than 10000 fields"},
		{"one type, many times", "{ __type(name: \"__Type\") { " + aliases("fields { name type { name } }", 300) + "} }", "selections"},
		{"types, many times", "{ __schema { " + aliases("types { name fields { name args { name } } }", 60) + "} }",
			"introspection answers"},
		// Fragments spread into each other: 2^30 selections.
		{"a chain of fragments", fragmentChain(30), "selections"},
		// The same field 900 times: a second of validation.
		{"one field repeated", "{" + strings.Repeat(" hello", 900) + " }", "repeats fields"},
		{"fragments side by side", sideBySide(300), "spreads fragments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.post("", tc.query, nil, graphqlResponse...)
			wantRefusedBeforeRunning(t, r, "COMPLEXITY_LIMIT_EXCEEDED", tc.message)
		})
	}
}

// complexityOf returns the complexity the server computes for query: a
// server whose limit is 1 refuses every document and says what it costs.
func complexityOf(t *testing.T, s *server, query string) int {
	t.Helper()
	r := s.post(s.admin, query, nil)
	wantError(t, r, "COMPLEXITY_LIMIT_EXCEEDED", "")
	m := regexp.MustCompile(`complexity (\d+)`).FindStringSubmatch(r.Errors[0].Message)
	if m == nil {
		t.Fatalf("message %q names no complexity", r.Errors[0].Message)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// complexityRow is a row of docs/graphql.md's table of complexities: the
// document, then the arithmetic ending in "= <figure>", and ": refused"
// when the figure is over the limit.
var complexityRow = regexp.MustCompile("(?m)^\\| `(\\{[^`]*\\})` \\| [^|]*= ([0-9,]+)(: refused)? \\|$")

// complexityCase is a document and its complexity; refused is what the
// page says the default limit does with it.
type complexityCase struct {
	query   string
	want    int
	refused bool
}

// docComplexities reads the documents and figures of docs/graphql.md's
// complexity table, so that the page cannot say what the server does not.
func docComplexities(t *testing.T) (out []complexityCase) {
	t.Helper()
	b, err := os.ReadFile("../docs/graphql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range complexityRow.FindAllStringSubmatch(string(b), -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
		if err != nil {
			t.Fatalf("docs/graphql.md: figure %q of %s: %v", m[2], m[1], err)
		}
		out = append(out, complexityCase{m[1], n, m[3] != ""})
	}
	if len(out) < 6 {
		t.Fatalf("docs/graphql.md: %d rows of the complexity table found, want 6 or more; the pattern no longer finds them", len(out))
	}
	return out
}

// The figures of docs/graphql.md's complexity table, read from the page, as
// the server computes them, and what the default limit of 1,000 does with
// them; and one document the page does not give (aliases add up).
func TestComplexityFigures(t *testing.T) {
	st := backends()[0].open(t, nil)
	priced := mustServer(t, st, func(o *graph.Options, _ *rhttp.Config) { o.ComplexityLimit = 1 })
	s := mustServerSharing(t, st, priced)
	cases := docComplexities(t)
	for _, tc := range cases {
		if tc.refused != (tc.want > 1000) {
			t.Errorf("docs/graphql.md: %s costs %d and the page says refused: %v; the limit is 1,000", tc.query, tc.want, tc.refused)
		}
	}
	cases = append(cases, complexityCase{"{ " + aliases("posts { content author { posts { content } } }", 7) + "}", 917, false})
	for _, tc := range cases {
		if got := complexityOf(t, priced, tc.query); got != tc.want {
			t.Errorf("%.60s: complexity %d, want %d", tc.query, got, tc.want)
		}
		r := s.post(s.admin, tc.query, nil)
		if refused := r.code() == "COMPLEXITY_LIMIT_EXCEEDED"; refused != (tc.want > 1000) {
			t.Errorf("%.60s (complexity %d): refused %v: %+v", tc.query, tc.want, refused, r.Errors)
		}
	}
}

// A document of 1,000 aliases of users is valid GraphQL: the cost model
// refuses it, not the parser.
func TestThousandAliasesAreTooComplex(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	for _, field := range []string{"users { id }", "users(limit: 1) { id }", `user(id: "1") { id }`} {
		query := "{ " + aliases(field, 1000) + "}"
		wantRefusedBeforeRunning(t, s.post(s.admin, query, nil, graphqlResponse...), "COMPLEXITY_LIMIT_EXCEEDED", "")
		r := s.post(s.admin, query, nil) // application/json: 200
		wantError(t, r, "COMPLEXITY_LIMIT_EXCEEDED", "")
		if r.status != http.StatusOK {
			t.Fatalf("status %d, want 200 with application/json", r.status)
		}
	}
}

// mustPlant makes the user of the issue, an ordinary user who posts n posts
// of size bytes each over REST, and returns their id.
func mustPlant(tb testing.TB, s *server, email string, n, size int) int64 {
	tb.Helper()
	key := s.mustAccount("Planter", email, resourceapi.RoleUser)
	u := s.ids[email]
	content := strings.Repeat("x", size)
	for i := range n {
		body, _ := json.Marshal(map[string]any{"title": fmt.Sprintf("Large %d", i), "content": content, "author_id": u})
		if r := s.send(http.MethodPost, "/api/posts", key, bytes.NewReader(body), "Content-Type", "application/json"); r.status != http.StatusCreated {
			tb.Fatalf("POST /api/posts: %d %.300s", r.status, r.raw)
		}
	}
	return u
}

// wantStopped checks that r is a response its budget stopped: 200, one
// error of code, data null.
func wantStopped(t *testing.T, r *response, code string) {
	t.Helper()
	wantError(t, r, code, "")
	if r.status != http.StatusOK || string(r.Data) != "null" || len(r.Errors) != 1 {
		t.Fatalf("status %d, data %.100s, %d errors; want 200, data null, one error", r.status, r.Data, len(r.Errors))
	}
}

// Lists without limit are priced at 10 rows but may return 1,000: what a
// request reads and answers is bounded whatever the data holds.
func TestUnlimitedListsAreBoundedByWhatTheyRead(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, b.open(t, nil))
			mustPlant(t, s, "planter@test.example", 60, 100_000)
			// The query (cost 131) would answer 372 MB, its seven
			// aliases (cost 917) 2.6 GB.
			for _, query := range []string{
				"{ posts { content author { posts { content } } } }",
				"{ " + aliases("posts { content author { posts { content } } }", 7) + "}",
			} {
				r := s.post(s.admin, query, nil, graphqlResponse...)
				wantStopped(t, r, "RESPONSE_TOO_LARGE")
				if len(r.raw) > 1024 {
					t.Fatalf("the refusal is %d bytes", len(r.raw))
				}
			}
			// Paged, the same reads are answered.
			var d struct{ Posts []struct{ Content string } }
			s.mustData(s.admin, "{ posts(limit: 20) { content } }", nil, &d)
			if len(d.Posts) != 20 || len(d.Posts[0].Content) != 100_000 {
				t.Fatalf("%d posts", len(d.Posts))
			}
		})
	}
}

// A response reads at most MaxRecords records: reads are split to fit, and
// the one that cannot fit stops the request before it runs.
func TestRecordLimit(t *testing.T) {
	var statements atomic.Int64
	st := backends()[0].open(t, &statements)
	s := mustServer(t, st, func(o *graph.Options, _ *rhttp.Config) { o.MaxRecords = 250 })
	mustUsers(t, s, 11, 20) // 12 users, 220 posts
	// 12 users and their first 10 posts: reads that may return 100 (the
	// users' page) and 120 (the posts of all of them) fit, and the
	// answer is whole.
	var d struct {
		Users []struct{ Posts []struct{ ID string } }
	}
	s.mustData(s.admin, "{ users { posts(limit: 10) { id } } }", nil, &d)
	if n := len(d.Users); n != 12 || len(d.Users[1].Posts) != 10 {
		t.Fatalf("%d users, %d posts of the second", n, len(d.Users[1].Posts))
	}
	// 12 users and all their posts: a read may return 100 posts per user,
	// so they are read a few users at a time (20 each), until what is
	// left of 250 records cannot hold another 100: the reads stop there,
	// with 7 users' posts read, and the request with them.
	before := statements.Load()
	r := s.post(s.admin, "{ users { id posts { id } } }", nil)
	wantStopped(t, r, "RECORD_LIMIT_EXCEEDED")
	// The API key, the users' page, and 6 reads of posts, not 12.
	n := statements.Load() - before
	t.Logf("%d statements", n)
	if n > 8 {
		t.Fatalf("%d statements: the reads went on", n)
	}
	// With the default limit, { users { id name email } } answers every
	// user: 1,000 of them fit.
	mustUsers(t, s, 988, 0)
	var all struct {
		Users []struct{ ID, Name, Email string }
	}
	mustServerSharing(t, st, s).mustData(s.admin, "{ users { id name email } }", nil, &all)
	if len(all.Users) != 1000 {
		t.Fatalf("%d users, want 1000", len(all.Users))
	}
}

// A response that would pass MaxResponseBytes is one RESPONSE_TOO_LARGE
// error, over HTTP with either media type, and over WebSocket with either
// protocol.
func TestResponseSizeLimit(t *testing.T) {
	const limit = 64 << 10
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
		o.MaxResponseBytes = limit
	})
	author := mustPlant(t, s, "planter@test.example", 7, 10_000)

	t.Run("HTTP", func(t *testing.T) {
		// 6 posts of 10,000 bytes: 60,100 bytes, under the limit.
		var d struct{ Posts []struct{ Content string } }
		s.mustData(s.admin, "{ posts(limit: 6) { content } }", nil, &d)
		if len(d.Posts) != 6 {
			t.Fatalf("%d posts", len(d.Posts))
		}
		for _, media := range [][]string{nil, graphqlResponse} {
			// 7 posts: 70,100 bytes.
			r := s.post(s.admin, "{ posts(limit: 7) { content } }", nil, media...)
			wantStopped(t, r, "RESPONSE_TOO_LARGE")
			if got := r.Errors[0].Extensions["limit"]; got != float64(limit) {
				t.Fatalf("extensions.limit = %v, want %d", got, limit)
			}
		}
		// What the budget does not count (__typename) is caught where the
		// response is encoded.
		r := s.post(s.admin, "{ posts(limit: 6) { content "+aliases("__typename", 150)+"} }", nil)
		wantStopped(t, r, "RESPONSE_TOO_LARGE")
	})

	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			// The last protocol's connection is closed when its subtest
			// ends, but its subscriptions leave the hub a moment later:
			// counting three below must not count them.
			waitFor(t, "the last subtest's subscriptions to end", func() bool { return s.hub.Subscribers("postCreated") == 0 })
			c := s.dial(t, proto, nil)
			c.init(map[string]any{"X-API-Key": s.admin})
			// The event of a post by the planter: 10,000 bytes of its
			// content and 70,000 of its author's posts.
			c.subscribe("big", "subscription { postCreated { content author { posts { content } } } }")
			// Within the budget's estimate, but past the limit once encoded.
			c.subscribe("typenames", "subscription { postCreated { author { posts(limit: 6) { content "+
				aliases("__typename", 150)+"} } } }")
			c.subscribe("small", "subscription { postCreated { title author { posts { title } } } }")
			waitFor(t, "three subscriptions", func() bool { return s.hub.Subscribers("postCreated") == 3 })
			s.hub.Deliver(resourceapi.Event{ID: 1<<42 + int64(len(proto)), Name: "postCreated", Resource: "posts",
				At: time.Now(), Record: resourceapi.Record{"id": int64(1), "title": "Large 0",
					"content": strings.Repeat("x", 10_000), "author_id": author, "created_at": time.Now()}})
			got := map[string]string{}
			for range 3 {
				m := c.next()
				got[m.ID] = string(m.Payload)
			}
			for _, id := range []string{"big", "typenames"} {
				if p := got[id]; !strings.Contains(p, `"code":"RESPONSE_TOO_LARGE"`) || !strings.Contains(p, `"data":null`) ||
					len(p) > 1024 {
					t.Fatalf("%s: %.300s", id, p)
				}
			}
			if p := got["small"]; !strings.Contains(p, `"title":"Large 6"`) || strings.Contains(p, "errors") {
				t.Fatalf("small: %.300s", p)
			}
		})
	}
}

// A response stopped by its budget was never built whole: what the server
// allocated for the query (which would answer 82 MB here) is a
// small part of it.
func TestResponseNeverBufferedWhole(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	mustPlant(t, s, "planter@test.example", 40, 50_000)
	query := "{ posts { content author { posts { content } } } }"
	s.post(s.admin, "{ posts(limit: 1) { id } }", nil) // warm up the connection and caches
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := s.post(s.admin, query, nil)
	runtime.ReadMemStats(&after)
	wantStopped(t, r, "RESPONSE_TOO_LARGE")
	// The posts read (2 MB, the store's cache may copy them), at most
	// 4 MiB of response built and encoded: under 48 MiB in all.
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("the request allocated %.1f MiB", float64(got)/(1<<20))
	if got > 48<<20 {
		t.Fatalf("the request allocated %d MiB", got>>20)
	}
}

// The cost of an operation is computed once per cached document when no
// variable changes it, and on every request when one does (a list's limit,
// or @include): the same document with another limit is refused as before.
func TestComplexityKeptPerDocument(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	priced := func() int64 { return graph.Priced(s.gql) }
	before := priced()
	const one = "query($id: ID!) { user(id: $id) { name email } }"
	for _, id := range []string{"1", "2", "3"} {
		s.mustData(s.admin, one, map[string]any{"id": id}, nil)
	}
	if n := priced() - before; n != 1 {
		t.Errorf("user(id) three times with three ids: priced %d times, want once", n)
	}
	// limit 5: 1 + 5*(1 + 5*1) + 1 = 32; limit 40: 1 + 40*(1 + 40*1) = 1641.
	const list = "query($n: Int, $with: Boolean!) { users(limit: $n) { posts(limit: $n) { title } name @include(if: $with) } }"
	before = priced()
	s.mustData(s.admin, list, map[string]any{"n": 5, "with": true}, nil)
	s.mustData(s.admin, list, map[string]any{"n": 5, "with": false}, nil)
	r := s.post(s.admin, list, map[string]any{"n": 40, "with": true})
	if r.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("users(limit: 40) { posts(limit: 40) }: %s, want COMPLEXITY_LIMIT_EXCEEDED", r.raw)
	}
	if n := priced() - before; n != 3 {
		t.Errorf("an operation whose limits are variables: priced %d times in three requests, want 3", n)
	}
	// A fixed document over the limit is refused every time.
	const over = "{ users(limit: 40) { posts(limit: 40) { title } } }"
	for range 2 {
		if r := s.post(s.admin, over, nil); r.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
			t.Errorf("%s: %s, want COMPLEXITY_LIMIT_EXCEEDED", over, r.raw)
		}
	}
}
