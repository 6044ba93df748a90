package http_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
)

// BenchmarkMillionPage reads page 1, 100 and 10,000 (100 products a page,
// sorted by name) of 1,000,000 products by page number (OFFSET) and by cursor
// (after=), on each store, in one run (PostgreSQL when
// RESOURCEAPI_TEST_POSTGRES_URL is set), with the SQLite cache off so that
// every read is a query. The rows are made by one INSERT ... SELECT in the
// database, not by a million writes through the store.
// RESOURCEAPI_BENCH_MILLION_ROWS sets another number of rows.
func BenchmarkMillionPage(b *testing.B) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("RESOURCEAPI_BENCH_MILLION_ROWS")); err == nil && v > 0 {
		rows = v
	}
	ctx := context.Background()
	// Names repeat every 1,000 rows, so that the sort key has ties for
	// the cursor to break by id.
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	stores := []struct {
		name string
		open func(b *testing.B) resourceapi.Store
	}{
		{"sqlite", func(b *testing.B) resourceapi.Store {
			path := filepath.Join(b.TempDir(), "million.db")
			db, err := sqlite.Open(ctx, path, sqlite.Options{Sync: sqlite.SyncNormal, CacheRecords: -1})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
			raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(off)")
			if err != nil {
				b.Fatal(err)
			}
			mustBulk(b, raw, nil,
				`INSERT INTO products (id, name, price_cents, created_at, updated_at)
				 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < `+strconv.Itoa(rows)+`)
				 SELECT i, 'Product ' || printf('%04d', i % 1000), i % 100000, `+strconv.FormatInt(now.UnixMilli(), 10)+` + i, `+strconv.FormatInt(now.UnixMilli(), 10)+` + i FROM n`,
				// What the search index would take in: nothing reads it here.
				`DELETE FROM products_fts_pending`)
			raw.Close()
			db, err = sqlite.Open(ctx, path, sqlite.Options{Sync: sqlite.SyncNormal, CacheRecords: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}},
	}
	if os.Getenv(pgtest.EnvURL) != "" {
		stores = append(stores, struct {
			name string
			open func(b *testing.B) resourceapi.Store
		}{"postgres", func(b *testing.B) resourceapi.Store {
			url := pgtest.NewDatabase(b)
			db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 8})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			raw, err := sql.Open("pgx", url)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			// One connection, without the triggers (row counts, search),
			// which would cost a million updates of one row: the pages
			// read neither.
			raw.SetMaxOpenConns(1)
			mustBulk(b, raw, []any{now},
				`SET session_replication_role = replica`,
				`INSERT INTO products (id, name, price_cents, created_at, updated_at)
				 SELECT i, 'Product ' || lpad((i % 1000)::text, 4, '0'), i % 100000,
				        $1::timestamptz + i * interval '1 millisecond', $1::timestamptz + i * interval '1 millisecond'
				 FROM generate_series(1, `+strconv.Itoa(rows)+`) AS i`,
				`SET session_replication_role = DEFAULT`,
				`ANALYZE products`)
			return db
		}})
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			benchPages(b, store, resourceapi.Products, rows, 100, 1, 100, 10_000)
		})
	}
}

// mustBulk runs statements on a database outside the store, each with the
// arguments it names of args ($1 ... on PostgreSQL).
func mustBulk(b *testing.B, db *sql.DB, args []any, stmts ...string) {
	b.Helper()
	for _, s := range stmts {
		var a []any
		for i, v := range args {
			if strings.Contains(s, "$"+strconv.Itoa(i+1)) {
				a = append(a, v)
			}
		}
		if _, err := db.Exec(s, a...); err != nil {
			b.Fatalf("%.60s...: %v", s, err)
		}
	}
}
