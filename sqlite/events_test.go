package sqlite_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/relay"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/storetest"
)

func mustValidUser(tb testing.TB, name, email string) resourceapi.Record {
	tb.Helper()
	rec := resourceapi.Record{"name": name, "email": email}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		tb.Fatal(err)
	}
	return rec
}

// TestEventsOfAFailedBatch has writes that fail share commits with writes
// that succeed (the writer groups whatever is queued, and undoes a failed
// write alone): every write that committed has its event, with its record,
// and no write that failed has one.
func TestEventsOfAFailedBatch(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	for i := range 10 {
		if _, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "Taken", fmt.Sprintf("taken%d@example.com", i))); err != nil {
			t.Fatal(err)
		}
	}
	mustDrain(t, db) // those events are not this test's

	var mu sync.Mutex
	created := map[int64]resourceapi.Record{}
	failed := 0
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range 100 {
		email := fmt.Sprintf("new%d@example.com", i)
		if i%5 == 0 {
			email = fmt.Sprintf("taken%d@example.com", i/10) // a conflict: this write fails
		}
		rec := mustValidUser(t, "Batch", email)
		wg.Go(func() {
			<-gate
			out, err := db.Create(ctx, resourceapi.Users, rec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			created[out.ID()] = out
		})
	}
	close(gate)
	wg.Wait()
	if failed != 20 || len(created) != 80 {
		t.Fatalf("%d creates failed and %d succeeded, want 20 and 80", failed, len(created))
	}
	// A failed write gives its id back (its savepoint undoes its count):
	// the ids that committed follow one another, and the next create
	// takes the one after them.
	for id := int64(11); id <= 90; id++ {
		if _, ok := created[id]; !ok {
			t.Fatalf("no create took id %d: the committed ids are not 11 to 90", id)
		}
	}
	for _, ev := range mustDrain(t, db) {
		want, ok := created[ev.Record.ID()]
		if !ok || !reflect.DeepEqual(ev.Record, storetest.Shown(resourceapi.Users, want)) {
			t.Fatalf("event %d holds %v: no committed create returned it", ev.ID, ev.Record)
		}
		delete(created, ev.Record.ID())
	}
	if len(created) != 0 {
		t.Fatalf("%d committed creates have no event", len(created))
	}
	next, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "Next", "next@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if next.ID() != 91 {
		t.Fatalf("the next create took id %d, want 91", next.ID())
	}
}

// mustDrain publishes every pending event into a slice.
func mustDrain(tb testing.TB, ob resourceapi.Outbox) []resourceapi.Event {
	tb.Helper()
	var got []resourceapi.Event
	for {
		n, err := ob.PublishEvents(context.Background(), 100, func(_ context.Context, evs []resourceapi.Event) error {
			got = append(got, evs...)
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		if n < 100 {
			return got
		}
	}
}

// TestRelayToHub runs the single instance's engine: the relay publishes
// into the process's hub. Events of this process's writes arrive once each,
// in the order of their commits; an event that another process committed
// (a command run beside the server) arrives through the poll.
func TestRelayToHub(t *testing.T) {
	path := sqlitetest.Migrated(t)
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hub := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := hub.Subscribe(ctx, "userCreated", 1000)
	if err != nil {
		t.Fatal(err)
	}
	relay := relay.New(db, hub, relay.Config{Poll: 50 * time.Millisecond})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		relay.Run(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()

	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "R", fmt.Sprintf("r%d-%d@example.com", w, i))); err != nil {
					t.Errorf("Create: %v", err)
				}
			}
		})
	}
	wg.Wait()
	var last int64
	seen := map[int64]bool{}
	for range writers * each {
		ev := mustReceive(t, sub)
		if ev.ID <= last || seen[ev.Record.ID()] {
			t.Fatalf("event %d (user %d) after event %d: out of order or twice", ev.ID, ev.Record.ID(), last)
		}
		last = ev.ID
		seen[ev.Record.ID()] = true
	}

	beside, err := sqlite.Open(context.Background(), path, sqlite.Options{Beside: true})
	if err != nil {
		t.Fatal(err)
	}
	defer beside.Close()
	rec, err := beside.Create(context.Background(), resourceapi.Users, mustValidUser(t, "Beside", "beside@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := mustReceive(t, sub); ev.Record.ID() != rec.ID() || ev.ID <= last {
		t.Fatalf("event %d of user %d, want one of user %d (created by another process) after %d", ev.ID, ev.Record.ID(), rec.ID(), last)
	}
	if len(sub) != 0 {
		t.Fatalf("%d events more than the writes made", len(sub))
	}
}

// mustReceive waits at most 10 s for an event.
func mustReceive(tb testing.TB, sub <-chan resourceapi.Event) resourceapi.Event {
	tb.Helper()
	select {
	case ev, ok := <-sub:
		if !ok {
			tb.Fatal("subscription closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		tb.Fatal("no event within 10s")
	}
	panic("unreachable")
}

// TestEventsMarkedOnClose checks the lazy marks of the single relay: what it
// published is marked by Close at the latest, so the next start does not
// publish it again, and what it did not publish is published then.
func TestEventsMarkedOnClose(t *testing.T) {
	path := sqlitetest.Migrated(t)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "M", fmt.Sprintf("m%d@example.com", i))); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if got := len(mustDrain(t, db)); got != 2 {
				t.Fatalf("published %d events, want 2", got)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := mustDrain(t, db)
	if len(got) != 1 || got[0].Record["email"] != "m2@example.com" {
		t.Fatalf("after a restart, published %v; want only the event never published before", got)
	}
}
