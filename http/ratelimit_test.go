package http_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

func withLimiter(l resourceapi.RateLimiter) func(*rhttp.Config) {
	return func(cfg *rhttp.Config) { cfg.RateLimiter = l }
}

// mustRateHeaders fails unless r carries the three rate-limit headers, and
// returns Remaining.
func mustRateHeaders(t *testing.T, r *reply, limit int) int {
	t.Helper()
	if got := r.Header.Get("X-RateLimit-Limit"); got != strconv.Itoa(limit) {
		t.Fatalf("%s %s (%d): X-RateLimit-Limit = %q, want %d", r.Request.Method, r.Request.URL, r.StatusCode, got, limit)
	}
	rem, err := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining"))
	if err != nil || rem < 0 || rem > limit {
		t.Fatalf("%s %s: X-RateLimit-Remaining = %q", r.Request.Method, r.Request.URL, r.Header.Get("X-RateLimit-Remaining"))
	}
	reset, err := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	if now := time.Now().Unix(); err != nil || reset < now || reset > now+3600+1 {
		t.Fatalf("%s %s: X-RateLimit-Reset = %q, want a Unix time within the window", r.Request.Method, r.Request.URL, r.Header.Get("X-RateLimit-Reset"))
	}
	// The standard fields (draft-ietf-httpapi-ratelimit-headers) say the
	// same: the quota and window of the policy, what remains, and the
	// seconds until the reset.
	policy := regexp.MustCompile(`^"caller";q=(\d+);w=(\d+)$`).FindStringSubmatch(r.Header.Get("RateLimit-Policy"))
	if policy == nil || policy[1] != strconv.Itoa(limit) {
		t.Fatalf("%s %s: RateLimit-Policy = %q, want \"caller\";q=%d;w=<window>", r.Request.Method, r.Request.URL, r.Header.Get("RateLimit-Policy"), limit)
	}
	field := regexp.MustCompile(`^"caller";r=(\d+);t=(\d+)$`).FindStringSubmatch(r.Header.Get("RateLimit"))
	if field == nil || field[1] != strconv.Itoa(rem) {
		t.Fatalf("%s %s: RateLimit = %q, want r=%d", r.Request.Method, r.Request.URL, r.Header.Get("RateLimit"), rem)
	}
	// t is counted from when the response was made: its Date, not this
	// test's clock, which a loaded machine may have moved on since.
	w, _ := strconv.ParseInt(policy[2], 10, 64)
	date, err := http.ParseTime(r.Header.Get("Date"))
	if err != nil {
		t.Fatalf("%s %s: Date = %q: %v", r.Request.Method, r.Request.URL, r.Header.Get("Date"), err)
	}
	if secs, _ := strconv.ParseInt(field[2], 10, 64); secs < reset-date.Unix()-1 || secs > reset-date.Unix()+1 || secs > w {
		t.Fatalf("%s %s: RateLimit t=%d, want the seconds from its Date %s until X-RateLimit-Reset %d, at most w=%d", r.Request.Method, r.Request.URL, secs, date, reset, w)
	}
	return rem
}

func TestRateLimitHeaders(t *testing.T) {
	lim := inmem.NewRateLimiter(1000, time.Hour, inmem.Options{})
	defer lim.Close()
	c := mustServer(t, mustSQLite(t, nil), withLimiter(lim))
	anon := c.anonymous()
	for _, r := range []*reply{
		c.get("/api/users"),    // 200
		anon.get("/api/users"), // 401
		anon.get("/api/users", "X-API-Key", "rak_AAAAAAAAAAAAAAAAAAAAAAAAAA"), // 403
		c.get("/api/users/424242"),        // 404
		c.get("/api/nothing"),             // 404 of no route
		c.do("PATCH", "/api/users", "{}"), // 405
		c.post("/api/users", "not json"),  // 415
		anon.get("/graphql"),              // whatever /graphql answers
		anon.get("/oauth/token"),          // and /oauth
		anon.get("/api/v2/users"),
	} {
		mustRateHeaders(t, r, 1000)
	}
	if r := c.get("/healthz"); r.Header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("/healthz has rate-limit headers %v", r.Header)
	}
	// Remaining counts down per caller.
	a := mustRateHeaders(t, c.get("/api/users"), 1000)
	b := mustRateHeaders(t, c.get("/api/users"), 1000)
	if b != a-1 {
		t.Errorf("Remaining went from %d to %d, want one less", a, b)
	}
}

