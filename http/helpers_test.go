package http_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	rauth "github.com/resourceapi/resourceapi/auth"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/storetest"
	"github.com/resourceapi/resourceapi/token"
)

// testHasher is argon2id at its cheapest legal cost: the real encoding and
// code path, without 50 ms per password.
func testHasher() resourceapi.PasswordHasher {
	return &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}
}

// newClock returns a store clock that moves 1.5 s forward on every reading,
// so that records written one after another have distinct timestamps, a
// second or more apart (If-Modified-Since and Last-Modified have whole
// seconds).
func newClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 11, 21, 5, 7, 37, 123_456_789, time.UTC), 1500*time.Millisecond)
}

// backend opens a fresh, empty store of one kind.
type backend struct {
	name string
	open func(tb testing.TB, now resourceapi.Clock) resourceapi.Store
}

// backends are the stores every HTTP test runs against: SQLite always,
// PostgreSQL when RESOURCEAPI_TEST_POSTGRES_URL is set.
func backends() []backend {
	b := []backend{{"sqlite", mustSQLite}}
	if os.Getenv(pgtest.EnvURL) != "" {
		b = append(b, backend{"postgres", mustPostgres})
	}
	return b
}

func mustSQLite(tb testing.TB, now resourceapi.Clock) resourceapi.Store {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(tb),
		sqlite.Options{Sync: sqlite.SyncNormal, Now: now})
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustPostgres(tb testing.TB, now resourceapi.Clock) resourceapi.Store {
	tb.Helper()
	db, err := postgres.Open(context.Background(), pgtest.Migrated(tb), postgres.Options{MaxConns: 4, Now: now})
	if err != nil {
		tb.Fatalf("open postgres: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// testSecret signs the test servers' access tokens.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// testConfig returns the Config of a test server on store: the real rule
// layer and authentication, with a cheap password hasher.
func testConfig(tb testing.TB, store resourceapi.Store) rhttp.Config {
	tb.Helper()
	tokens, err := token.New(testSecret, token.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := rauth.New(rauth.Config{
		Store: store.(resourceapi.IdentityStore), Hasher: testHasher(), Tokens: tokens})
	if err != nil {
		tb.Fatal(err)
	}
	svc := resourceapi.NewService(store, testHasher())
	svc.SetAuthenticator(auth)
	return rhttp.Config{Service: svc, Logger: testLogger(tb)}
}

// adminEmail is the test servers' admin, whose API key clients send unless
// a test says otherwise. It is user 1 of every test database.
const adminEmail = "admin@test.example"

// mustServer serves store over a real listener until tb ends, with an admin
// (user 1) whose API key the returned client sends. opts adjust the Config.
func mustServer(tb testing.TB, store resourceapi.Store, opts ...func(*rhttp.Config)) *client {
	tb.Helper()
	c := mustServerOn(tb, store, "", opts...)
	return c.as(c.mustAccount("Test Admin", adminEmail, resourceapi.RoleAdmin))
}

// mustServerOn serves store over a real listener until tb ends; the returned
// client sends the API key key (none when key is "").
func mustServerOn(tb testing.TB, store resourceapi.Store, key string, opts ...func(*rhttp.Config)) *client {
	tb.Helper()
	cfg := testConfig(tb, store)
	for _, o := range opts {
		o(&cfg)
	}
	api := rhttp.NewServer(cfg)
	srv := httptest.NewServer(api.Handler())
	tb.Cleanup(srv.Close)
	c := &client{tb: tb, base: srv.URL, service: cfg.Service, contract: &contractRef{doc: api.OpenAPIDocument()}, hc: &http.Client{
		// Compression is asserted by the tests, so the client must not
		// negotiate or undo it behind their backs.
		Transport: &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
	if key == "" {
		return c
	}
	return c.as(key)
}

// mustAccount creates a user with the given roles (through the rule layer,
// as the command line would) and returns an API key of theirs.
func (c *client) mustAccount(name, email string, roles ...string) string {
	c.tb.Helper()
	ctx := context.Background()
	u, err := c.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
		"name": name, "email": email, "roles": roles, "password": "correct horse battery"})
	if err != nil {
		c.tb.Fatalf("create %s: %v", email, err)
	}
	k, err := c.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": u.ID()})
	if err != nil {
		c.tb.Fatalf("create API key of %s: %v", email, err)
	}
	return k["key"].(string)
}

// as returns a client of the same server that sends the API key key.
func (c *client) as(key string) *client {
	cc := *c
	cc.auth = []string{"X-API-Key", key}
	return &cc
}

// anonymous returns a client of the same server that sends no credential.
func (c *client) anonymous() *client {
	cc := *c
	cc.auth = nil
	return &cc
}

// forEachStore runs f against a fresh server and database of every backend.
func forEachStore(t *testing.T, f func(t *testing.T, c *client), opts ...func(*rhttp.Config)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, mustServer(t, b.open(t, newClock().Now), opts...))
		})
	}
}

