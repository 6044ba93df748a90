package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
)

// TestBackup copies a database while the store writes it: the copy is
// whole, opens as a store, and holds every write committed before the copy
// began.
func TestBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	create := func(i int) int64 {
		rec, err := db.Create(ctx, resourceapi.Products, resourceapi.Record{"name": "Product", "price_cents": int64(i)})
		if err != nil {
			t.Error(err)
			return 0
		}
		return rec.ID()
	}
	var before []int64
	for i := range 200 {
		before = append(before, create(i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 100_000; i++ {
			select {
			case <-stop:
				return
			default:
				create(i)
			}
		}
	})
	var last, lastTotal int64
	dst := filepath.Join(dir, "copy.db")
	err = sqlite.Backup(ctx, path, dst, sqlite.BackupOptions{Progress: func(written, total int64) { last, lastTotal = written, total }})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup = %v", err)
	}
	if fi, err := os.Stat(dst); err != nil || last != fi.Size() || lastTotal != fi.Size() {
		t.Errorf("last progress %d of %d, want the copy's size (%v)", last, lastTotal, err)
	}

	raw, err := sql.Open("sqlite", "file:"+dst+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
	raw.Close()
	cp, err := sqlite.Open(ctx, dst, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	for _, id := range before {
		if _, err := cp.Get(ctx, resourceapi.Products, id); err != nil {
			t.Fatalf("product %d, committed before the backup: %v", id, err)
		}
	}
}

// TestBackupRefusals: Backup creates no database, overwrites a file only
// when told, never the database itself, and leaves no partial file.
func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "none.db")
	if err := sqlite.Backup(ctx, missing, filepath.Join(dir, "b.db"), sqlite.BackupOptions{}); !errors.Is(err, sqlite.ErrNoDatabase) {
		t.Errorf("Backup of a missing database = %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("Backup of a missing database created its directory")
	}

	path := filepath.Join(dir, "live.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dst := filepath.Join(dir, "b.db")
	os.WriteFile(dst, []byte("old"), 0o600)
	if err := sqlite.Backup(ctx, path, dst, sqlite.BackupOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Backup over a file = %v, want fs.ErrExist", err)
	}
	if err := sqlite.Backup(ctx, path, dst, sqlite.BackupOptions{Overwrite: true}); err != nil {
		t.Errorf("Backup with Overwrite = %v", err)
	}
	if err := sqlite.Backup(ctx, path, path, sqlite.BackupOptions{Overwrite: true}); err == nil {
		t.Errorf("Backup over the database itself succeeded")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := sqlite.Backup(canceled, path, filepath.Join(dir, "c.db"), sqlite.BackupOptions{}); err == nil {
		t.Errorf("Backup with a canceled context succeeded")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, n := range names {
		if n != "live.db" && n != "live.db-wal" && n != "live.db-shm" && n != "live.db.lock" && n != "b.db" {
			t.Errorf("unexpected file %s left in %v", n, names)
		}
	}
}
