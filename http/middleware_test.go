package http_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

func TestRequestID(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		generated := regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-z]+$`)
		seen := map[string]bool{}
		for range 5 {
			id := c.get("/api/users").Header.Get("X-Request-ID")
			if !generated.MatchString(id) || seen[id] {
				t.Errorf("generated X-Request-ID %q: malformed or repeated", id)
			}
			seen[id] = true
		}
		for _, id := range []string{"abc", "A.b_c-9", strings.Repeat("x", 128), "550e8400-e29b-41d4-a716-446655440000"} {
			if got := c.get("/api/users", "X-Request-ID", id).Header.Get("X-Request-ID"); got != id {
				t.Errorf("client id %q: got %q, want it reused", id, got)
			}
		}
		for _, id := range []string{strings.Repeat("x", 129), "a b", "a/b", "<script>", "é", "a\tb", "a,b"} {
			if got := c.get("/api/users", "X-Request-ID", id).Header.Get("X-Request-ID"); got == id || !generated.MatchString(got) {
				t.Errorf("client id %q: got %q, want a generated one", id, got)
			}
		}
		// Every response has one, errors included, and errors report it.
		responses := []*reply{
			c.get("/healthz"), c.get("/nothing"), c.do("OPTIONS", "/api/users", ""), c.do("PUT", "/api/users", ""),
			c.get("/api/users", "Accept", "application/vnd.example.v7+json"), c.post("/api/users", "{"),
		}
		for _, r := range responses {
			if r.Header.Get("X-Request-ID") == "" {
				t.Errorf("%s %s: no X-Request-ID", r.Request.Method, r.Request.URL.Path)
			}
		}
		r := c.get("/api/users/999", "X-Request-ID", "trace-42")
		r.mustError(t, 404, resourceapi.CodeNotFound) // checks error.request_id == X-Request-ID
		if r.Header.Get("X-Request-ID") != "trace-42" {
			t.Errorf("X-Request-ID = %q", r.Header.Get("X-Request-ID"))
		}
	})
}

func TestMethods(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		const collection, item, health = "GET, HEAD, POST, OPTIONS", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS", "GET, HEAD, OPTIONS"
		for _, tt := range []struct{ path, allow string }{
			{"/api/users", collection}, {"/api/v1/users", collection}, {"/api/v2/users", collection},
			{"/api/users/1", item}, {"/api/v2/users/abc", item}, {"/healthz", health}, {"/readyz", health},
		} {
			r := c.do("OPTIONS", tt.path, "")
			r.mustStatus(t, http.StatusOK)
			if got := r.Header.Get("Allow"); got != tt.allow {
				t.Errorf("OPTIONS %s: Allow = %q, want %q", tt.path, got, tt.allow)
			}
			if len(r.body) != 0 || r.Header.Get("Content-Type") != "" {
				t.Errorf("OPTIONS %s: body %q, Content-Type %q; want none", tt.path, r.body, r.Header.Get("Content-Type"))
			}
		}
		for _, tt := range []struct{ method, path, allow string }{
			{"PUT", "/api/users", collection}, {"PATCH", "/api/users", collection}, {"DELETE", "/api/v2/users", collection},
			{"POST", "/api/users/1", item}, {"TRACE", "/api/users/1", item}, {"POST", "/healthz", health}, {"DELETE", "/readyz", health},
		} {
			r := c.do(tt.method, tt.path, "")
			if tt.path == "/api/v2/users" {
				r.mustStatus(t, http.StatusMethodNotAllowed)
			} else {
				r.mustError(t, http.StatusMethodNotAllowed, resourceapi.CodeMethodNotAllowed)
			}
			if got := r.Header.Get("Allow"); got != tt.allow {
				t.Errorf("%s %s: Allow = %q, want %q", tt.method, tt.path, got, tt.allow)
			}
		}
		// OPTIONS on a path that does not exist is 404.
		c.do("OPTIONS", "/api/nothing", "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	})
}

// logBuffer collects a server's log lines, safely across its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestRecover(t *testing.T) {
	var logs logBuffer
	store := mustSQLite(t, nil)
	h := rhttp.Middleware(rhttp.Config{Service: resourceapi.NewService(store, nil), Logger: logs.logger()}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"x"`)
		switch r.URL.Path {
		case "/api/v2/boom", "/boom":
			panic("secret database password in panic")
		case "/late":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("partial ", 1000)))
			http.NewResponseController(w).Flush()
			panic("too late to answer")
		case "/abort":
			panic(http.ErrAbortHandler)
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &client{tb: t, base: srv.URL, hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}

	r := c.get("/boom", "X-Request-ID", "req-1", "Accept-Encoding", "gzip")
	r.mustError(t, http.StatusInternalServerError, resourceapi.CodeInternal)
	if strings.Contains(r.text(t), "secret") || r.Header.Get("ETag") != "" {
		t.Errorf("panic leaked: %s, ETag %q", r.text(t), r.Header.Get("ETag"))
	}
	log := logs.String()
	if !strings.Contains(log, "secret database password in panic") || !strings.Contains(log, `"request_id":"req-1"`) || !strings.Contains(log, "goroutine") {
		t.Errorf("panic log lacks the value, request id or stack:\n%s", log)
	}

	r = c.get("/api/v2/boom")
	r.mustStatus(t, http.StatusInternalServerError)
	if r.Header.Get("Content-Type") != "application/problem+json" || r.Header.Get("API-Version") != "2" {
		t.Errorf("v2 panic: Content-Type %q, API-Version %q", r.Header.Get("Content-Type"), r.Header.Get("API-Version"))
	}

	// Once the response has begun, the connection is cut rather than the
	// error appended to a body that looks whole.
	resp, err := c.hc.Get(srv.URL + "/late")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Error("a panic after the response began did not abort it")
	}

	resp, err = c.hc.Get(srv.URL + "/abort")
	if err == nil {
		resp.Body.Close()
		t.Error("http.ErrAbortHandler did not abort the response")
	}
	// The server still serves.
	c.get("/boom").mustStatus(t, http.StatusInternalServerError)
}

