package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// BackupOptions configure Backup.
type BackupOptions struct {
	// Overwrite replaces a file that exists at the destination; without it
	// Backup refuses one.
	Overwrite bool
	// Progress, when set, is called as the copy starts, then now and then
	// from another goroutine while it is written, with the bytes written so
	// far and the size the copy is expected to reach (the source's pages in
	// use), and once more with both equal when the copy is complete. The
	// calls do not overlap.
	Progress func(written, total int64)
}

// ErrNoDatabase is Backup's error when no file exists at the source path.
var ErrNoDatabase = errors.New("no SQLite database")

// Backup writes a consistent copy of the SQLite database at path to dst: the
// database as of one moment, with every transaction committed before it and
// none after, also while a server writes the file. It runs SQLite's
// VACUUM INTO in one read transaction, which a server's writes do not wait
// for (the file is in WAL mode) and which needs none of the file's locks: a
// backup is a reader. The copy is written to a temporary file beside dst,
// flushed to disk, and renamed to dst, so dst never holds a partial copy.
//
// It fails with an error wrapping ErrNoDatabase when path does not exist
// (it never creates a database), with one wrapping fs.ErrExist when dst
// exists and opts.Overwrite is false, and always when dst is the database.
func Backup(ctx context.Context, path, dst string, opts BackupOptions) (err error) {
	src, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup sqlite: %w at %s", ErrNoDatabase, path)
	}
	if err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if !src.Mode().IsRegular() {
		return fmt.Errorf("backup sqlite: %s is not a file", path)
	}
	if dst, err = filepath.Abs(dst); err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if err := checkTarget(src, dst, opts.Overwrite); err != nil {
		return err
	}

	// mode=rw: open the file only if it exists (query_only would refuse
	// VACUUM INTO). No pragma that writes, such as the journal mode, is set:
	// the file is the server's.
	db, err := sql.Open("sqlite", "file:"+uriPath.Replace(path)+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	defer conn.Close()
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-"+rand.Text()[:8])
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	// SQLITE_PROTOCOL: a reader could not take its place in the WAL while
	// the server's checkpoints and commits moved it, after SQLite's own
	// retries (a machine under load). SQLite documents it as one to try
	// again, so the copy is tried again from its start, a few times.
	for attempt := 1; ; attempt++ {
		err = copyInto(ctx, conn, path, tmp, opts.Progress)
		if err == nil || !lockingProtocol(err) || attempt == backupAttempts {
			break
		}
		os.Remove(tmp)
		select {
		case <-ctx.Done():
			return fmt.Errorf("backup sqlite: %w", ctx.Err())
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	// VACUUM INTO does not sync what it wrote: the copy must be on disk
	// before its name says it is complete.
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if err := checkTarget(src, dst, opts.Overwrite); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if err := syncFile(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if opts.Progress != nil {
		if fi, err := os.Stat(dst); err == nil {
			opts.Progress(fi.Size(), fi.Size())
		}
	}
	return nil
}

// checkTarget refuses dst when it is the source database, or when it exists
// and may not be overwritten.
func checkTarget(src fs.FileInfo, dst string, overwrite bool) error {
	fi, err := os.Stat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup sqlite: %w", err)
	}
	if os.SameFile(src, fi) {
		return fmt.Errorf("backup sqlite: %s is the database itself", dst)
	}
	if !overwrite {
		return fmt.Errorf("backup sqlite: %s: %w", dst, fs.ErrExist)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("backup sqlite: %s is not a file", dst)
	}
	return nil
}

// watchProgress calls progress with the size of the file at path, every
// tenth of a second, until the returned function is called.
func watchProgress(path string, total int64, progress func(written, total int64)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if fi, err := os.Stat(path); err == nil {
					progress(min(fi.Size(), total), total)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// syncFile flushes the file or directory at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// backupAttempts is how many times Backup tries its copy when SQLite
// answers SQLITE_PROTOCOL.
const backupAttempts = 5

// lockingProtocol reports SQLite's SQLITE_PROTOCOL (15).
func lockingProtocol(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_PROTOCOL
}

// copyInto writes the database of conn, read in one transaction, to tmp
// with VACUUM INTO, and reports its progress as Backup's.
func copyInto(ctx context.Context, conn *sql.Conn, path, tmp string, progress func(written, total int64)) error {
	var pages, free, pageSize int64
	if err := conn.QueryRowContext(ctx,
		"SELECT (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_size FROM pragma_page_size)",
	).Scan(&pages, &free, &pageSize); err != nil {
		return fmt.Errorf("backup sqlite: %s: %w", path, err)
	}
	total := (pages - free) * pageSize
	if progress != nil {
		progress(0, total)
	}
	stop := watchProgress(tmp, total, progress)
	_, err := conn.ExecContext(ctx, "VACUUM INTO ?", tmp)
	stop()
	if err != nil {
		return fmt.Errorf("backup sqlite: %s: %w", path, err)
	}
	return nil
}
