package http_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
)

// BenchmarkDeepPage reads page 1, 100 and 2,000 (of 20 users sorted by
// name) by page number (OFFSET) and by cursor (after=) on each store, in
// one run, with the SQLite cache off so that every read is a query.
// RESOURCEAPI_BENCH_DEEP_ROWS sets the number of users (default 50,000;
// page 2,000 needs 40,000).
func BenchmarkDeepPage(b *testing.B) {
	rows := 50_000
	if v, err := strconv.Atoi(os.Getenv("RESOURCEAPI_BENCH_DEEP_ROWS")); err == nil && v > 0 {
		rows = v
	}
	ctx := context.Background()
	stores := []struct {
		name string
		open func(b *testing.B) resourceapi.Store
	}{
		{"sqlite", func(b *testing.B) resourceapi.Store {
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "deep.db"), sqlite.Options{Sync: sqlite.SyncNormal, CacheRecords: -1})
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
			db, err := postgres.Open(ctx, pgtest.NewDatabase(b), postgres.Options{MaxConns: 8})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		}})
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			seedUsers(b, store, rows)
			benchPages(b, store, resourceapi.Users, rows, 20, 1, 100, 2000)
		})
	}
}

// benchPages measures, for each page number, reading that page of limit
// records of resource sorted by name by page number (OFFSET) and by the
// cursor of the record before it, after checking both give the same page.
// Pages past the store's rows are skipped.
func benchPages(b *testing.B, store resourceapi.Store, resource *resourceapi.Resource, rows, limit int, pages ...int) {
	b.Helper()
	ctx := context.Background()
	for _, page := range pages {
		if (page-1)*limit >= rows {
			continue
		}
		byPage := resourceapi.ListQuery{Limit: limit, Sort: "name", NoTotal: true}
		byPage.SetPage(page)
		byCursor := resourceapi.ListQuery{Limit: limit, Sort: "name", NoTotal: true}
		if page > 1 {
			// The cursor of the last record of the page before.
			prev := byPage
			prev.Offset--
			prev.Limit = 1
			p, err := store.List(ctx, resource, prev)
			if err != nil || len(p.Records) != 1 {
				b.Fatalf("record before page %d: %v", page, err)
			}
			c := prev.CursorOf(p.Records[0], false)
			byCursor.Cursor = &c
		}
		want, err := store.List(ctx, resource, byPage)
		if err != nil {
			b.Fatal(err)
		}
		got, err := store.List(ctx, resource, byCursor)
		if err != nil || len(got.Records) != len(want.Records) || len(got.Records) == 0 ||
			got.Records[0].ID() != want.Records[0].ID() || got.Records[len(got.Records)-1].ID() != want.Records[len(want.Records)-1].ID() {
			b.Fatalf("page %d by cursor differs from by number: %v", page, err)
		}
		for _, m := range []struct {
			name string
			q    resourceapi.ListQuery
		}{{"page", byPage}, {"cursor", byCursor}} {
			b.Run(fmt.Sprintf("%s/%d", m.name, page), func(b *testing.B) {
				for b.Loop() {
					if _, err := store.List(ctx, resource, m.q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// seedUsers creates n users in store, on 16 goroutines.
func seedUsers(b *testing.B, store resourceapi.Store, n int) {
	b.Helper()
	ctx := context.Background()
	const workers = 16
	errs := make(chan error, workers)
	var next atomic.Int64
	for range workers {
		go func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					errs <- nil
					return
				}
				rec := resourceapi.Record{
					"name":  fmt.Sprintf("%s %s %d", first[i%int64(len(first))], last[i%int64(len(last))], i),
					"email": fmt.Sprintf("deep%07d@example.com", i),
					"age":   i % 90,
				}
				if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
					errs <- err
					return
				}
				if _, err := store.Create(ctx, resourceapi.Users, rec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
}
