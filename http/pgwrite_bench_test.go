package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// BenchmarkPostgresWrite serves bench/peers.sh's pg-post (POST a user) and
// pg-patch (PATCH a user's age) on PostgreSQL, 10,000 users, through the
// whole handler with an admin's API key, 64 requests at a time as wrk
// -c64 sends them, with the record cache (solo) as the server runs by
// default. cpu-ns/op is this process's CPU per request: the server's own
// share of a write (PostgreSQL's is its processes'). The outbox relay does
// not run, so events stay unpublished.
func BenchmarkPostgresWrite(b *testing.B) {
	if os.Getenv(pgtest.EnvURL) == "" {
		b.Skip(pgtest.EnvURL + " is not set")
	}
	ctx := context.Background()
	url := pgtest.Migrated(b)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, age, roles, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0'), 'user' || i || '@example.com', 'user' || i || '@example.com', 18 + i % 60, '["user"]', now(), now()
		 FROM generate_series(1, 10000) i`,
		`VACUUM ANALYZE`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	db, err := postgres.Open(ctx, url, postgres.Options{Solo: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for deadline := time.Now().Add(10 * time.Second); !db.Holding() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cfg := testConfig(b, db)
	u, err := cfg.Service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
		"name": "Admin", "email": adminEmail, "roles": []string{resourceapi.RoleAdmin}, "password": "correct horse battery"})
	if err != nil {
		b.Fatal(err)
	}
	k, err := cfg.Service.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": u.ID()})
	if err != nil {
		b.Fatal(err)
	}
	h := withKey(rhttp.NewServer(cfg).Handler(), k["key"].(string))
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