// client sends requests to a test server.
type client struct {
	tb      testing.TB
	base    string
	hc      *http.Client
	service *resourceapi.Service
	// auth is the credential header (name, value) every request carries
	// unless its own headers name it.
	auth []string
	// contract, when set, is the OpenAPI document of the server, against
	// which every exchange is checked (see contract_test.go).
	contract *contractRef
	// offContract marks requests that the server accepts although the
	// document does not describe them: only their responses are checked.
	offContract bool
}

// lenient returns a client of the same server whose requests are off the
// contract on purpose (a test of what the server tolerates): their
// responses are still checked against the document, the requests are not.
func (c *client) lenient() *client {
	cc := *c
	cc.offContract = true
	return &cc
}

// reply is a response with its body read.
type reply struct {
	*http.Response
	body []byte
}

// do sends a request. headers are name, value pairs (an empty value removes
// the header); a body gets Content-Type: application/json unless headers
// replace it.
func (c *client) do(method, path, body string, headers ...string) *reply {
	c.tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(c.auth) == 2 {
		req.Header.Set(c.auth[0], c.auth[1])
	}
	for i := 0; i+1 < len(headers); i += 2 {
		switch name, value := headers[i], headers[i+1]; {
		case value == "":
			req.Header.Del(name)
		case http.CanonicalHeaderKey(name) == "Content-Type":
			req.Header.Set(name, value)
		default:
			req.Header.Add(name, value)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := &reply{Response: resp, body: b}
	c.checkContract(req, body, r)
	return r
}

// checkContract checks an exchange against the server's OpenAPI document.
// It reports with Errorf, which is safe from any goroutine.
func (c *client) checkContract(req *http.Request, body string, r *reply) {
	c.tb.Helper()
	if c.contract == nil {
		return
	}
	ct, err := c.contract.get()
	if err != nil {
		c.tb.Errorf("OpenAPI document: %v", err)
		return
	}
	respBody := r.body
	if r.Header.Get("Content-Encoding") != "" && len(r.body) > 0 {
		respBody = r.decoded(c.tb)
	}
	x := exchange{req: req, reqBody: []byte(body), resp: r.Response, respBody: respBody, offContract: c.offContract}
	if err := ct.check(x); err != nil {
		c.tb.Errorf("%v", err)
	}
}

func (c *client) get(path string, headers ...string) *reply { return c.do("GET", path, "", headers...) }

func (c *client) post(path, body string, headers ...string) *reply {
	return c.do("POST", path, body, headers...)
}

// mustCreate creates a user and returns its representation.
func (c *client) mustCreate(body string) map[string]any {
	c.tb.Helper()
	r := c.post("/api/users", body)
	r.mustStatus(c.tb, http.StatusCreated)
	return r.object(c.tb)
}

// mustUser creates a user with the given name and email and returns its id.
func (c *client) mustUser(name, email string, extra ...string) int64 {
	c.tb.Helper()
	body := fmt.Sprintf(`{"name":%q,"email":%q%s}`, name, email, strings.Join(extra, ""))
	return idOf(c.tb, c.mustCreate(body))
}

func idOf(tb testing.TB, obj map[string]any) int64 {
	tb.Helper()
	n, ok := obj["id"].(json.Number)
	if !ok {
		tb.Fatalf("id = %v (%T), want a number", obj["id"], obj["id"])
	}
	id, err := n.Int64()
	if err != nil {
		tb.Fatalf("id = %v: %v", n, err)
	}
	return id
}

func (r *reply) mustStatus(tb testing.TB, want int) {
	tb.Helper()
	if r.StatusCode != want {
		tb.Fatalf("%s %s: status = %d, want %d; body: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, want, r.text(tb))
	}
}

// text returns the body, decoded if it was compressed.
func (r *reply) text(tb testing.TB) string {
	tb.Helper()
	return string(r.decoded(tb))
}

// decoded returns the body with its Content-Encoding undone.
func (r *reply) decoded(tb testing.TB) []byte {
	tb.Helper()
	var rd io.ReadCloser
	var err error
	switch r.Header.Get("Content-Encoding") {
	case "":
		return r.body
	case "gzip":
		rd, err = gzip.NewReader(bytes.NewReader(r.body))
	case "deflate":
		rd, err = zlib.NewReader(bytes.NewReader(r.body))
	default:
		tb.Fatalf("unexpected Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
	if err != nil {
		tb.Fatalf("decode %s body: %v", r.Header.Get("Content-Encoding"), err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		tb.Fatalf("decode %s body: %v", r.Header.Get("Content-Encoding"), err)
	}
	return b
}

// object decodes the body as one JSON object, numbers as json.Number.
func (r *reply) object(tb testing.TB) map[string]any {
	tb.Helper()
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.decoded(tb)))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		tb.Fatalf("body is not a JSON object: %v; body: %q", err, r.decoded(tb))
	}
	return obj
}

// list decodes a list envelope and returns its records and pagination.
func (r *reply) list(tb testing.TB) ([]map[string]any, map[string]any) {
	tb.Helper()
	r.mustStatus(tb, http.StatusOK)
	obj := r.object(tb)
	raw, ok := obj["data"].([]any)
	if !ok {
		tb.Fatalf("data = %v, want an array", obj["data"])
	}
	recs := make([]map[string]any, len(raw))
	for i, v := range raw {
		recs[i] = v.(map[string]any)
	}
	pag, ok := obj["pagination"].(map[string]any)
	if !ok {
		tb.Fatalf("pagination = %v, want an object", obj["pagination"])
	}
	return recs, pag
}

// mustError checks a version 1 error envelope: status, code, a message, a
// details array and the request id of the response.
func (r *reply) mustError(tb testing.TB, status int, code resourceapi.Code) []map[string]any {
	tb.Helper()
	r.mustStatus(tb, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("Content-Type = %q, want application/json", ct)
	}
	obj := r.object(tb)
	e, ok := obj["error"].(map[string]any)
	if !ok || len(obj) != 1 {
		tb.Fatalf("body = %s, want {\"error\": {...}}", r.text(tb))
	}
	if got := e["code"]; got != string(code) {
		tb.Errorf("error.code = %v, want %s; body: %s", got, code, r.text(tb))
	}
	if msg, _ := e["message"].(string); msg == "" {
		tb.Errorf("error.message = %v, want a message", e["message"])
	}
	if got, want := e["request_id"], r.Header.Get("X-Request-ID"); got != want || want == "" {
		tb.Errorf("error.request_id = %v, want the X-Request-ID %q", got, want)
	}
	details, ok := e["details"].([]any)
	if !ok {
		tb.Fatalf("error.details = %v, want an array", e["details"])
	}
	if len(e) != 4 {
		tb.Errorf("error has members %v, want code, message, details, request_id", keys(e))
	}
	out := make([]map[string]any, len(details))
	for i, d := range details {
		out[i] = d.(map[string]any)
	}
	return out
}

// detailFields returns the field of each detail, in order.
func detailFields(details []map[string]any) []string {
	var fields []string
	for _, d := range details {
		f, _ := d["field"].(string)
		fields = append(fields, f)
	}
	return fields
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// testLogger sends the server's log to the test's, so a failure shows what
// the server saw.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
