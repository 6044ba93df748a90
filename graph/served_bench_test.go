package graph_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/metrics"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
)

// servedHandler is the handler chain as serve wires it on SQLite (the
// record cache on): the access log (serve's, http.NewAccessLogHandler in
// the text format, here into io.Discard instead of the buffered log
// writer), the metrics observer of
// requests and operations, no rate limiter (bench/peers.sh's setting) and
// 100 users. It returns the chain and the admin's API key.
func servedHandler(tb testing.TB) (http.Handler, string) {
	tb.Helper()
	s := servedSQLite(tb)
	return s.handler, s.admin
}

// servedSQLite is the server of servedHandler.
func servedSQLite(tb testing.TB) *server {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "bench.db"), sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return servedOn(tb, db)
}

// servedPostgres is servedHandler on PostgreSQL as serve opens it (the
// record cache of the only writer, Solo), skipped without
// RESOURCEAPI_TEST_POSTGRES_URL.
func servedPostgres(tb testing.TB) (http.Handler, string) {
	tb.Helper()
	if os.Getenv(pgtest.EnvURL) == "" {
		tb.Skip(pgtest.EnvURL + " is not set")
	}
	db, err := postgres.Open(tb.Context(), pgtest.Migrated(tb), postgres.Options{Solo: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	for i := 0; i < 1000 && !db.Holding(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !db.Holding() {
		tb.Fatal("the store never became the solo holder")
	}
	s := servedOn(tb, db)
	return s.handler, s.admin
}

func servedOn(tb testing.TB, db store) *server {
	tb.Helper()
	m := metrics.New()
	s := mustServer(tb, db, func(o *graph.Options, c *rhttp.Config) {
		c.AccessLog = slog.New(rhttp.NewAccessLogHandler(io.Discard, nil, false))
		c.Observer = m
		o.Observe = m.Operation
		o.ParseListQuery = rhttp.ParseListQuery
		o.ClientIP = func(r *http.Request) string { return rhttp.ClientAddr(r, nil).String() }
	})
	mustUsers(tb, s, 19, 5)
	mustUsers(tb, s, 80, 0)
	return s
}

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, reused across requests so that the benchmarks count the server's
// allocations, not a recorder's.
type discardWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
	keep   bool // keep the body (the first request's, to check it)
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.keep {
		w.body.Write(p)
	}
	return len(p), nil
}
func (w *discardWriter) reset() {
	clear(w.h)
	w.status = 0
	w.body.Reset()
}

// serveOne sends requests to h one after another from this goroutine:
// cpu-ns/op is the process's CPU per request (the server's, the garbage
// collector's and any goroutine the request starts), which the machine's
// other load disturbs far less than ns/op.
func serveOne(b *testing.B, h http.Handler, key, method string, path func(i int) string, body func(i int) []byte) {
	w := &discardWriter{h: http.Header{}, keep: true}
	req, err := http.NewRequest(method, path(0), nil)
	if err != nil {
		b.Fatal(err)
	}
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("X-API-Key", key)
	req.Header.Set("User-Agent", "wrk")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rd := bytes.NewReader(nil)
	send := func(i int) {
		w.reset()
		if p := path(i); p != req.URL.Path {
			req.URL.Path = p
		}
		if body != nil {
			bs := body(i)
			rd.Reset(bs)
			req.Body = io.NopCloser(rd)
			req.ContentLength = int64(len(bs))
		}
		h.ServeHTTP(w, req)
	}
	send(0)
	if w.status != http.StatusOK || bytes.Contains(w.body.Bytes(), []byte(`"errors"`)) {
		b.Fatalf("%d %s", w.status, w.body.Bytes())
	}
	w.keep = false
	b.ReportAllocs()
	b.ResetTimer()
	before := processCPU()
	defer func() {
		b.ReportMetric(float64((processCPU()-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}()
	for i := range b.N {
		send(i)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// userPaths are the paths of GET /api/users/{id} for users 2 to 100 (1 is
// the admin), built before the benchmark runs.
var userPaths = func() []string {
	p := make([]string, 99)
	for i := range p {
		p[i] = "/api/users/" + strconv.Itoa(i+2)
	}
	return p
}()

// BenchmarkServedUserREST is bench/peers.sh's sqlite-get in process: GET
// one user with an API key, the access log and the metrics on.
func BenchmarkServedUserREST(b *testing.B) {
	h, key := servedHandler(b)
	serveOne(b, h, key, http.MethodGet, func(i int) string { return userPaths[i%len(userPaths)] }, nil)
}

// BenchmarkServedUserGraphQL is sqlite-gql-get in process: the same user
// through { user(id: $id) { name email } }.
func BenchmarkServedUserGraphQL(b *testing.B) {
	benchServedUserGraphQL(b, servedHandler)
}

// BenchmarkServedPostgresUserREST and BenchmarkServedPostgresUserGraphQL
// are pg-get and pg-gql-get in process.
func BenchmarkServedPostgresUserREST(b *testing.B) {
	h, key := servedPostgres(b)
	serveOne(b, h, key, http.MethodGet, func(i int) string { return userPaths[i%len(userPaths)] }, nil)
}

func BenchmarkServedPostgresUserGraphQL(b *testing.B) {
	benchServedUserGraphQL(b, servedPostgres)
}

func benchServedUserGraphQL(b *testing.B, served func(testing.TB) (http.Handler, string)) {
	h, key := served(b)
	bodies := make([][]byte, 99)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"%d"}}`, i+2)
	}
	serveOne(b, h, key, http.MethodPost, func(int) string { return "/graphql" }, func(i int) []byte { return bodies[i%len(bodies)] })
}

// BenchmarkServedPostGraphQL is one post through { post(id: $id) { title
// content } } (posts 1 to 95), by the fast path and by gqlgen's executor.
func BenchmarkServedPostGraphQL(b *testing.B) {
	bodies := make([][]byte, 95)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"query":"query($id: ID!) { post(id: $id) { title content } }","variables":{"id":"%d"}}`, i+1)
	}
	for _, fast := range []bool{true, false} {
		name := "fast"
		if !fast {
			name = "gqlgen"
		}
		b.Run(name, func(b *testing.B) {
			s := servedSQLite(b)
			graph.SetFastPath(s.gql, fast)
			serveOne(b, s.handler, s.admin, http.MethodPost, func(int) string { return "/graphql" }, func(i int) []byte { return bodies[i%len(bodies)] })
		})
	}
}

// BenchmarkServedOne is a read of one record as served on SQLite, by
// GraphQL (the fast path's shapes: user(id), post(id), me, and a generated
// resource's product(id)) and by REST's GET of the same record, each
// sub-benchmark on the same seeded server: the fast path's roots against
// gqlgen's executor when built before them, and against the GET.
func BenchmarkServedOne(b *testing.B) {
	s := servedSQLite(b)
	for i := range 99 {
		if _, err := s.service.Create(b.Context(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(i)); err != nil {
			b.Fatal(err)
		}
	}
	gql := func(query string, first, n int) func(i int) []byte {
		bodies := make([][]byte, max(n, 1))
		for i := range bodies {
			if n == 0 {
				bodies[i] = fmt.Appendf(nil, `{"query":%q}`, query)
				continue
			}
			bodies[i] = fmt.Appendf(nil, `{"query":%q,"variables":{"id":"%d"}}`, query, first+i)
		}
		return func(i int) []byte { return bodies[i%len(bodies)] }
	}
	rest := func(prefix string, first, n int) func(i int) string {
		paths := make([]string, n)
		for i := range paths {
			paths[i] = prefix + strconv.Itoa(first+i)
		}
		return func(i int) string { return paths[i%len(paths)] }
	}
	graphql := func(int) string { return "/graphql" }
	for _, c := range []struct {
		name string
		path func(int) string
		body func(int) []byte
	}{
		{"user-graphql", graphql, gql(`query($id: ID!) { user(id: $id) { name email } }`, 2, 99)},
		{"user-rest", rest("/api/users/", 2, 99), nil},
		{"post-graphql", graphql, gql(`query($id: ID!) { post(id: $id) { title content } }`, 1, 95)},
		{"me-graphql", graphql, gql(`{ me { name email } }`, 0, 0)},
		{"me-rest", func(int) string { return "/api/users/me" }, nil},
		{"product-graphql", graphql, gql(`query($id: ID!) { product(id: $id) { name priceCents } }`, 1, 99)},
		{"product-rest", rest("/api/products/", 1, 99), nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			method := http.MethodGet
			if c.body != nil {
				method = http.MethodPost
			}
			serveOne(b, s.handler, s.admin, method, c.path, c.body)
		})
	}
}

// maxGetAllocs bounds the allocations of a GET of one record as served
// (API key, access log, metrics, the record from the cache): 4 in the
// build that set it (the API key's hash without a string, the access line
// by serve's formatter), and one of slack; 6, 8, 16 and 23 before
// (docs/performance.md, "Issue 15: the request path's allocations", "the
// served GET's allocations and CPU, net/http's included (restget)",
// "Issue 15, SQLite GET: the request's own strings, net/http's floor
// beside it (sqliteget3)" and "Issue 15, GET of a record: rendered once
// per cached record, headers without canonicalizing (getpath)").
const maxGetAllocs = 5

// TestServedGetAllocations fails when a GET of one record allocates more
// than maxGetAllocs times: every middleware, the authentication and the
// rendering are on this path, and each allocation is paid on every request.
func TestServedGetAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a database")
	}
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops a quarter of what is put back, which changes the counts; .ci/run runs this test without it")
	}
	h, key := servedHandler(t)
	req, err := http.NewRequest(http.MethodGet, "/api/users/7", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("X-API-Key", key)
	w := &discardWriter{h: http.Header{}}
	serve := func() {
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			t.Fatalf("status %d", w.status)
		}
	}
	for range 10 {
		serve() // the record and the account in their caches
	}
	// AllocsPerRun counts the whole process's allocations, and the
	// server's own goroutines (the relay's poll, the WAL watch) allocate now
	// and then beside the requests: the fewest of five counts is the GET's.
	least := math.Inf(1)
	for range 5 {
		least = min(least, testing.AllocsPerRun(200, serve))
	}
	if least > maxGetAllocs {
		t.Errorf("a GET allocates %.1f times, more than %d", least, maxGetAllocs)
	}
}

