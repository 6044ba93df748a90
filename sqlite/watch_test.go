package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestWatchUsesWALIndex checks, where the WAL index can be mapped, that it
// passes its self-checks, so that reads of the cache run no query between
// writes: a silent fallback to the exact check would keep the store correct
// but slow.
func TestWatchUsesWALIndex(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the WAL index is not mapped here")
	}
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "watch.db"), Options{Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := db.watch
	if !w.useIndex.Load() {
		t.Fatal("the WAL index is not used after Open")
	}
	for i := range 3 {
		rec := resourceapi.Record{"name": "W", "email": string(rune('a'+i)) + "@example.com"}
		if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Get(ctx, resourceapi.Users, 1); err != nil {
			t.Fatal(err)
		}
		checks := w.started.Load()
		for range 10 {
			if _, err := db.Get(ctx, resourceapi.Users, 1); err != nil {
				t.Fatal(err)
			}
		}
		if got := w.started.Load() - checks; got != 0 {
			t.Fatalf("after write %d, 10 cached reads ran %d exact checks, want 0", i+1, got)
		}
		if !w.useIndex.Load() {
			t.Fatalf("the WAL index failed its self-check after write %d", i+1)
		}
	}
	if n := w.foreign.Load(); n != 0 {
		t.Fatalf("%d foreign commits counted, want 0: the store's own commits are not foreign", n)
	}
}

