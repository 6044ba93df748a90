package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/relay"
)

func mustOpen(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustOpenRaw opens url with database/sql, beside the store, for a test's
// own statements and transactions (another instance, a hand-written
// writer), closed when the test ends.
func mustOpenRaw(t *testing.T, url string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// countingPublisher stands for an engine shared by instances: it counts
// what each relay publishes and hands it to one hub, as every instance's
// consumer would to its own.
type countingPublisher struct {
	mu      *sync.Mutex
	counts  map[int64]int
	batches *int      // how many batches this relay published
	errs    *[]string // events not in id order
	last    *int64    // the greatest id published by either relay
	hub     *inmem.Hub
}

func (p countingPublisher) Publish(ctx context.Context, events []resourceapi.Event) error {
	p.mu.Lock()
	*p.batches++
	for _, ev := range events {
		p.counts[ev.ID]++
		if ev.ID <= *p.last {
			*p.errs = append(*p.errs, fmt.Sprintf("event %d published after %d", ev.ID, *p.last))
		}
		*p.last = max(*p.last, ev.ID)
	}
	p.mu.Unlock()
	return p.hub.Publish(ctx, events)
}

// TestTwoRelays runs two instances on one database, each with its relay,
// while both write: every event is published by exactly one relay (they
// take turns, each moving the outbox's cursor), all in id order, across batches and relays (each
// publishes only up to its horizon, and one batch at a time), and
// a subscriber gets every event once. Then an instance with no relay (as with
// RESOURCEAPI_EVENTS_RELAY=off, or a command) writes, and the other's poll
// publishes its event.
func TestTwoRelays(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	hub := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := hub.Subscribe(ctx, "userCreated", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[int64]int{}
	var batchesA, batchesB int
	var errs []string
	var last int64
	var relays sync.WaitGroup
	for _, r := range []struct {
		db      *postgres.DB
		batches *int
	}{{a, &batchesA}, {b, &batchesB}} {
		relay := relay.New(r.db, countingPublisher{mu: &mu, counts: counts, batches: r.batches, errs: &errs, last: &last, hub: hub},
			relay.Config{Poll: 20 * time.Millisecond})
		relays.Go(func() { relay.Run(ctx) })
	}
	stop := func() {
		cancel()
		relays.Wait()
	}
	defer stop()

	const writers, each = 8, 15
	var wg sync.WaitGroup
	for w := range writers {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Go(func() {
			for i := range each {
				rec := resourceapi.Record{"name": "R", "email": fmt.Sprintf("r%d-%d@example.com", w, i)}
				if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
					t.Error(err)
					return
				}
				if _, err := db.Create(context.Background(), resourceapi.Users, rec); err != nil {
					t.Errorf("Create: %v", err)
				}
			}
		})
	}
	wg.Wait()
	users := map[int64]bool{}
	for range writers * each {
		ev := mustReceive(t, sub)
		if users[ev.Record.ID()] {
			t.Fatalf("user %d's event delivered twice", ev.Record.ID())
		}
		users[ev.Record.ID()] = true
	}
	stop()
	if len(sub) != 0 {
		t.Fatalf("%d events more than the writes made", len(sub))
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("event %d published %d times, want once (claimed by one relay)", id, n)
		}
	}
	for _, e := range errs {
		t.Error(e)
	}
	t.Logf("relay A published %d batches, relay B %d", batchesA, batchesB)
}

// TestPollPublishesAnotherInstancesEvents has an instance without a relay
// (RESOURCEAPI_EVENTS_RELAY=off, or one that died right after its commit)
// write, and the other instance's relay, which no signal told, publish the
// event on its poll.
func TestPollPublishesAnotherInstancesEvents(t *testing.T) {
	url := pgtest.NewDatabase(t)
	relaying, writing := mustOpen(t, url), mustOpen(t, url)
	hub := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := hub.Subscribe(ctx, "userCreated", 10)
	if err != nil {
		t.Fatal(err)
	}
	relay := relay.New(relaying, hub, relay.Config{Poll: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	rec := resourceapi.Record{"name": "Other", "email": "other@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	out, err := writing.Create(context.Background(), resourceapi.Users, rec)
	if err != nil {
		t.Fatal(err)
	}
	if ev := mustReceive(t, sub); ev.Record.ID() != out.ID() || ev.Record["email"] != "other@example.com" {
		t.Fatalf("event of %v, want the other instance's user %d", ev.Record, out.ID())
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

// flakyPublisher delivers to the hub and then fails, the first time: as a
// relay that dies after publishing and before its transaction commits the
// cursor's move.
type flakyPublisher struct {
	hub    *inmem.Hub
	failed bool
}

func (p *flakyPublisher) Publish(ctx context.Context, events []resourceapi.Event) error {
	if err := p.hub.Publish(ctx, events); err != nil {
		return err
	}
	if !p.failed {
		p.failed = true
		return fmt.Errorf("the relay died before marking")
	}
	return nil
}

// TestRepublishedOnce has a relay publish a batch and then fail before its
// cursor's move commits: the events stay in the outbox, are published again, and the
// subscriber still gets each once.
func TestRepublishedOnce(t *testing.T) {
	db := mustOpen(t, pgtest.NewDatabase(t))
	hub := inmem.NewHub()
	sub, err := hub.Subscribe(context.Background(), "userCreated", 10)
	if err != nil {
		t.Fatal(err)
	}
	rec := resourceapi.Record{"name": "Once", "email": "once@example.com"}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	out, err := db.Create(context.Background(), resourceapi.Users, rec)
	if err != nil {
		t.Fatal(err)
	}
	pub := &flakyPublisher{hub: hub}
	publish := func() (int, error) { return db.PublishEvents(context.Background(), 10, pub.Publish) }
	if n, err := publish(); err == nil || n != 0 {
		t.Fatalf("first PublishEvents = %d, %v; want 0 and the publisher's error", n, err)
	}
	if n, err := publish(); err != nil || n != 1 {
		t.Fatalf("second PublishEvents = %d, %v; want the event published again", n, err)
	}
	if ev := mustReceive(t, sub); ev.Record.ID() != out.ID() {
		t.Fatalf("event of %d, want %d", ev.Record.ID(), out.ID())
	}
	if len(sub) != 0 {
		t.Fatal("the republished event reached the subscriber twice")
	}
}
