package sqlstore_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
)

func mustOpen(t *testing.T, path string, opts sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustCreate(t *testing.T, db *sqlite.DB, name, email string) resourceapi.Record {
	t.Helper()
	rec := resourceapi.Record{"name": name, "email": email}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	out, err := db.Create(context.Background(), resourceapi.Users, rec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustList(t *testing.T, db *sqlite.DB, params url.Values) resourceapi.Page {
	t.Helper()
	lq, err := resourceapi.ParseListQuery(resourceapi.Users, params)
	if err != nil {
		t.Fatal(err)
	}
	page, err := db.List(context.Background(), resourceapi.Users, lq)
	if err != nil {
		t.Fatalf("List(%v): %v", params, err)
	}
	return page
}

// TestCacheBoundedUnderDistinctQueries lists distinct searches that match
// nothing, twenty times as many as the cache may hold, through the store:
// the cache stays within its bounds on entries and bytes. A write afterwards
// invalidates them without visiting them (they are still there, and no
// longer served). TestCacheBoundedUnder200kQueries in package sqlstore runs
// the 200,000 queries of issue 5 against the cache alone, which is faster.
func TestCacheBoundedUnderDistinctQueries(t *testing.T) {
	const bound = 256
	const queries = 20 * bound
	db := mustOpen(t, filepath.Join(t.TempDir(), "bounded.db"), sqlite.Options{Sync: sqlite.SyncNormal, CacheRecords: bound})
	mustCreate(t, db, "Ada", "ada@example.com")
	for i := range queries {
		if page := mustList(t, db, url.Values{"q": {noMatch(i)}}); page.Total != 0 {
			t.Fatalf("q=%s matched %d records", noMatch(i), page.Total)
		}
	}
	entries, bytes, maxEntries, maxBytes, _ := sqlstore.CacheStats(db.Store)
	if maxEntries != bound || maxBytes != bound*sqlstore.EntryBytes {
		t.Fatalf("bounds = %d entries, %d bytes; want %d and %d", maxEntries, maxBytes, bound, bound*sqlstore.EntryBytes)
	}
	if entries > maxEntries || bytes > maxBytes {
		t.Fatalf("after %d distinct queries: %d entries of %d bytes, want at most %d and %d", queries, entries, bytes, maxEntries, maxBytes)
	}
	if entries < maxEntries/2 {
		t.Fatalf("after %d distinct queries: %d entries, want the cache in use (bound %d)", queries, entries, maxEntries)
	}

	last := url.Values{"q": {noMatch(queries - 1)}}
	mustList(t, db, last) // a hit
	mustCreate(t, db, noMatch(queries-1), "new@example.com")
	if after, _, _, _, _ := sqlstore.CacheStats(db.Store); after != entries {
		t.Fatalf("the write changed the cache from %d to %d entries: it walked them", entries, after)
	}
	if page := mustList(t, db, last); page.Total != 1 {
		t.Fatalf("after a write, a cached page of its resource was served: total %d, want 1", page.Total)
	}
}

// noMatch returns the i-th of 250,000 distinct searches of two CJK
// characters, which no seeded record contains. Searches shorter than three
// characters scan with LIKE, which costs less than the full-text index on a
// table of one record.
func noMatch(i int) string { return string([]rune{0x4e00 + rune(i/500), 0x4e00 + rune(i%500)}) }
