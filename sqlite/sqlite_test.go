package sqlite_test

import (
	"context"
	"path/filepath"
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