func TestRateLimitExceeded(t *testing.T) {
	lim := inmem.NewRateLimiter(3, time.Hour, inmem.Options{})
	defer lim.Close()
	c := mustServer(t, mustSQLite(t, nil), withLimiter(lim))
	for range 3 {
		c.get("/api/users").mustStatus(t, http.StatusOK)
	}
	r := c.get("/api/users")
	r.mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 3600 {
		t.Errorf("429 Retry-After = %q", r.Header.Get("Retry-After"))
	}
	if mustRateHeaders(t, r, 3) != 0 {
		t.Errorf("429 with Remaining > 0")
	}
	// Another caller has a budget of their own.
	other := c.as(c.mustAccount("Bo", "bo@example.com", resourceapi.RoleUser))
	other.get("/api/users").mustStatus(t, http.StatusOK)
	// Requests without a valid credential spend their address's budget,
	// whatever they present.
	anon := c.anonymous()
	anon.get("/api/users").mustStatus(t, http.StatusUnauthorized)
	anon.get("/api/users", "X-API-Key", "rak_AAAAAAAAAAAAAAAAAAAAAAAAAA").mustStatus(t, http.StatusForbidden)
	anon.get("/api/users", "Authorization", basicAuth("bo@example.com", "guess")).mustStatus(t, http.StatusForbidden)
	anon.get("/api/users", "Authorization", basicAuth("bo@example.com", "guess")).mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
}

// TestRateLimitConcurrent sends 200 requests at once against a budget of 100:
// exactly 100 are admitted, in memory and, when configured, on Redis shared
// by two server instances.
func TestRateLimitConcurrent(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		lim := inmem.NewRateLimiter(100, time.Hour, inmem.Options{})
		defer lim.Close()
		store := mustSQLite(t, nil)
		c := mustServer(t, store, withLimiter(lim))
		burst(t, 100, c, c)
	})
	t.Run("redis", func(t *testing.T) {
		client := redistest.NewClient(t)
		prefix := redistest.Prefix(t, client)
		store := mustSQLite(t, nil)
		newLimiter := func() resourceapi.RateLimiter {
			// Each instance its own client, as separate processes have.
			other, err := redis.Open(context.Background(), redistest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			return redis.NewRateLimiter(other, 100, time.Hour, redis.Options{Prefix: prefix, Timeout: 10 * time.Second})
		}
		one := mustServer(t, store, withLimiter(newLimiter()))
		// A second instance on the same database, with the same admin key.
		two := mustServerOn(t, store, one.auth[1], withLimiter(newLimiter()))
		burst(t, 100, one, two)
	})
}

// burst sends 200 concurrent requests as the same caller, alternating
// between two servers, and checks that exactly want were admitted and the
// rest refused with 429.
func burst(t *testing.T, want int, a, b *client) {
	t.Helper()
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range 200 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			<-gate
			switch c.get("/api/users?limit=1").StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	close(gate)
	wg.Wait()
	if ok.Load() != int64(want) || limited.Load() != int64(200-want) || other.Load() != 0 {
		t.Fatalf("200 concurrent requests against a budget of %d: %d admitted, %d limited, %d other", want, ok.Load(), limited.Load(), other.Load())
	}
}

// TestRateLimiterDown: a limiter that cannot decide never fails a request.
func TestRateLimiterDown(t *testing.T) {
	var logs logBuffer
	c := mustServer(t, mustSQLite(t, nil), withLimiter(failingLimiter{}),
		func(cfg *rhttp.Config) { cfg.Logger = logs.logger() })
	r := c.get("/api/users")
	r.mustStatus(t, http.StatusOK)
	if r.Header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("headers from a limiter that failed: %v", r.Header)
	}
}

type failingLimiter struct{}

func (failingLimiter) AllowN(context.Context, string, int) (resourceapi.RateDecision, error) {
	return resourceapi.RateDecision{}, errors.New("connection refused")
}

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tt := range []struct {
		peer    string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"203.0.113.7:4000", nil, nil, "203.0.113.7"},
		{"203.0.113.7:4000", []string{"1.2.3.4"}, nil, "203.0.113.7"},     // nobody trusted: the header is ignored
		{"203.0.113.7:4000", []string{"1.2.3.4"}, trusted, "203.0.113.7"}, // not from a proxy
		{"10.1.1.1:4000", []string{"1.2.3.4"}, trusted, "1.2.3.4"},
		{"10.1.1.1:4000", []string{"6.6.6.6, 1.2.3.4, 10.2.2.2"}, trusted, "1.2.3.4"}, // a client's own entry is not believed
		{"10.1.1.1:4000", []string{"6.6.6.6", "1.2.3.4"}, trusted, "1.2.3.4"},         // several header lines
		{"10.1.1.1:4000", []string{"junk, 1.2.3.4"}, trusted, "1.2.3.4"},
		{"10.1.1.1:4000", []string{"1.2.3.4, junk"}, trusted, "10.1.1.1"}, // a malformed hop: nothing before it
		{"10.1.1.1:4000", []string{"10.3.3.3"}, trusted, "10.3.3.3"},      // all proxies: the farthest
		{"[::1]:4000", []string{"2001:db8::1"}, trusted, "2001:db8::1"},
		{"[::ffff:10.1.1.1]:4000", []string{"1.2.3.4"}, trusted, "1.2.3.4"},
	} {
		r := httptest.NewRequest("GET", "/api/users", nil)
		r.RemoteAddr = tt.peer
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := rhttp.ClientAddr(r, tt.trusted).String(); got != tt.want {
			t.Errorf("peer %s, X-Forwarded-For %q, trusted %v: %s, want %s", tt.peer, tt.xff, tt.trusted, got, tt.want)
		}
	}
}
