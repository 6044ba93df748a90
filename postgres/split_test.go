package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestPoolSplit checks how the store divides its connections (split in
// postgres.go, docs/operations.md): reads get half, a quarter of that half
// for the batch of one-row reads, and writes may take every connection of
// the pool; the default of 16 on 2 cores leaves reads what the old default
// of 8 gave them.
func TestPoolSplit(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for _, c := range []struct{ conns, batch, reads, pool int }{
		{1, 0, 1, 1},
		{2, 0, 1, 2},
		{4, 1, 1, 3},
		{8, 1, 3, 7},
		{16, 2, 6, 14},
		{32, 4, 12, 28},
	} {
		db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: c.conns})
		if err != nil {
			t.Fatal(err)
		}
		batch, reads, pool := db.Split()
		if batch != c.batch || reads != c.reads || pool != c.pool {
			t.Errorf("%d connections: batch %d, reads %d, pool %d; want %d, %d, %d", c.conns, batch, reads, pool, c.batch, c.reads, c.pool)
		}
		if got := db.Pools()["postgres"]().MaxOpenConnections; got != c.conns {
			t.Errorf("%d connections: the metrics' pool of %d, want %d", c.conns, got, c.conns)
		}
		db.Close()
	}
}

// TestWritesPassFullReads holds every read's slot of the pool and checks
// that writes still get a connection (they may take the whole pool), that
// a list waits for a read's slot, and that a list whose caller hangs up
// while it waits leaves with its context's error. When reads and writes
// shared one budget, the writes waited behind the reads.
func TestWritesPassFullReads(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := mustCreateUser(t, db, "Split 0", "split0@example.com")

	release, err := db.HoldReads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { release() }()
	listed := make(chan error, 1)
	go func() {
		_, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "name", Search: "split"})
		listed <- err
	}()

	// Not a timing assertion: a bound on a wait that, when the writes share
	// the reads' budget, never ends.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for i := 1; i <= 3; i++ {
		rec := resourceapi.Record{"name": fmt.Sprintf("Split %d", i), "email": fmt.Sprintf("split%d@example.com", i)}
		if _, err := db.Create(wctx, resourceapi.Users, rec); err != nil {
			t.Fatalf("Create while the reads' slots are taken: %v", err)
		}
	}
	if _, err := db.Update(wctx, resourceapi.Users, id, resourceapi.Record{"age": int64(40)}, nil); err != nil {
		t.Fatalf("Update while the reads' slots are taken: %v", err)
	}
	select {
	case err := <-listed:
		t.Fatalf("a list ran while every read's slot was taken (err %v)", err)
	default:
	}

	gone, hangUp := context.WithCancel(ctx)
	hungUp := make(chan error, 1)
	go func() {
		_, err := db.List(gone, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "id"})
		hungUp <- err
	}()
	hangUp()
	if err := <-hungUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a list whose caller hung up while it waited = %v, want %v", err, context.Canceled)
	}

	release()
	release = func() {}
	if err := <-listed; err != nil {
		t.Fatalf("the list that waited: %v", err)
	}
}