// maxGraphQLAllocs bounds the allocations of { user(id: $id) { name email
// } } as served, POSTed as JSON with the id in its variables: 17 in the
// build that set it (the document's plan, plan.go, with the variables read
// from the body's text, and the fast path's contexts made only for an
// error; 23 in its first version), 50 before (the fast path, fast.go; 53
// in its first version), 120 before that, 140 and 171 before that
// (docs/performance.md, "Issue 15, GraphQL user(id): the request path's
// allocations, 171 to 140 (gqlget)", "Issue 15, GraphQL user(id) through
// gqlgen's executor directly: 140 to 120 allocations (gqlget2)", "Issue
// 15, GraphQL user(id) without gqlgen's per-field execution (gqlfast)" and
// "Issue 15, GraphQL user(id): a plan per document, contexts only for
// errors (gqlenv)").
const maxGraphQLAllocs = 18

// maxMeAllocs and maxProductAllocs bound { me { name email } } and a
// generated resource's { product(id: $id) { name priceCents } } likewise:
// 17 and 24 in the build that set them (plans, gqlenv), 43 and 59 before
// (the fast path's roots from the declarations, camel's names kept), 98
// and 128 through gqlgen's executor (docs/performance.md, "Issue 15,
// GraphQL: every declared resource's one-record field and me on the fast
// path (gqlfast2)").
const (
	maxMeAllocs      = 18
	maxProductAllocs = 25
)

