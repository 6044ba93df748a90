// Package pgtest gives tests a fresh PostgreSQL database of their own.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/resourceapi/resourceapi/postgres"
)

// EnvURL names the variable that points the tests at a PostgreSQL server.
const EnvURL = "RESOURCEAPI_TEST_POSTGRES_URL"

// URL returns the server URL from EnvURL, skipping tb with a clear message
// when it is not set.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		tb.Skipf("PostgreSQL tests skipped: set %s (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable) to run them", EnvURL)
	}
	return u
}

// NewDatabase creates an empty database on the server at EnvURL (skipping tb
// when it is unset), drops it when tb ends, and returns its URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return create(tb, "")
}

// Migrated returns the URL of a new database, dropped when tb ends, with
// the current schema: a copy (Clone) of one that the first call in this
// process creates and migrates (postgres.Open), which costs a fraction of
// migrating each database afresh. A package whose tests call Migrated
// drops that template at the end of its TestMain with DropTemplate.
func Migrated(tb testing.TB) string {
	tb.Helper()
	base := URL(tb)
	migrated.Lock()
	if migrated.url == "" {
		name := "resourceapi_template_" + strings.ToLower(rand.Text()[:16])
		u, err := createDatabase(base, name, "")
		if err == nil {
			var db *postgres.DB
			if db, err = postgres.Open(context.Background(), u, postgres.Options{}); err == nil {
				err = db.Close()
			}
			if err != nil {
				dropDatabase(base, name)
			}
		}
		if err != nil {
			migrated.Unlock()
			tb.Fatalf("pgtest: migrate the template: %v", err)
		}
		migrated.url = u
	}
	u := migrated.url
	migrated.Unlock()
	return Clone(tb, u)
}

// migrated is the template database Migrated copies, once made.
var migrated struct {
	sync.Mutex
	url string
}

// DropTemplate drops the template Migrated made in this process; call it
// from TestMain after the tests have run.
func DropTemplate() {
	migrated.Lock()
	defer migrated.Unlock()
	base := os.Getenv(EnvURL)
	if migrated.url == "" || base == "" {
		return
	}
	if p, err := url.Parse(migrated.url); err == nil {
		dropDatabase(base, strings.TrimPrefix(p.Path, "/"))
	}
	migrated.url = ""
}

// Main is a TestMain for a package whose tests call Migrated: it runs the
// tests, drops the template with DropTemplate and exits with their code.
func Main(m *testing.M) {
	code := m.Run()
	DropTemplate()
	os.Exit(code)
}

// createDatabase creates database name on the server at base with the given
// CREATE DATABASE options and returns its URL.
func createDatabase(base, name, options string) (string, error) {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	// The name is ours (base32 letters and digits), not input: safe to splice.
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name+options); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// dropDatabase drops database name on the server at base, whoever is
// connected to it.
func dropDatabase(base, name string) {
	if admin, err := sql.Open("pgx", base); err == nil {
		admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close()
	}
}

// create creates a database with the given CREATE DATABASE options, drops it
// when tb ends, and returns its URL.
func create(tb testing.TB, options string) string {
	tb.Helper()
	base := URL(tb)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { admin.Close() })
	name := "resourceapi_test_" + strings.ToLower(rand.Text()[:16])
	ctx := context.Background()
	// The name is ours (base32 letters and digits), not input: safe to splice.
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+options); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

// WaitLockedOr waits until a session of db's database waits for a lock
// (pg_stat_activity's wait_event_type Lock), and returns true, or until
// done is closed, and returns false: a test that starts work that must wait
// for another transaction learns that it does, or that it did not have to.
func WaitLockedOr(tb testing.TB, db *sql.DB, done <-chan struct{}) bool {
	tb.Helper()
	return WaitLockedWhereOr(tb, db, "", done)
}

// WaitLockedWhereOr is WaitLockedOr for the sessions that also match where
// (a condition on pg_stat_activity's columns; "" for all): a test that
// starts work that must not wait can leave out the sessions that may (the
// relay's, which waits for open transactions with events).
func WaitLockedWhereOr(tb testing.TB, db *sql.DB, where string, done <-chan struct{}) bool {
	tb.Helper()
	if where != "" {
		where = " AND (" + where + ")"
	}
	for {
		select {
		case <-done:
			return false
		default:
		}
		var n int
		err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`+where).Scan(&n)
		if err != nil {
			tb.Fatalf("pgtest: pg_stat_activity: %v", err)
		}
		if n > 0 {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Clone creates a database on the server at EnvURL as a copy of the one at
// template (CREATE DATABASE ... TEMPLATE: a file copy, much cheaper than
// migrating an empty database again), drops it when tb ends, and returns its
// URL. Nothing may be connected to template meanwhile (PostgreSQL refuses
// the copy otherwise): close every store on it first.
func Clone(tb testing.TB, template string) string {
	tb.Helper()
	t, err := url.Parse(template)
	if err != nil {
		tb.Fatalf("pgtest: template %s: %v", template, err)
	}
	return create(tb, " TEMPLATE "+quote(strings.TrimPrefix(t.Path, "/")))
}

// quote quotes a database name as an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
