package sqlite_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/storetest"
)

func mustOpen(t *testing.T, opts sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestStore(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store { return mustOpen(t, sqlite.Options{}) })
}

// TestStoreWithoutCache runs the suite with the record cache off, so that a
// cache bug cannot hide a query bug, or the other way round.
func TestStoreWithoutCache(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store {
		return mustOpen(t, sqlite.Options{CacheRecords: -1, Sync: sqlite.SyncNormal})
	})
}

// TestSearchFollowsWrites checks the full-text index, which the writer brings
// up to date once per transaction, against every kind of write: after each
// commit, q finds exactly the current text.
func TestSearchFollowsWrites(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{CacheRecords: -1})
	users := resourceapi.Users
	search := func(q string) int {
		t.Helper()
		lq, err := resourceapi.ParseListQuery(users, url.Values{"q": {q}, "status": {"all"}})
		if err != nil {
			t.Fatal(err)
		}
		page, err := db.List(ctx, users, lq)
		if err != nil {
			t.Fatalf("List(q=%s): %v", q, err)
		}
		return page.Total
	}
	check := func(q string, want int) {
		t.Helper()
		if got := search(q); got != want {
			t.Fatalf("q=%s: total = %d, want %d", q, got, want)
		}
	}

	rec, err := db.Create(ctx, users, resourceapi.Record{"name": "Grace Hopper", "email": "grace@navy.mil"})
	if err != nil {
		t.Fatal(err)
	}
	check("hopper", 1)
	if _, err := db.Update(ctx, users, rec.ID(), resourceapi.Record{"name": "Amazing Grace"}, nil); err != nil {
		t.Fatal(err)
	}
	check("hopper", 0)
	check("amazing", 1)
	if _, _, err := db.Replace(ctx, users, rec.ID(), resourceapi.Record{"name": "Ada", "email": "ada@example.com"}, nil); err != nil {
		t.Fatal(err)
	}
	check("navy", 0)
	check("ada@ex", 1)
	// A failed write in a batch is undone by a savepoint; the index must
	// follow the rollback too.
	if _, err := db.Create(ctx, users, resourceapi.Record{"name": "Zebedee", "email": "ADA@example.com"}); resourceapi.ErrorCode(err) != resourceapi.CodeConflict {
		t.Fatalf("duplicate create: %v, want CONFLICT", err)
	}
	check("zebedee", 0)
	if err := db.Delete(ctx, users, rec.ID(), nil); err != nil {
		t.Fatal(err)
	}
	check("ada", 0)
}

// TestOneProcessPerFile checks that a second store on a file that is in use
// fails to open (the cache assumes one writer), and that closing the first
// frees the file.
func TestOneProcessPerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.db")
	ctx := context.Background()
	first, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if second, err := sqlite.Open(ctx, path, sqlite.Options{}); err == nil {
		second.Close()
		t.Fatal("second Open of a file in use succeeded, want an error")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	again.Close()
}

// TestMigrate checks that Migrate creates the file's directory, and that it
// takes the lock Open takes: it refuses a file a server has open, and no
// server starts on a file while it migrates.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new", "dir", "m.db")
	if err := sqlite.Migrate(ctx, path); err != nil {
		t.Fatalf("Migrate in a directory that does not exist: %v", err)
	}

	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = sqlite.Migrate(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "in use by another resourceapi process") {
		t.Fatalf("Migrate of a file in use = %v, want an error saying it is in use", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var openErr error
	restore := sqlite.SetMigratingHook(func() {
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err == nil {
			db.Close()
		}
		openErr = err
	})
	defer restore()
	if err := sqlite.Migrate(ctx, path); err != nil {
		t.Fatalf("Migrate after the server closed: %v", err)
	}
	if openErr == nil || !strings.Contains(openErr.Error(), "in use by another resourceapi process") {
		t.Fatalf("Open during Migrate = %v, want an error saying the file is in use", openErr)
	}
}