func TestInternalErrorsAreHidden(t *testing.T) {
	var logs logBuffer
	failing := &failingStore{fullStore: mustSQLite(t, nil).(fullStore), err: errors.New("pq: relation users does not exist at 10.0.0.5")}
	c := mustServer(t, failing, func(cfg *rhttp.Config) { cfg.Logger = logs.logger() })
	r := c.get("/api/users", "X-Request-ID", "req-7")
	details := r.mustError(t, http.StatusInternalServerError, resourceapi.CodeInternal)
	if strings.Contains(string(r.body), "relation") || len(details) != 0 {
		t.Errorf("internal error leaked: %s", r.body)
	}
	if log := logs.String(); !strings.Contains(log, "relation users does not exist") || !strings.Contains(log, "req-7") {
		t.Errorf("internal error not logged with its request id:\n%s", log)
	}
}

// failingStore fails List and Ping with err.
type failingStore struct {
	fullStore
	err error
}

// fullStore is what the server needs of a store: resources and identities.
type fullStore interface {
	resourceapi.Store
	resourceapi.IdentityStore
}

func (s *failingStore) List(context.Context, *resourceapi.Resource, resourceapi.ListQuery) (resourceapi.Page, error) {
	return resourceapi.Page{}, s.err
}

func (s *failingStore) Ping(context.Context) error { return s.err }

func TestHealth(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		for _, path := range []string{"/healthz", "/readyz"} {
			r := c.get(path)
			r.mustStatus(t, http.StatusOK)
			if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: headers %v", path, r.Header)
			}
		}
	})
	var logs logBuffer
	c := mustServer(t, &failingStore{fullStore: mustSQLite(t, nil).(fullStore), err: errors.New("disk on fire")},
		func(cfg *rhttp.Config) { cfg.Logger = logs.logger() })
	c.get("/healthz").mustStatus(t, http.StatusOK)
	c.get("/readyz").mustError(t, http.StatusServiceUnavailable, resourceapi.CodeUnavailable)
	if !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("readiness failure not logged with its cause:\n%s", logs.String())
	}
}

func TestCORS(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		r := c.get("/api/users", "Origin", "https://app.example.com")
		if r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("no origins configured, yet Access-Control-Allow-Origin = %q", r.Header.Get("Access-Control-Allow-Origin"))
		}
	})
	forEachStore(t, func(t *testing.T, c *client) {
		r := c.get("/api/users", "Origin", "https://app.example.com")
		if r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !hasVary(r, "Origin") {
			t.Errorf("allowed origin: headers %v", r.Header)
		}
		expose := r.Header.Get("Access-Control-Expose-Headers")
		for _, h := range []string{"ETag", "Location", "X-Request-ID", "API-Version", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if !strings.Contains(expose, h) {
				t.Errorf("Access-Control-Expose-Headers %q lacks %s", expose, h)
			}
		}
		// Origins compare case-insensitively; errors carry CORS headers too.
		r = c.get("/api/users/999", "Origin", "HTTPS://APP.EXAMPLE.COM")
		if r.StatusCode != 404 || r.Header.Get("Access-Control-Allow-Origin") == "" {
			t.Errorf("error response: status %d, headers %v", r.StatusCode, r.Header)
		}
		r = c.get("/api/users", "Origin", "https://evil.example.com")
		if r.Header.Get("Access-Control-Allow-Origin") != "" || !hasVary(r, "Origin") {
			t.Errorf("other origin: headers %v", r.Header)
		}

		for _, tt := range []struct{ path, methods string }{
			{"/api/users", "GET, HEAD, POST, OPTIONS"},
			{"/api/v2/users/1", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"},
		} {
			r := c.do("OPTIONS", tt.path, "", "Origin", "http://localhost:3000",
				"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization, if-match")
			r.mustStatus(t, http.StatusOK)
			if got := r.Header.Get("Access-Control-Allow-Methods"); got != tt.methods {
				t.Errorf("preflight %s: Allow-Methods %q, want %q", tt.path, got, tt.methods)
			}
			if r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || r.Header.Get("Access-Control-Max-Age") == "" {
				t.Errorf("preflight %s: headers %v", tt.path, r.Header)
			}
			allow := strings.ToLower(r.Header.Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"authorization", "x-api-key", "content-type", "if-match", "if-none-match", "x-request-id"} {
				if !strings.Contains(allow, h) {
					t.Errorf("Access-Control-Allow-Headers %q lacks %s", allow, h)
				}
			}
		}
		r = c.do("OPTIONS", "/api/users", "", "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST")
		if r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("preflight from another origin: headers %v", r.Header)
		}
	}, func(cfg *rhttp.Config) {
		cfg.CORSOrigins = []string{"https://app.example.com", "http://localhost:3000/"}
	})
	forEachStore(t, func(t *testing.T, c *client) {
		if got := c.get("/api/users", "Origin", "https://any.example").Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("origins *: Access-Control-Allow-Origin = %q", got)
		}
	}, func(cfg *rhttp.Config) { cfg.CORSOrigins = []string{"*"} })
}

