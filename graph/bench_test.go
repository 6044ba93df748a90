package graph_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
)

// benchServer serves a SQLite database (cache on, as served) with 100
// users, the first 20 with 5 posts each.
func benchServer(b *testing.B) *server {
	b.Helper()
	db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return benchSeed(b, mustServer(b, db))
}

// benchPostgres is benchServer on PostgreSQL (a database of its own, the
// default pool), skipped without RESOURCEAPI_TEST_POSTGRES_URL.
func benchPostgres(b *testing.B) *server {
	return benchPostgresWith(b, postgres.Options{})
}

// benchPostgresWith is benchPostgres with opts; it reports the statements
// each operation ran (statements/op).
func benchPostgresWith(b *testing.B, opts postgres.Options) *server {
	b.Helper()
	if os.Getenv(pgtest.EnvURL) == "" {
		b.Skip(pgtest.EnvURL + " is not set")
	}
	var statements atomic.Int64
	opts.OnStatement = func(string) { statements.Add(1) }
	db, err := postgres.Open(b.Context(), pgtest.Migrated(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s := benchSeed(b, mustServer(b, db))
	if opts.Solo {
		for i := 0; i < 1000 && !db.Holding(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if !db.Holding() {
			b.Fatal("the store never became the solo holder")
		}
	}
	start := statements.Load()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(statements.Load()-start)/float64(b.N), "statements/op")
		}
	})
	return s
}

func benchSeed(b *testing.B, s *server) *server {
	mustUsers(b, s, 19, 5)
	mustUsers(b, s, 80, 0)
	return s
}

// benchPost sends body to path in parallel and fails on any non-200 or
// GraphQL error. Besides the time, it reports the CPU the process spent
// per request (cpu-µs/op: client and server, user and system), which the
// machine's other load does not inflate as it does the time.
func benchPost(b *testing.B, s *server, method, path string, body []byte) {
	b.ReportAllocs()
	b.SetParallelism(16) // 32 clients on 2 cores, as a loaded server sees
	before := processCPU()
	defer func() {
		b.ReportMetric(float64((processCPU()-before).Microseconds())/float64(b.N), "cpu-µs/op")
	}()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		for pb.Next() {
			var rd io.Reader
			if body != nil {
				rd = bytes.NewReader(body)
			}
			req, _ := http.NewRequest(method, s.url+path, rd)
			req.Header.Set("X-API-Key", s.admin)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || bytes.Contains(out, []byte(`"errors"`)) {
				b.Fatalf("%d %s", res.StatusCode, out)
			}
		}
	})
}

// The query of the benchmark: 20 users with their posts' titles.
func BenchmarkUsersWithPosts(b *testing.B) {
	s := benchServer(b)
	benchPost(b, s, http.MethodPost, "/graphql", []byte(`{"query":"{ users(limit: 20) { id name posts { title } } }"}`))
}

// One user over GraphQL, and the same over REST.
func BenchmarkUserGraphQL(b *testing.B) {
	s := benchServer(b)
	benchPost(b, s, http.MethodPost, "/graphql", []byte(`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"7"}}`))
}

func BenchmarkUserREST(b *testing.B) {
	s := benchServer(b)
	benchPost(b, s, http.MethodGet, "/api/users/7", nil)
}

// The same three on PostgreSQL.
func BenchmarkPostgresUsersWithPosts(b *testing.B) {
	s := benchPostgres(b)
	benchPost(b, s, http.MethodPost, "/graphql", []byte(`{"query":"{ users(limit: 20) { id name posts { title } } }"}`))
}

func BenchmarkPostgresUserGraphQL(b *testing.B) {
	s := benchPostgres(b)
	benchPost(b, s, http.MethodPost, "/graphql", []byte(`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"7"}}`))
}

func BenchmarkPostgresUserREST(b *testing.B) {
	s := benchPostgres(b)
	benchPost(b, s, http.MethodGet, "/api/users/7", nil)
}

// The REST and GraphQL reads of one user on PostgreSQL with the record
// cache of an instance that is the only writer (postgres.Options.Solo).
func BenchmarkPostgresSoloUserREST(b *testing.B) {
	s := benchPostgresWith(b, postgres.Options{Solo: true})
	benchPost(b, s, http.MethodGet, "/api/users/7", nil)
}

func BenchmarkPostgresSoloUserGraphQL(b *testing.B) {
	s := benchPostgresWith(b, postgres.Options{Solo: true})
	benchPost(b, s, http.MethodPost, "/graphql", []byte(`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"7"}}`))
}

// One event to 1,000 subscribers over WebSocket, as bench/subscribers
// measures with 10,000, the clients in the same process: an op is one
// event reaching every subscriber.
func BenchmarkFanOut(b *testing.B) {
	s := mustServer(b, backends()[0].open(b, nil), func(o *graph.Options, _ *rhttp.Config) {
		o.WebSocket.MaxPerCaller, o.WebSocket.MaxPerAddr = -1, -1 // one key, one address
	})
	const n = 1000
	var got atomic.Int64
	all := make(chan struct{}, 1)
	for range n {
		c := s.dial(b, "graphql-transport-ws", nil)
		c.init(map[string]any{"X-API-Key": s.admin})
		c.subscribe("1", "subscription { userCreated { name } }")
		go func() {
			for {
				if _, _, err := c.conn.Read(context.Background()); err != nil {
					return
				}
				if got.Add(1)%n == 0 {
					all <- struct{}{}
				}
			}
		}()
	}
	waitFor(b, "the subscribers", func() bool { return s.hub.Subscribers("userCreated") == n })
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.hub.Deliver(userEvent(int64(1_000_000+i), "Fan"))
		<-all
	}
}

var _ = resourceapi.Users

// processCPU returns the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
