package graph_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	rauth "github.com/resourceapi/resourceapi/auth"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/relay"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/token"
)

// testHasher is argon2id at its cheapest legal cost.
func testHasher() resourceapi.PasswordHasher {
	return &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}
}

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// store is a test database with what the test servers need of it.
type store interface {
	resourceapi.Store
	resourceapi.IdentityStore
}

// backend opens a fresh, empty store of one kind. statements, when not nil,
// counts every statement the store runs, and turns the SQLite cache off so
// that it counts real ones.
type backend struct {
	name string
	open func(tb testing.TB, statements *atomic.Int64) store
}

// backends are SQLite always, PostgreSQL when RESOURCEAPI_TEST_POSTGRES_URL
// is set.
func backends() []backend {
	b := []backend{{"sqlite", func(tb testing.TB, n *atomic.Int64) store {
		return mustSQLite(tb, sqlitetest.Migrated(tb), n)
	}}}
	if os.Getenv(pgtest.EnvURL) != "" {
		b = append(b, backend{"postgres", func(tb testing.TB, n *atomic.Int64) store {
			return mustPostgres(tb, pgtest.Migrated(tb), n)
		}})
	}
	return b
}

func counter(n *atomic.Int64) func(string) {
	if n == nil {
		return nil
	}
	return func(string) { n.Add(1) }
}

func mustSQLite(tb testing.TB, path string, statements *atomic.Int64) *sqlite.DB {
	tb.Helper()
	opts := sqlite.Options{Sync: sqlite.SyncNormal, OnStatement: counter(statements)}
	if statements != nil {
		opts.CacheRecords = -1
	}
	db, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustPostgres(tb testing.TB, url string, statements *atomic.Int64) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4, OnStatement: counter(statements)})
	if err != nil {
		tb.Fatalf("open postgres: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// server is a test server: the service's own HTTP server with the GraphQL
// handler, over a real listener.
type server struct {
	tb      testing.TB
	url     string
	service *resourceapi.Service
	hub     *inmem.Hub
	tokens  *token.HS256
	// admin is the API key of user 1, an admin.
	admin string
	// ids are the ids of the accounts mustAccount made, by email.
	ids map[string]int64
	gql *graph.Handler
	// handler is the whole handler chain the listener serves.
	handler http.Handler
}

// mustServer serves st until tb ends. opts adjust the handler's Options and
// the HTTP server's Config.
func mustServer(tb testing.TB, st store, opts ...func(*graph.Options, *rhttp.Config)) *server {
	tb.Helper()
	s := mustServerWith(tb, st, opts...)
	s.admin = s.mustAccount("Test Admin", "admin@test.example", resourceapi.RoleAdmin)
	return s
}

// mustServerWith serves st until tb ends, with no account made.
func mustServerWith(tb testing.TB, st store, opts ...func(*graph.Options, *rhttp.Config)) *server {
	tb.Helper()
	tokens, err := token.New(testSecret, token.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := rauth.New(rauth.Config{Store: st, Hasher: testHasher(), Tokens: tokens})
	if err != nil {
		tb.Fatal(err)
	}
	svc := resourceapi.NewService(st, testHasher())
	svc.SetAuthenticator(auth)
	hub := inmem.NewHub()
	tb.Cleanup(hub.Close)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	gopts := graph.Options{Service: svc, ParseCredential: rhttp.ParseCredential, Events: hub, Logger: logger, RequestID: rhttp.RequestID,
		Version: "test"}
	hcfg := rhttp.Config{Service: svc, Logger: logger}
	withRelays := false
	for _, o := range opts {
		if o == nil {
			withRelays = true // withRelay
			continue
		}
		o(&gopts, &hcfg)
	}
	if withRelays {
		// The events of committed writes reach the hub, as serve wires
		// them (docs/events.md).
		r := relay.New(st.(resourceapi.Outbox), hub, relay.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		tb.Cleanup(func() { cancel(); <-done })
	}
	gql := graph.New(gopts)
	hub.SetPacer(gql.Ready) // as serve wires it
	hcfg.GraphQL = gql
	handler := rhttp.NewServer(hcfg).Handler()
	ts := httptest.NewUnstartedServer(handler)
	ts.Start()
	tb.Cleanup(ts.Close)
	tb.Cleanup(gql.Shutdown)
	return &server{tb: tb, url: ts.URL, service: svc, hub: hub, tokens: tokens, ids: map[string]int64{}, gql: gql, handler: handler}
}

// mustServerSharing serves st, a second handle on other's database, as
// another instance: its admin is other's.
func mustServerSharing(tb testing.TB, st store, other *server) *server {
	tb.Helper()
	s := mustServerWith(tb, st)
	s.admin, s.ids = other.admin, other.ids
	return s
}

// mustAccount creates a user with the given roles (through the rule layer,
// as the command line would) and returns an API key of theirs.
func (s *server) mustAccount(name, email string, roles ...string) string {
	s.tb.Helper()
	ctx := context.Background()
	if roles == nil {
		roles = []string{}
	}
	u, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
		"name": name, "email": email, "roles": roles, "password": "correct horse battery"})
	if err != nil {
		s.tb.Fatalf("create %s: %v", email, err)
	}
	s.ids[email] = u.ID()
	k, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": u.ID()})
	if err != nil {
		s.tb.Fatalf("create API key of %s: %v", email, err)
	}
	return k["key"].(string)
}

// mustUser creates a user through the rule layer and returns its id.
func (s *server) mustUser(name, email string) int64 {
	s.tb.Helper()
	u, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, 0,
		resourceapi.Record{"name": name, "email": email})
	if err != nil {
		s.tb.Fatalf("create user %s: %v", email, err)
	}
	return u.ID()
}

// mustPost creates a post by author and returns its id.
func (s *server) mustPost(author int64, title string) int64 {
	s.tb.Helper()
	p, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Posts, 0,
		resourceapi.Record{"title": title, "content": "Text of " + title, "author_id": author})
	if err != nil {
		s.tb.Fatalf("create post %s: %v", title, err)
	}
	return p.ID()
}

