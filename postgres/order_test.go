package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// mustUser creates a user on db and returns it.
func mustUser(t *testing.T, db interface {
	Create(context.Context, *resourceapi.Resource, resourceapi.Record, ...resourceapi.Prerequisite) (resourceapi.Record, error)
}, email string) resourceapi.Record {
	t.Helper()
	rec := resourceapi.Record{"name": "U", "email": email}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	out, err := db.Create(context.Background(), resourceapi.Users, rec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return out
}

// beginEvent begins a transaction on raw that inserts an event (a copy of
// the last one) and leaves it open: a write that took its event id and has
// not committed yet. It returns the transaction and the event's id.
func beginEvent(t *testing.T, raw *sql.DB) (*sql.Tx, int64) {
	t.Helper()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	var id int64
	err = tx.QueryRow(`INSERT INTO events (name, alias, actor, resource, record_id, payload, payload_text, created_at)
		SELECT name, alias, actor, resource, record_id, payload, payload_text, created_at FROM events ORDER BY id DESC LIMIT 1
		RETURNING id`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return tx, id
}

// TestEventIDsInCommitOrder provokes what a resuming reader of the outbox
// must never meet: of two transactions, the one with the later event id
// committing first. A transaction takes an event id and stays open; a
// write commits meanwhile, without waiting for it (writers take the order
// lock shared, migration 00028). The relay cannot establish a horizon past
// the open transaction: it waits for it. A reader of the outbox meanwhile
// reads only up to the last horizon, so not the later event; once the
// first commits, the relay publishes both in id order, and a reader going
// on after the last id it read gets each event exactly once.
//
// With plain ids from a sequence and readers reading every committed id,
// the reader would read the later event first, resume after it and never
// see the earlier one, and the relay would publish it out of order.
func TestEventIDsInCommitOrder(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	mustUser(t, db, "first@example.com")
	ctx := context.Background()

	tx, held := beginEvent(t, raw)
	done := make(chan struct{})
	rec := resourceapi.Record{"name": "U", "email": "second@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	var second resourceapi.Record
	var errSecond error
	go func() {
		defer close(done)
		second, errSecond = db.Create(ctx, resourceapi.Users, rec)
	}()
	if pgtest.WaitLockedOr(t, raw, done) {
		tx.Rollback()
		t.Fatal("a write waited for another transaction's event to commit")
	}
	if errSecond != nil {
		t.Fatal(errSecond)
	}

	// The relay waits for the open transaction before it publishes.
	var mu sync.Mutex
	var published []int64
	relayed := make(chan error, 1)
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		_, err := db.PublishEvents(ctx, 100, func(_ context.Context, evs []resourceapi.Event) error {
			mu.Lock()
			defer mu.Unlock()
			published = append(published, ids(evs)...)
			return nil
		})
		relayed <- err
	}()
	relayWaited := pgtest.WaitLockedOr(t, raw, relayDone)

	// A reader resumes while the first is still open.
	seen, err := db.EventsAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-relayed; err != nil {
		t.Fatal(err)
	}
	var after int64
	if len(seen) > 0 {
		after = seen[len(seen)-1].ID
	}
	more, err := db.EventsAfter(ctx, after, 100)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int64]int{}
	var secondID int64
	for _, ev := range append(seen, more...) {
		count[ev.ID]++
		if ev.Record.ID() == second.ID() {
			secondID = ev.ID
		}
	}
	if count[held] != 1 || secondID == 0 || count[secondID] != 1 {
		t.Fatalf("read %v then, after %d, %v: the open transaction's event %d seen %d times, the second write's %d seen %d times; want each once",
			ids(seen), after, ids(more), held, count[held], secondID, count[secondID])
	}
	if secondID < held {
		t.Fatalf("the write that took its id last has event id %d, below the first's %d", secondID, held)
	}
	if !relayWaited || !slices.IsSorted(published) || !slices.Contains(published, held) || !slices.Contains(published, secondID) {
		t.Fatalf("the relay published %v (it waited for the open transaction: %v); want it to wait, then publish both %d and %d in id order",
			published, relayWaited, held, secondID)
	}
}

// TestEventWritersDoNotWait holds two transactions open at once, each with
// an event inserted: the second insert does not wait for the first
// transaction (migration 00025 made it wait, one event-bearing transaction
// at a time), and both commit, with distinct ids.
func TestEventWritersDoNotWait(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	mustUser(t, db, "first@example.com")

	tx1, id1 := beginEvent(t, raw)
	done := make(chan struct{})
	var tx2 *sql.Tx
	var id2 int64
	go func() {
		defer close(done)
		tx2, id2 = beginEvent(t, raw)
	}()
	if pgtest.WaitLockedOr(t, raw, done) {
		tx1.Rollback()
		<-done
		t.Fatal("a transaction inserting an event waited for another that holds one")
	}
	if tx2 == nil {
		t.FailNow() // beginEvent failed (and said why)
	}
	for _, tx := range []*sql.Tx{tx2, tx1} {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if id1 == id2 {
		t.Fatalf("both transactions took event id %d", id1)
	}
}

func ids(evs []resourceapi.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// TestRelaysPublishInIDOrder has one relay hold a batch in publication (an
// engine slow to answer) while another relay, on another instance, looks
// for events: it waits, and publishes the next event after the first
// batch, so that every subscriber and the outbox agree on the order.
func TestRelaysPublishInIDOrder(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	for i := range 2 {
		mustUser(t, a, fmt.Sprintf("u%d@example.com", i))
	}
	ctx := context.Background()
	var mu sync.Mutex
	var order []int64
	record := func(evs []resourceapi.Event) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, ids(evs)...)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	doneA := make(chan error, 1)
	go func() {
		_, err := a.PublishEvents(ctx, 1, func(_ context.Context, evs []resourceapi.Event) error {
			close(holding)
			<-release
			record(evs)
			return nil
		})
		doneA <- err
	}()
	<-holding
	doneB := make(chan struct{})
	var errB error
	go func() {
		defer close(doneB)
		_, errB = b.PublishEvents(ctx, 10, func(_ context.Context, evs []resourceapi.Event) error {
			record(evs)
			return nil
		})
	}()
	waited := pgtest.WaitLockedOr(t, raw, doneB)
	close(release)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	<-doneB
	if errB != nil {
		t.Fatal(errB)
	}
	if len(order) != 2 || !slices.IsSorted(order) {
		t.Fatalf("published %v, want both events in id order (the second relay waited: %v)", order, waited)
	}
}

// TestRelayDoesNotHoldWritersBack holds a transaction with an event open,
// so that a relay establishing its horizon waits for it, and then writes:
// the write commits while the relay waits (writers take the key of the
// epoch the relay moved on, migration 00029; with one key, PostgreSQL
// queued the write's shared request behind the relay's exclusive one, and
// every batch of the relay held all writers back for the commits in
// flight). Once the open transaction ends, the relay publishes in id order
// up to its horizon: the open transaction's event, not the later write's.
func TestRelayDoesNotHoldWritersBack(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	mustUser(t, db, "first@example.com")
	ctx := context.Background()
	mustPublishAll(t, db)

	tx, held := beginEvent(t, raw)
	var published []int64
	relayed := make(chan error, 1)
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		_, err := db.PublishEvents(ctx, 100, func(_ context.Context, evs []resourceapi.Event) error {
			published = append(published, ids(evs)...)
			return nil
		})
		relayed <- err
	}()
	if !pgtest.WaitLockedOr(t, raw, relayDone) {
		t.Fatal("the relay published while a transaction with an event was open")
	}

	done := make(chan struct{})
	var second resourceapi.Record
	var errSecond error
	go func() {
		defer close(done)
		rec := resourceapi.Record{"name": "U", "email": "second@example.com"}
		if errSecond = resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); errSecond == nil {
			second, errSecond = db.Create(ctx, resourceapi.Users, rec)
		}
	}()
	writerWaited := pgtest.WaitLockedWhereOr(t, raw, "query NOT LIKE '%events_establish_horizon%'", done)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := <-relayed; err != nil {
		t.Fatal(err)
	}
	if writerWaited {
		t.Fatal("a write waited while the relay waited for an open transaction")
	}
	if errSecond != nil {
		t.Fatal(errSecond)
	}
	if !slices.Equal(published, []int64{held}) {
		t.Fatalf("the relay published %v; want the open transaction's event %d alone (the later write's is above its horizon)", published, held)
	}
	if evs := mustPublishAll(t, db); len(evs) != 1 || evs[0].Record.ID() != second.ID() {
		t.Fatalf("the next batch published %v; want the later write's event", ids(evs))
	}
}

