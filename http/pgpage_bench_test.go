package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// BenchmarkPostgresPage serves pages of 20 users with their total from
// PostgreSQL without the record cache (as bench/peers.sh's pg-page3 and
// pg-page-rand with BENCH_PG_SOLO=off), 10,000 users, through the whole
// handler with an admin's API key; cpu-ns/op is this process's CPU (the
// server's share of a page; PostgreSQL's is its own processes').
func BenchmarkPostgresPage(b *testing.B) {
	h := postgresBenchHandler(b, postgres.Options{MaxConns: 8})
	b.Run("page3", func(b *testing.B) {
		serveParallel(b, h, get("/api/users?page=3&limit=20"), http.StatusOK)
	})
	b.Run("rand", func(b *testing.B) {
		serveParallel(b, h, func(i int64) *http.Request {
			return httptest.NewRequest("GET", fmt.Sprintf("/api/users?page=%d&limit=20", 1+(i*7919)%500), nil)
		}, http.StatusOK)
	})
}

// postgresBenchHandler serves a migrated PostgreSQL database of 10,000
// users (roles ["user"], as bench/peers seed makes them, then VACUUM
// ANALYZE) opened with opts, through the whole handler with an admin's API
// key. With opts.Solo it waits, boundedly, until the store holds the
// database, so that the record cache is on as the server runs it. It skips
// b where no PostgreSQL is given.
func postgresBenchHandler(b *testing.B, opts postgres.Options) http.Handler {
	b.Helper()
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
	db, err := postgres.Open(ctx, url, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for deadline := time.Now().Add(10 * time.Second); opts.Solo && !db.Holding() && time.Now().Before(deadline); {
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
	return withKey(rhttp.NewServer(cfg).Handler(), k["key"].(string))
}
