package http_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestMain runs the tests, closes and removes the benchmark database and the
// PostgreSQL template (pgtest.Migrated), and
// fails the run if any goroutine the tests started outlives them.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	pgtest.DropTemplate()
	if bench.db != nil {
		bench.db.Close()
	}
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	if fuzzing := flag.Lookup("test.fuzz"); code == 0 && (fuzzing == nil || fuzzing.Value.String() == "") {
		if err := goroutinesSettle(before); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// goroutinesSettle waits for the goroutines the tests started (servers,
// stores, client connections) to end, and reports those that do not: every
// test closes what it opens, so any left over is a leak.
func goroutinesSettle(before int) error {
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("goroutine leak: %d goroutines before the tests, %d after:\n%s",
				before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