// mustPublishAll publishes what db's outbox has up to a new horizon.
func mustPublishAll(t *testing.T, db interface {
	PublishEvents(context.Context, int, func(context.Context, []resourceapi.Event) error) (int, error)
}) []resourceapi.Event {
	t.Helper()
	var got []resourceapi.Event
	if _, err := db.PublishEvents(context.Background(), 100, func(_ context.Context, evs []resourceapi.Event) error {
		got = append(got, evs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestInterruptedRelay interrupts a relay while it waits for an open
// transaction with an event (its deadline passes), after it has moved the
// epoch on; another write commits, and the next relay must still wait for
// the open transaction before it passes the later write's id (the epoch's
// move is not undone, so it first waits for the writers of the other
// parity too).
func TestInterruptedRelay(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	mustUser(t, db, "first@example.com")
	mustPublishAll(t, db)

	tx, held := beginEvent(t, raw)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := db.PublishEvents(short, 100, func(context.Context, []resourceapi.Event) error { return nil }); err == nil {
		t.Fatal("a relay published while a transaction with an event was open")
	}
	mustUser(t, db, "second@example.com")

	var published []int64
	relayed := make(chan error, 1)
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		_, err := db.PublishEvents(context.Background(), 100, func(_ context.Context, evs []resourceapi.Event) error {
			published = append(published, ids(evs)...)
			return nil
		})
		relayed <- err
	}()
	waited := pgtest.WaitLockedOr(t, raw, relayDone)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-relayed; err != nil {
		t.Fatal(err)
	}
	if !waited || len(published) != 2 || published[0] != held {
		t.Fatalf("the relay published %v (it waited: %v); want it to wait for the open transaction, then publish its event %d and the later write's", published, waited, held)
	}
}