// TestServedGraphQLAllocations is TestServedGetAllocations for the same
// user read through GraphQL, and for me and a product: the transport,
// gqlgen's operation and the extensions of graph (limits, budget,
// observer) are all on this path.
func TestServedGraphQLAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds a database")
	}
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops a quarter of what is put back, which changes the counts; .ci/run runs this test without it")
	}
	s := servedSQLite(t)
	product, err := s.service.Create(t.Context(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		body string
		max  int
	}{
		{"user(id)", `{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"7"}}`, maxGraphQLAllocs},
		{"me", `{"query":"{ me { name email } }"}`, maxMeAllocs},
		{"product(id)", `{"query":"query($id: ID!) { product(id: $id) { name priceCents } }","variables":{"id":"` + itoa(product.ID()) + `"}}`, maxProductAllocs},
	} {
		body := []byte(c.body)
		req, err := http.NewRequest(http.MethodPost, "/graphql", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("X-API-Key", s.admin)
		req.Header.Set("Content-Type", "application/json")
		rd := bytes.NewReader(nil)
		rc := io.NopCloser(rd)
		w := &discardWriter{h: http.Header{}, keep: true}
		serve := func() {
			w.reset()
			rd.Reset(body)
			req.Body = rc
			req.ContentLength = int64(len(body))
			s.handler.ServeHTTP(w, req)
			if w.status != http.StatusOK || bytes.Contains(w.body.Bytes(), []byte(`"errors"`)) {
				t.Fatalf("%d %s", w.status, w.body.Bytes())
			}
		}
		for range 10 {
			serve() // the document, the record and the account in their caches
		}
		w.keep = false
		least := math.Inf(1)
		for range 5 {
			least = min(least, testing.AllocsPerRun(200, serve))
		}
		if least > float64(c.max) {
			t.Errorf("a GraphQL %s allocates %.1f times, more than %d", c.name, least, c.max)
		}
		if testing.Verbose() {
			t.Logf("a GraphQL %s allocates %.1f times", c.name, least)
		}
	}
}
