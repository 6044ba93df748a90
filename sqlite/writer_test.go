package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
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

// holdWriter runs a write that keeps the writer busy until the returned
// function is called, so that the writes sent meanwhile queue and then
// share one transaction; release waits for the held write's outcome.
func holdWriter(t *testing.T, db *sqlite.DB) (release func()) {
	t.Helper()
	running, done := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.Write(context.Background(), func(context.Context, sqlstore.Tx) error {
			close(running)
			<-done
			return nil
		})
	}()
	<-running
	return func() {
		close(done)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
}

// TestBatchStatements: in a batch of creates, what no write reads back is
// written once for the batch, not once per write: the id counter's row, and
// the events, as multi-row INSERTs. Each create costs its INSERT and little
// more; the ids are the ones the creates would have taken one by one, the
// events are in their order, and the counter's row is where the next
// create starts.
func TestBatchStatements(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	first, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "First", "first@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	mustDrain(t, db)

	const n = 32
	release := holdWriter(t, db)
	before, commits := db.WriterStatements(), db.WriteTransactions()
	var wg sync.WaitGroup
	ids := make(chan int64, n)
	for i := range n {
		rec := mustValidUser(t, "Batch", fmt.Sprintf("batch%d@example.com", i))
		wg.Go(func() {
			out, err := db.Create(ctx, resourceapi.Users, rec)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- out.ID()
		})
	}
	time.Sleep(100 * time.Millisecond) // the creates queue behind the held write
	release()
	wg.Wait()
	close(ids)
	ran, transactions := db.WriterStatements()-before, db.WriteTransactions()-commits
	// One INSERT each, and per transaction 25 or so: BEGIN, the watch's
	// check, the counter's two, the events', the full-text flushes (three
	// for each of the tables) and COMMIT. Written one statement each, the
	// counter and the events made it 3 per create.
	if limit := int64(n) + 30*transactions; ran > limit {
		t.Errorf("%d creates in %d transactions ran %d statements, want at most %d", n, transactions, ran, limit)
	}
	var got []int64
	for id := range ids {
		got = append(got, id)
	}
	slices.Sort(got)
	for i, id := range got {
		if want := first.ID() + 1 + int64(i); id != want {
			t.Fatalf("ids %v, want %d to %d", got, first.ID()+1, first.ID()+n)
		}
	}
	events := mustDrain(t, db)
	if len(events) != n {
		t.Fatalf("%d events, want %d", len(events), n)
	}
	for i, ev := range events {
		if want := first.ID() + 1 + int64(i); ev.Record.ID() != want {
			t.Fatalf("event %d is of record %d, want %d: events out of the order of their writes", i, ev.Record.ID(), want)
		}
	}
	next, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "Next", "next@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if want := first.ID() + n + 1; next.ID() != want {
		t.Fatalf("next id %d, want %d", next.ID(), want)
	}
}

// TestBatchReadsWhatWaits: a write that reads the events or the id
// counters sees those of the writes before it in its transaction, though
// they wait to be written at the batch's end.
func TestBatchReadsWhatWaits(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	release := holdWriter(t, db)
	created := make(chan int64, 2)
	for i := range 2 {
		rec := mustValidUser(t, "Before", fmt.Sprintf("before%d@example.com", i))
		go func() {
			out, err := db.Create(ctx, resourceapi.Users, rec)
			if err != nil {
				t.Error(err)
				created <- 0
				return
			}
			created <- out.ID()
		}()
		time.Sleep(20 * time.Millisecond) // queued in this order
	}
	var last, lastEvent, events int64
	read := make(chan error, 1)
	go func() {
		read <- db.Write(ctx, func(ctx context.Context, tx sqlstore.Tx) error {
			if err := tx.QueryRowContext(ctx, "SELECT last FROM sequences WHERE resource = 'users'").Scan(&last); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, "SELECT count(*), coalesce(max(record_id), 0) FROM events WHERE resource = 'users'").Scan(&events, &lastEvent)
		})
	}()
	time.Sleep(20 * time.Millisecond)
	commits := db.WriteTransactions()
	release()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	a, b := <-created, <-created
	if db.WriteTransactions()-commits != 1 {
		t.Skip("the writes did not share one transaction")
	}
	if want := max(a, b); last != want || lastEvent != want || events != 2 {
		t.Fatalf("read the counter at %d and %d events up to record %d, want %d and 2 up to %d", last, events, lastEvent, want, want)
	}
}
