package http_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	requests []string // "METHOD route status"
	limited  int
	failures []string
}

func (r *recorder) Request(method, route string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, fmt.Sprintf("%s %s %d", method, route, status))
}

func (r *recorder) RateLimited() { r.mu.Lock(); r.limited++; r.mu.Unlock() }

func (r *recorder) AuthFailed(scheme string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, scheme)
}

func (r *recorder) seen() ([]string, int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests), r.limited, slices.Clone(r.failures)
}

// TestObserver checks what the server reports to its Observer: each request
// once, by route pattern (the raw path never), with its final status, also
// for a 404, a 405, a panic-free 429 answered before routing and a HEAD;
// refused credentials by scheme; and that GET /metrics is served, to an
// admin or a caller granted metrics:read only, as the document says.
func TestObserver(t *testing.T) {
	rec := &recorder{}
	store := mustSQLite(t, newClock().Now)
	metricsBody := "resourceapi_test 1\n"
	limiter := &countLimiter{allow: 1000}
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		cfg.Observer = rec
		cfg.RateLimiter = limiter
		cfg.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprint(w, metricsBody)
		})
	})
	reader := c.mustAccount("Scraper", "scraper@example.com")
	if _, err := c.service.Update(context.Background(), resourceapi.SystemCaller(), resourceapi.Users,
		resourceapi.Address{ID: 2}, resourceapi.Record{"permissions": []string{"metrics:read"}}, nil); err != nil {
		t.Fatal(err)
	}
	plain := c.mustAccount("Plain", "plain@example.com")
	c.get("/api/users/1")
	c.do("HEAD", "/api/v2/users/1", "")
	c.lenient().get("/nowhere/4711")
	c.lenient().do("TRACE", "/api/users", "")
	c.as("rak_wrong").get("/api/posts")
	c.anonymous().lenient().get("/api/posts", "Authorization", "Bearer")
	for _, k := range []struct {
		key  string
		want int
	}{{reader, 200}, {c.auth[1], 200}, {plain, 403}} {
		r := c.as(k.key).get("/metrics")
		if r.StatusCode != k.want || (k.want == 200 && string(r.body) != metricsBody) {
			t.Errorf("GET /metrics as %s = %d %q, want %d", k.key[:8], r.StatusCode, r.body, k.want)
		}
	}
	if r := c.anonymous().get("/metrics"); r.StatusCode != 401 {
		t.Errorf("GET /metrics without a credential = %d, want 401", r.StatusCode)
	}
	limiter.set(0)
	if r := c.get("/api/users/3"); r.StatusCode != 429 {
		t.Fatalf("GET with the budget spent = %d, want 429", r.StatusCode)
	}

	requests, limited, failures := rec.seen()
	for _, want := range []string{
		"GET /api/users/{id} 200", "HEAD /api/v2/users/{id} 200", "GET unmatched 404",
		"TRACE unmatched 405", "GET /api/posts 403",
		"GET /metrics 200", "GET /metrics 403", "GET /metrics 401", "GET /api/users/{id} 429",
	} {
		if !slices.Contains(requests, want) {
			t.Errorf("no request %q reported; got %q", want, requests)
		}
	}
	for _, r := range requests {
		if slices.Contains([]string{"4711", "/api/users/1", "/api/users/3"}, r) {
			t.Errorf("a raw path was reported: %q", r)
		}
	}
	if limited != 1 {
		t.Errorf("rate-limit refusals = %d, want 1", limited)
	}
	if !slices.Equal(failures, []string{"api_key", "malformed"}) {
		t.Errorf("auth failures = %q, want [api_key malformed]", failures)
	}
}

// countLimiter allows every request while allow is positive.
type countLimiter struct {
	mu    sync.Mutex
	allow int
}

func (l *countLimiter) set(n int) { l.mu.Lock(); l.allow = n; l.mu.Unlock() }

func (l *countLimiter) AllowN(_ context.Context, _ string, n int) (resourceapi.RateDecision, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.allow > 0
	return resourceapi.RateDecision{Allowed: ok, Limit: 1000, Remaining: l.allow, Reset: time.Now().Add(time.Minute),
		RetryAfter: time.Second}, nil
}