// TestWatchWithoutWALIndex checks the fallback where the WAL index cannot be
// used: every read of the cache runs the exact check (or shares one), and a
// foreign commit is still seen.
func TestWatchWithoutWALIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fallback.db")
	db, err := Open(ctx, path, Options{Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.watch.close() // as if it could not be mapped
	rec := resourceapi.Record{"name": "Before", "email": "a@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
		t.Fatal(err)
	}
	name := func() any {
		t.Helper()
		got, err := db.Get(ctx, resourceapi.Users, 1)
		if err != nil {
			t.Fatal(err)
		}
		return got["name"]
	}
	name()
	checks := db.watch.started.Load()
	if got := name(); got != "Before" {
		t.Fatalf("name = %q, want %q", got, "Before")
	}
	if db.watch.started.Load() == checks {
		t.Fatal("a cached read without the WAL index ran no exact check")
	}

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("UPDATE users SET name = 'After' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "After" {
		t.Fatalf("after a foreign commit, name = %q, want %q", got, "After")
	}
}

// TestWatchAbandonsFrozenWALIndex maps a copy of the -shm, which no commit
// updates, in place of the real one: the store's first commit finds the
// header unchanged, stops trusting it, and a foreign commit is still seen.
func TestWatchAbandonsFrozenWALIndex(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the WAL index is not mapped here")
	}
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "frozen.db")
	db, err := Open(ctx, path, Options{Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	shm, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(copyPath+"-shm", shm, 0o600); err != nil {
		t.Fatal(err)
	}
	frozen, err := openWALIndex(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	w := db.watch
	w.mu.Lock()
	w.index = frozen
	err = w.check(ctx)
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	rec := resourceapi.Record{"name": "Before", "email": "a@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
		t.Fatal(err)
	}
	if w.useIndex.Load() {
		t.Fatal("a WAL index that the commit left unchanged is still trusted")
	}
	if got, err := db.Get(ctx, resourceapi.Users, 1); err != nil || got["name"] != "Before" {
		t.Fatalf("Get = %v, %v", got, err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("UPDATE users SET name = 'After' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Get(ctx, resourceapi.Users, 1); err != nil || got["name"] != "After" {
		t.Fatalf("after a foreign commit, Get = %v, %v; want the name After", got, err)
	}
}

// TestWatchIndexOutlivesClose checks that the WAL index stays mapped for a
// read that holds it across Close (a read of the cache that loaded the
// header just before the store closed: the graph tests' servers confirm
// sessions while their databases close), and that the mapping goes once
// nothing holds it. Unmapping it in Close, as before, made the read below
// fault.
func TestWatchIndexOutlivesClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the mappings are read from /proc/self/maps")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outlives.db")
	db, err := Open(ctx, path, Options{Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	idx := db.watch.index
	if idx == nil {
		t.Fatal("the WAL index is not mapped after Open")
	}
	var before walHeader
	if !idx.read(&before) || !before.sane() {
		t.Fatal("the WAL index reads inconsistent before Close")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var after walHeader
	idx.read(&after) // faults if Close unmapped it
	if !after.sane() {
		t.Fatalf("after Close, the held index reads %v", after)
	}
	if !mapped(t, path+"-shm") {
		t.Fatal("the -shm is not mapped while a read holds the index")
	}
	idx, db = nil, nil
	for range 200 {
		runtime.GC()
		if !mapped(t, path+"-shm") {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("the -shm is still mapped after 200 collections with nothing holding the index")
}

// mapped reports whether the process maps the file at path.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(maps), path)
}

// TestWatchOwnCommitWindow checks reads between the writer's COMMIT and its
// check of the header (committed), while it still holds the connection: the
// header one commit above the one the transaction began at tells them that
// the only commit since was the writer's, so they use the cache instead of
// asking the database; a foreign commit after it is still never missed.
func TestWatchOwnCommitWindow(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the WAL index is not mapped here")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "window.db")
	db, err := Open(ctx, path, Options{Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec := resourceapi.Record{"name": "W", "email": "w@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
		t.Fatal(err)
	}
	w := db.watch
	if !w.useIndex.Load() {
		t.Skip("the WAL index is not used here")
	}
	before := w.foreign.Load()
	// The writer's transaction, up to its COMMIT, as groupWriter runs it.
	if err := db.writer.begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.writer.conn.exec(ctx, "UPDATE users SET age = 5 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	w.ending(true)
	if err := db.writer.conn.exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if n, ok := w.commits(); !ok || n != before {
		t.Fatalf("right after the writer's own commit, commits() = %d, %v; want %d, true", n, ok, before)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec("UPDATE users SET name = 'Foreign' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.commits(); ok {
		t.Fatal("after a foreign commit, with the writer still holding its connection, commits() claims to know the count")
	}
	if err := w.committed(ctx, true); err != nil {
		t.Fatal(err)
	}
	w.mu.Unlock()
	if n, ok := w.commits(); !ok || n != before+1 {
		t.Fatalf("once the writer is done, commits() = %d, %v; want %d, true", n, ok, before+1)
	}
}

// TestWatchForeignCommitAfterNothingWritten checks that a foreign commit
// right after a writer's transaction that changed nothing (rolled back, or
// committed with no change) is counted: such a transaction leaves the
// WAL-index's iChange as it was, so the next commit that moves it by one is
// another process's, not the writer's own. Before, the header read at BEGIN
// stayed published (ownCommit), and a revocation by the command line in
// that state was not seen by the server's cache (TestManageBesideServer,
// one run in three).
func TestWatchForeignCommitAfterNothingWritten(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the WAL index is not mapped here")
	}
	for _, tc := range []struct {
		name   string
		commit bool
	}{{"rolled back", false}, {"committed, nothing changed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "nothing.db")
			db, err := Open(ctx, path, Options{Sync: SyncNormal})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rec := resourceapi.Record{"name": "W", "email": "w@example.com"}
			if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
				t.Fatal(err)
			}
			w := db.watch
			if !w.useIndex.Load() {
				t.Skip("the WAL index is not used here")
			}
			if err := db.writer.begin(ctx); err != nil {
				t.Fatal(err)
			}
			if err := db.writer.conn.exec(ctx, "UPDATE users SET age = 5 WHERE id = 0"); err != nil {
				t.Fatal(err)
			}
			if err := db.writer.end(ctx, tc.commit, false); err != nil {
				t.Fatal(err)
			}
			before, ok := w.commits()
			if !ok {
				t.Fatal("commits() does not know the count with the writer idle")
			}
			other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, err := other.Exec("UPDATE users SET name = 'Foreign' WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if n, ok := w.commits(); ok && n == before {
				t.Fatalf("after a foreign commit, commits() = %d, true: the commit was taken for the writer's own", n)
			}
		})
	}
}
