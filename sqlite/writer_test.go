package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// TestWriteJoinsTheRunningBatch: a write that arrives while the writer runs
// a batch joins that batch's transaction, sharing its commit (and fsync),
// instead of waiting for the next; and it too is told only after the
// commit.
func TestWriteJoinsTheRunningBatch(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	bump := func(ctx context.Context, tx sqlstore.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sequences (resource, last) VALUES ('join-test', 1)
			ON CONFLICT (resource) DO UPDATE SET last = last + 1`)
		return err
	}
	// The second write is sent once the first runs; whether it reaches the
	// writer before the first ends is up to the scheduler, so the test
	// tries until it has (without the joining, it never shares a commit).
	for try := range 200 {
		before := db.WriteTransactions()
		running, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- db.Write(ctx, func(ctx context.Context, tx sqlstore.Tx) error {
				close(running)
				<-release
				return bump(ctx, tx)
			})
		}()
		<-running
		second := make(chan int64, 1)
		go func() {
			if err := db.Write(ctx, bump); err != nil {
				t.Error(err)
			}
			second <- db.WriteTransactions()
		}()
		time.Sleep(time.Duration(try%10) * time.Millisecond) // a chance to reach the writer
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		toldAt := <-second
		if toldAt == before {
			t.Fatal("the second write was told before any commit")
		}
		if db.WriteTransactions()-before == 1 {
			return // one commit for both
		}
	}
	t.Fatal("in 200 tries, a write sent while another ran never joined its commit")
}
