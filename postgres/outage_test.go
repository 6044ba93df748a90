package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestReadRetriedOnFreshConnection ends the store's sessions on the server
// (pg_terminate_backend, what a restart does to them: SQLSTATE 57P01) and
// reads: the read fails on the dead pooled connection, runs once more on a
// fresh one, and succeeds; so does a write, whose BEGIN failed the same way
// before anything of it ran. Without the retry both failed (a 500). Only
// this test's own database's sessions are ended: other tests on the server
// go on undisturbed.
func TestReadRetriedOnFreshConnection(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	var statements atomic.Int64
	// One connection, reused at once, so database/sql's own check of a
	// connection idle for over a second (a ping) does not find it dead first.
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 1, OnStatement: func(string) { statements.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := mustCreateUser(t, db, "Ann", "ann@example.com")
	admin := mustAdmin(t, url)

	mustTerminate(t, admin)
	before := statements.Load()
	got, err := db.Get(ctx, resourceapi.Users, u)
	if err != nil {
		t.Fatalf("Get after the session was ended: %v", err)
	}
	if got.ID() != u {
		t.Fatalf("Get = %v, want user %d", got, u)
	}
	if n := statements.Load() - before; n != 2 {
		t.Errorf("Get ran %d statements, want 2: the one that failed on the dead connection and its retry", n)
	}

	mustTerminate(t, admin)
	if _, err := db.Create(ctx, resourceapi.Users, mustValid(t, resourceapi.Record{"name": "Bob", "email": "bob@example.com"})); err != nil {
		t.Fatalf("Create after the session was ended: %v", err)
	}
}

// TestOutage takes the database away behind a proxy (refused connections,
// then a server starting up, 57P03) and brings it back, twice: while it is
// away every call fails with CodeUnavailable and a RetryAfter, the log has
// one warning per outage and a line when it ends, and nothing else.
func TestOutage(t *testing.T) {
	ctx := context.Background()
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := mustCreateUser(t, db, "Ann", "ann@example.com")
	q, err := resourceapi.NewListQuery(resourceapi.Users, resourceapi.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		for i, down := range []func(){proxy.Refuse, proxy.StartingUp} {
			down()
			for range 3 {
				_, err := db.Get(ctx, resourceapi.Users, u)
				mustUnavailable(t, "Get", err)
				if cause := []string{"connection refused", "57P03"}[i]; !strings.Contains(err.Error(), cause) {
					t.Errorf("Get = %v, want the cause %s in the error (for the log)", err, cause)
				}
				_, err = db.List(ctx, resourceapi.Users, q)
				mustUnavailable(t, "List", err)
				_, err = db.Create(ctx, resourceapi.Users, mustValid(t, resourceapi.Record{"name": "X", "email": "x@example.com"}))
				mustUnavailable(t, "Create", err)
				mustUnavailable(t, "Ping", db.Ping(ctx))
			}
			if i == 0 {
				continue // still down: the same outage
			}
			proxy.Restore()
			if _, err := db.Get(ctx, resourceapi.Users, u); err != nil {
				t.Fatalf("round %d: Get once the database is back: %v", round, err)
			}
		}
		if got := strings.Count(logs.String(), "level=WARN"); got != round {
			t.Errorf("after %d outages: %d warnings, want %d:\n%s", round, got, round, logs.String())
		}
		if got := strings.Count(logs.String(), "database available again"); got != round {
			t.Errorf("after %d outages: %d lines saying the database is back, want %d:\n%s", round, got, round, logs.String())
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the log has errors:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the warnings do not give the cause:\n%s", logs.String())
	}
}

func mustUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	e := resourceapi.ErrorOf(err)
	if e.Code != resourceapi.CodeUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("%s while the database is away = %v (code %s, retry after %v), want %s with a RetryAfter",
			what, err, e.Code, e.RetryAfter, resourceapi.CodeUnavailable)
	}
}

func mustValid(t *testing.T, rec resourceapi.Record) resourceapi.Record {
	t.Helper()
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	return rec
}

func mustCreateUser(t *testing.T, db *postgres.DB, name, email string) int64 {
	t.Helper()
	rec, err := db.Create(context.Background(), resourceapi.Users, mustValid(t, resourceapi.Record{"name": name, "email": email}))
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID()
}

func mustAdmin(t *testing.T, url string) *sql.DB {
	t.Helper()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { admin.Close() })
	return admin
}

// mustSeeded opens a store of at most maxConns connections on a new
// database, and an administrator's connection to it (mustAdmin) that has
// run each of statements: the setup of the tests that read PostgreSQL's
// own statistics of a seeded table.
func mustSeeded(t *testing.T, maxConns int, statements ...string) (*postgres.DB, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	admin := mustAdmin(t, url)
	for _, q := range statements {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db, admin
}

// queryIDs returns the first column of every row of query, an id.
func queryIDs(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) []int64 {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// mustTerminate ends every other session on admin's database and waits
// until they are gone.
func mustTerminate(t *testing.T, admin *sql.DB) {
	t.Helper()
	ctx := context.Background()
	const others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
	if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) "+others); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) "+others).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still there 10 s after pg_terminate_backend", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
