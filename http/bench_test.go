package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite"
)

// benchUsers is the size of the benchmark database.
const benchUsers = 10_000

// The benchmark database is seeded once per test binary, in a temporary
// directory that TestMain removes.
var bench struct {
	once   sync.Once
	dir    string
	db     *sqlite.DB
	err    error
	emails atomic.Int64
	key    string // an admin's API key, which every request sends
}

// benchHandler returns the API over the seeded SQLite database.
func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	bench.once.Do(func() { bench.err = seedBench() })
	if bench.err != nil {
		b.Fatalf("seed benchmark database: %v", bench.err)
	}
	return withKey(rhttp.NewServer(testConfig(b, bench.db)).Handler(), bench.key)
}

// withKey sends key as X-API-Key with every request to h: the API serves
// no record to a caller without a credential.
func withKey(h http.Handler, key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-API-Key", key)
		h.ServeHTTP(w, r)
	})
}

func seedBench() error {
	dir, err := os.MkdirTemp("", "resourceapi-http-bench-")
	if err != nil {
		return err
	}
	bench.dir = dir
	ctx := context.Background()
	bench.db, err = sqlite.Open(ctx, filepath.Join(dir, "bench.db"), sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		return err
	}
	// Concurrent creates share commits in the store's group writer.
	const workers = 16
	errs := make(chan error, workers)
	var next atomic.Int64
	for range workers {
		go func() {
			for {
				i := next.Add(1)
				if i > benchUsers {
					errs <- nil
					return
				}
				rec := resourceapi.Record{
					"name":  fmt.Sprintf("%s %s %d", first[i%int64(len(first))], last[i%int64(len(last))], i),
					"email": fmt.Sprintf("user%05d@example.com", i),
					"age":   i % 90,
				}
				if i%50 == 0 {
					rec["roles"] = []string{resourceapi.RoleAdmin}
				}
				if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
					errs <- err
					return
				}
				if _, err := bench.db.Create(ctx, resourceapi.Users, rec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			return err
		}
	}
	bench.emails.Store(benchUsers)
	svc := resourceapi.NewService(bench.db, testHasher())
	admin, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
		"name": "Bench Admin", "email": "admin@bench.example", "roles": []string{resourceapi.RoleAdmin}})
	if err != nil {
		return fmt.Errorf("the admin: %w", err)
	}
	k, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": admin.ID()})
	if err != nil {
		return fmt.Errorf("the admin's API key: %w", err)
	}
	bench.key = k["key"].(string)
	return nil
}

var (
	first = []string{"Ann", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"}
	last  = []string{"Smith", "Jones", "Taylor", "Brown", "Wilson", "Evans", "Thomas", "Roberts"}
)

// serveParallel runs GETs of path (path(i) when it varies) on every core and
// reports requests per second, and the process's CPU time per request
// (cpu-ns/op), which other load on the machine disturbs far less than
// ns/op.
func serveParallel(b *testing.B, h http.Handler, req func(i int64) *http.Request, want int) {
	b.Helper()
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0, measured := processCPU()
	defer func() {
		if cpu1, _ := processCPU(); measured {
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		}
	}()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req(n.Add(1)))
			if rec.Code != want {
				b.Errorf("status %d, want %d: %s", rec.Code, want, rec.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func get(path string) func(int64) *http.Request {
	return func(int64) *http.Request { return httptest.NewRequest("GET", path, nil) }
}

func BenchmarkGetUser(b *testing.B) {
	h := benchHandler(b)
	serveParallel(b, h, func(i int64) *http.Request {
		return httptest.NewRequest("GET", fmt.Sprintf("/api/users/%d", 1+i%benchUsers), nil)
	}, http.StatusOK)
}

func BenchmarkListUsers(b *testing.B) {
	h := benchHandler(b)
	serveParallel(b, h, func(i int64) *http.Request {
		// The first pages, which is what clients mostly read; deep pages
		// measure the store's OFFSET, not the API.
		return httptest.NewRequest("GET", fmt.Sprintf("/api/users?page=%d", 1+i%5), nil)
	}, http.StatusOK)
}

func BenchmarkListUsersSearchSort(b *testing.B) {
	h := benchHandler(b)
	queries := []string{
		"q=smith&sort=name", "q=user0042&sort=email&order=desc", "q=carol&sort=age&role=user",
		"sort=created_at&order=desc&page=7", "q=JONES&sort=updated_at&limit=50",
	}
	serveParallel(b, h, func(i int64) *http.Request {
		return httptest.NewRequest("GET", "/api/users?"+queries[i%int64(len(queries))], nil)
	}, http.StatusOK)
}

func BenchmarkCreateUser(b *testing.B) {
	h := benchHandler(b)
	serveParallel(b, h, func(int64) *http.Request {
		i := bench.emails.Add(1)
		body := fmt.Sprintf(`{"name":"Bench User %d","email":"bench%d@example.com","age":%d}`, i, i, i%90)
		req := httptest.NewRequest("POST", "/api/users", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req
	}, http.StatusCreated)
}

// BenchmarkGetUserGzip is BenchmarkGetUser for a client that refuses
// identity, so every response goes through the encoder.
func BenchmarkGetUserGzip(b *testing.B) {
	h := benchHandler(b)
	serveParallel(b, h, func(i int64) *http.Request {
		req := httptest.NewRequest("GET", fmt.Sprintf("/api/users/%d", 1+i%benchUsers), nil)
		req.Header.Set("Accept-Encoding", "gzip, identity;q=0")
		return req
	}, http.StatusOK)
}

// BenchmarkListPage3 reads the third page of users by number, as
// bench/peers.sh's sqlite-page3 does: a page the store's cache answers, so
// that what is measured is the API's own work (cursors, Link, envelope).
func BenchmarkListPage3(b *testing.B) {
	h := benchHandler(b)
	serveParallel(b, h, get("/api/users?page=3"), http.StatusOK)
}
