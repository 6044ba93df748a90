package sqlite

import (
	"path/filepath"
	"testing"
)

// BenchmarkWatchCommits is the check every read of the cache makes for
// other processes' commits, when there are none.
func BenchmarkWatchCommits(b *testing.B) {
	db, err := Open(b.Context(), filepath.Join(b.TempDir(), "watch.db"), Options{Sync: SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if !db.watch.useIndex.Load() {
		b.Skip("the WAL index is not used")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := db.watch.commits(); !ok {
			b.Fatal("cannot tell")
		}
	}
}