func TestAccessLog(t *testing.T) {
	var logs logBuffer
	c := mustServer(t, mustSQLite(t, nil), func(cfg *rhttp.Config) { cfg.Logger = logs.logger(); cfg.AccessLog = logs.logger() })
	c.get("/api/users?q=private-search", "X-Request-ID", "log-1")
	c.post("/api/users", `{"name":"A","email":"a@example.com","password":"hunter2hunter2"}`, "X-Request-ID", "log-2")
	log := logs.String()
	for _, want := range []string{`"request_id":"log-1"`, `"path":"/api/users"`, `"status":200`, `"method":"GET"`, `"request_id":"log-2"`, `"status":201`, `"duration"`} {
		if !strings.Contains(log, want) {
			t.Errorf("access log lacks %s:\n%s", want, log)
		}
	}
	for _, secret := range []string{"private-search", "hunter2"} {
		if strings.Contains(log, secret) {
			t.Errorf("access log shows %q:\n%s", secret, log)
		}
	}

	var quiet logBuffer
	c = mustServer(t, mustSQLite(t, nil), func(cfg *rhttp.Config) { cfg.Logger = quiet.logger() })
	c.get("/api/users")
	if quiet.String() != "" {
		t.Errorf("access log off, yet logged:\n%s", quiet.String())
	}
}

// TestClientGone cancels a request while the store is serving it, as a load
// generator closing its connections does: the client went away, which is not
// a server error, so the access log says 499 (nginx's "client closed
// request") and nothing is logged as an error. A store that really fails is
// still a logged 500.
func TestClientGone(t *testing.T) {
	var logs, access logBuffer
	store := &blockingStore{fullStore: mustSQLite(t, nil).(fullStore), entered: make(chan struct{}, 1)}
	cfg := testConfig(t, store)
	cfg.Logger, cfg.AccessLog = logs.logger(), access.logger()
	key := (&client{tb: t, service: cfg.Service}).mustAccount("Admin", adminEmail, resourceapi.RoleAdmin)
	api := rhttp.NewServer(cfg).Handler()
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r) // the access line is written when this returns
		served <- struct{}{}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/users", nil)
	req.Header.Set("X-Request-ID", "gone-1")
	req.Header.Set("X-API-Key", key)
	failed := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-store.entered
	cancel() // closes the connection while the store waits
	if err := <-failed; err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	<-served
	if log := access.String(); !strings.Contains(log, `"request_id":"gone-1"`) || !strings.Contains(log, `"status":499`) || strings.Contains(log, `"status":500`) {
		t.Errorf("access log of a request the client abandoned, want status 499:\n%s", log)
	}
	if log := logs.String(); strings.Contains(log, `"level":"ERROR"`) {
		t.Errorf("a request the client abandoned was logged as an error:\n%s", log)
	}

	// A real failure is still a 500, in the access log and as an error.
	store.fail.Store(true)
	req, _ = http.NewRequest("GET", srv.URL+"/api/users", nil)
	req.Header.Set("X-API-Key", key)
	r, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	<-served
	if r.StatusCode != http.StatusInternalServerError || !strings.Contains(access.String(), `"status":500`) ||
		!strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("store failure: status %d; access log:\n%s\nlog:\n%s", r.StatusCode, access.String(), logs.String())
	}
}

// blockingStore's List waits for its request to be cancelled and fails with
// the context's error, as the real stores do; once fail is set, it fails at
// once with an error of its own instead.
type blockingStore struct {
	fullStore
	entered chan struct{}
	fail    atomic.Bool
}

func (s *blockingStore) List(ctx context.Context, _ *resourceapi.Resource, _ resourceapi.ListQuery) (resourceapi.Page, error) {
	if s.fail.Load() {
		return resourceapi.Page{}, errors.New("disk on fire")
	}
	s.entered <- struct{}{}
	<-ctx.Done()
	return resourceapi.Page{}, fmt.Errorf("list users: %w", ctx.Err())
}
