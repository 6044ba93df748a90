package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecondServerRefused serves a SQLite file and starts a second server on
// the same file through another path (a hard link, a symbolic link, a path
// through ".."): each refuses to start, saying the database is in use,
// before it serves anything. It used to start (the lock was on a file named
// after the path), and two servers writing one file left it malformed, with
// acknowledged writes lost.
func TestSecondServerRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": db, "RESOURCEAPI_ADDR": "127.0.0.1:0"}
	stop := mustServe(t, kv)
	defer stop()
	hard, soft := filepath.Join(dir, "hard.db"), filepath.Join(dir, "soft.db")
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(db, soft); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{hard, soft, dir + "/x/../s.db"} {
		second := map[string]string{"RESOURCEAPI_DATABASE_URL": path, "RESOURCEAPI_ADDR": "127.0.0.1:0"}
		var errOut syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"serve"}, env(second), nil, &bytes.Buffer{}, &errOut) }()
		var err error
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-time.After(10 * time.Millisecond):
				if strings.Contains(errOut.String(), "msg=listening") {
					t.Errorf("a second server on %s started:\n%s", path, errOut.String())
					cancel()
					<-done
					break wait
				}
			}
		}
		cancel()
		if err == nil || !strings.Contains(err.Error(), "in use by another resourceapi process") {
			t.Errorf("second server on %s = %v, want an error saying the database is in use\n%s", path, err, errOut.String())
		}
	}
}
