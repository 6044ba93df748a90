package graph_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
)

// A response's size is charged to its caller's rate budget: one request per
// graph.ChargeUnit built, or refused as too large, so that a budget bounds
// the work of a caller's requests and not only their number.
func TestLargeResponsesSpendTheRateBudget(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, c *rhttp.Config) {
		c.RateLimiter = inmem.NewRateLimiter(1000, time.Hour, inmem.Options{})
		o.MaxResponseBytes = 512 << 10
	})
	author := s.mustUser("Planter", "planter@example.com")
	content := strings.Repeat("x", 50_000)
	for i := range 16 { // 800 KB of content
		if _, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Posts, 0,
			resourceapi.Record{"title": "Post " + strconv.Itoa(i), "content": content, "author_id": author}); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func(r *response) int {
		t.Helper()
		n, err := strconv.Atoi(r.header.Get("X-RateLimit-Remaining"))
		if err != nil {
			t.Fatalf("X-RateLimit-Remaining %q: %v", r.header.Get("X-RateLimit-Remaining"), err)
		}
		return n
	}
	hello := func() int { return remaining(s.post(s.admin, "{ hello }", nil)) }

	start := hello()
	if got := hello(); got != start-1 {
		t.Fatalf("a small response cost %d requests, want 1", start-got)
	}
	// Four posts: 200 KB, three units beyond the request itself.
	small := s.post(s.admin, "{ posts(limit: 4) { content } }", nil)
	if small.code() != "" {
		t.Fatalf("posts(limit: 4): %s", small.raw)
	}
	after := hello()
	if got, want := start-1-after, 1+200_000/graph.ChargeUnit+1; got != want {
		t.Errorf("a 200 KB response and a small one cost %d requests, want %d", got, want)
	}
	// Every post: refused as too large, charged what it was refused for
	// (at least the limit).
	large := s.post(s.admin, "{ posts(limit: 16) { content } }", nil)
	if large.code() != "RESPONSE_TOO_LARGE" {
		t.Fatalf("posts(limit: 16): %s, want RESPONSE_TOO_LARGE", large.raw)
	}
	if got, least := after-hello(), 1+(512<<10)/graph.ChargeUnit+1; got < least {
		t.Errorf("a response refused as too large and a small one cost %d requests, want at least %d", got, least)
	}
}