// gqlError is one error of a GraphQL response.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// response is a GraphQL response with the HTTP response it came in.
type response struct {
	status int
	header http.Header
	raw    []byte
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// code returns the extensions.code of the first error, or "".
func (r *response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// decode decodes data into v.
func (r *response) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		tb.Fatalf("decode data %s: %v", r.Data, err)
	}
}

// post sends a query with POST, as the holder of key ("" for none); headers
// are name, value pairs.
func (s *server) post(key, query string, vars map[string]any, headers ...string) *response {
	s.tb.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return s.send(http.MethodPost, "/graphql", key, bytes.NewReader(body),
		append([]string{"Content-Type", "application/json"}, headers...)...)
}

// send sends a request to the server and reads its GraphQL response.
func (s *server) send(method, path, key string, body io.Reader, headers ...string) *response {
	s.tb.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		s.tb.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.tb.Fatal(err)
	}
	r := &response{status: res.StatusCode, header: res.Header, raw: raw}
	if strings.Contains(res.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(raw, r); err != nil {
			s.tb.Fatalf("%s %s: response is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return r
}

// mustData sends a query that must succeed and decodes its data into v.
func (s *server) mustData(key, query string, vars map[string]any, v any) {
	s.tb.Helper()
	r := s.post(key, query, vars)
	if r.status != http.StatusOK || len(r.Errors) > 0 {
		s.tb.Fatalf("%s: status %d, errors %+v", query, r.status, r.Errors)
	}
	if v != nil {
		r.decode(s.tb, v)
	}
}

// wantError checks that r failed with one error of the given code and
// message ("" for any message).
func wantError(tb testing.TB, r *response, code, message string) {
	tb.Helper()
	if len(r.Errors) == 0 {
		tb.Fatalf("no error, want %s; data %s", code, r.Data)
	}
	if got := r.code(); got != code {
		tb.Fatalf("extensions.code = %q, want %q (%+v)", got, code, r.Errors)
	}
	if message != "" && r.Errors[0].Message != message {
		tb.Fatalf("message = %q, want %q", r.Errors[0].Message, message)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

// waitFor polls cond until it holds, for at most 10 s: for state that
// another goroutine reaches (a subscription registered with the hub), never
// as an assertion about time.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// withRelay, as an option of mustServer, runs the events relay from the
// store's outbox to the hub: committed writes reach subscribers. Without it
// the tests feed the hub themselves (hub.Deliver).
var withRelay func(*graph.Options, *rhttp.Config)
