package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi/postgres"
)

// BenchmarkPostgresWrite serves bench/peers.sh's pg-post (POST a user) and
// pg-patch (PATCH a user's age) on PostgreSQL, 10,000 users, through the
// whole handler with an admin's API key, 64 requests at a time as wrk
// -c64 sends them, with the record cache (solo) as the server runs by
// default. cpu-ns/op is this process's CPU per request: the server's own
// share of a write (PostgreSQL's is its processes'). The outbox relay does
// not run, so events stay unpublished.
func BenchmarkPostgresWrite(b *testing.B) {
	h := postgresBenchHandler(b, postgres.Options{Solo: true})
	var seq atomic.Int64
	b.Run("post", func(b *testing.B) {
		b.SetParallelism(32)
		serveParallel(b, h, func(int64) *http.Request {
			i := seq.Add(1)
			req := httptest.NewRequest("POST", "/api/users", strings.NewReader(
				fmt.Sprintf(`{"name":"Load %d","email":"load-%d@load.test","age":30}`, i, i)))
			req.Header.Set("Content-Type", "application/json")
			return req
		}, http.StatusCreated)
	})
	b.Run("patch", func(b *testing.B) {
		b.SetParallelism(32)
		serveParallel(b, h, func(i int64) *http.Request {
			req := httptest.NewRequest("PATCH", fmt.Sprintf("/api/users/%d", 2+(i*7919)%9999),
				strings.NewReader(fmt.Sprintf(`{"age":%d}`, 18+i%60)))
			req.Header.Set("Content-Type", "application/json")
			return req
		}, http.StatusOK)
	})
}
