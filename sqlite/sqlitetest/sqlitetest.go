// Package sqlitetest gives tests a SQLite file whose schema is already up to
// date, so that a test opening a store does not run every migration again.
//
// Under the race detector the SQLite engine (compiled from C to Go) runs
// each migration's statements many times slower than in production, and the
// suites open hundreds of stores: migrating once per test binary and copying
// the result is what keeps `go test -race ./...` within its time. The
// migrations themselves are tested where they are tested today (the sqlite
// package's migration and schema tests open empty files), and the copy is
// made by sqlite.Migrate, the same code a server runs.
package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/sqlite"
)

var (
	once     sync.Once
	image    []byte
	imageErr error
)

// Migrated returns the path of a new file, test.db in tb.TempDir(), holding
// a database with every migration applied and no rows but what the
// migrations insert: what sqlite.Open would make of an empty file, the same
// bytes for every call in a test binary (the first call migrates them, as
// pgtest.Migrated does for PostgreSQL).
func Migrated(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { image, imageErr = migrated() })
	if imageErr != nil {
		tb.Fatalf("sqlitetest: %v", imageErr)
	}
	path := filepath.Join(tb.TempDir(), "test.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		tb.Fatalf("sqlitetest: %v", err)
	}
	return path
}

// migrated runs the migrations on a new file and returns its bytes. Closing
// the last connection checkpoints the write-ahead log into the file and
// removes it; a log left behind would mean the bytes are not the whole
// database, so that is an error rather than a silent copy of half of it.
func migrated() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sqlitetest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "migrated.db")
	if err := sqlite.Migrate(context.Background(), path); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s-wal holds %d bytes after the migrations closed it", path, fi.Size())
	}
	return os.ReadFile(path)
}
