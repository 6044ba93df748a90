package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
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
	lq, err := rhttp.ParseListQuery(resourceapi.Users, params)
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

// TestCacheClearedByForeignCommitsOnly checks that the store's own commits
// leave the cache of other records alone, and that a commit from another
// connection (another process, as far as SQLite can tell) clears all of it.
func TestCacheClearedByForeignCommitsOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "foreign.db")
	db := mustOpen(t, path, sqlite.Options{Sync: sqlite.SyncNormal})
	for i := range 3 {
		mustCreate(t, db, "User", fmt.Sprintf("user%d@example.com", i))
	}
	if _, err := db.Get(ctx, resourceapi.Users, 1); err != nil {
		t.Fatal(err)
	}
	clears := func() uint64 {
		_, _, _, _, n := sqlstore.CacheStats(db.Store)
		return n
	}
	for i := range 5 {
		if _, err := db.Update(ctx, resourceapi.Users, 2, resourceapi.Record{"name": fmt.Sprint("Own ", i)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Get(ctx, resourceapi.Users, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := clears(); n != 0 {
		t.Fatalf("the store's own commits cleared the cache %d times, want 0", n)
	}

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("UPDATE users SET name = 'Foreign' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	rec, err := db.Get(ctx, resourceapi.Users, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rec["name"] != "Foreign" {
		t.Fatalf("after a foreign commit, name = %q, want %q", rec["name"], "Foreign")
	}
	if n := clears(); n != 1 {
		t.Fatalf("a foreign commit cleared the cache %d times, want 1", n)
	}
}

// TestCachedAccountSurvivesSignUps checks that the account an API key finds
// stays cached while other users are created (a creation changes nothing an
// existing caller is authenticated by), and that a write of the account's
// own user, or of an API key, still drops it: the next lookup reads the
// database and sees the change.
func TestCachedAccountSurvivesSignUps(t *testing.T) {
	ctx := context.Background()
	reads := 0
	counting := false
	db := mustOpen(t, filepath.Join(t.TempDir(), "accounts.db"), sqlite.Options{Sync: sqlite.SyncNormal,
		OnStatement: func(q string) {
			if counting && strings.Contains(q, "FROM users u") {
				reads++
			}
		}})
	owner := mustCreate(t, db, "Owner", "owner@example.com")
	secret, _ := resourceapi.NewAPIKey(nil)
	other, _ := resourceapi.NewAPIKey(nil)
	createKey := func(key string) {
		t.Helper()
		rec := resourceapi.Record{"user_id": owner.ID(), "key": key}
		if err := resourceapi.Validate(resourceapi.APIKeys, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		rec["prefix"], rec["key"] = key[:12], resourceapi.HashToken(key) // as the Service stores it
		if _, err := db.Create(ctx, resourceapi.APIKeys, rec); err != nil {
			t.Fatal(err)
		}
	}
	createKey(secret)
	lookup := func() resourceapi.Account {
		t.Helper()
		acct, err := db.AccountByAPIKey(ctx, resourceapi.HashTokenBytes(secret))
		if err != nil {
			t.Fatal(err)
		}
		return acct
	}
	lookup() // the account the key names, cached
	counting = true
	for i := range 3 {
		mustCreate(t, db, "New", fmt.Sprintf("new%d@example.com", i))
		if acct := lookup(); acct.User["name"] != "Owner" {
			t.Fatalf("name = %v, want Owner", acct.User["name"])
		}
	}
	if reads != 0 {
		t.Fatalf("after sign-ups the account was read %d times from the database, want 0 (cached)", reads)
	}
	if _, err := db.Update(ctx, resourceapi.Users, owner.ID(), resourceapi.Record{"name": "Renamed"}, nil); err != nil {
		t.Fatal(err)
	}
	if acct := lookup(); acct.User["name"] != "Renamed" || reads != 1 {
		t.Fatalf("after the owner's update: name %v after %d reads, want Renamed after 1", acct.User["name"], reads)
	}
	createKey(other)
	if lookup(); reads != 2 {
		t.Fatalf("after a key's creation: %d reads, want 2 (a write of api_keys drops the key's user)", reads)
	}
}
