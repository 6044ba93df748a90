package relay_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/relay"
)

// fakeOutbox is an in-memory resourceapi.Outbox.
type fakeOutbox struct {
	mu        sync.Mutex
	events    []resourceapi.Event
	published map[int64]bool
	purges    []time.Time
	limits    []int // each PurgeEvents call's limit
	purgeable int   // how many published events are old enough to purge
	wake      chan struct{}
}

func newFakeOutbox() *fakeOutbox {
	return &fakeOutbox{published: map[int64]bool{}, wake: make(chan struct{}, 1)}
}

// add records an event, and signals it when signal is true (a commit of
// this process; otherwise another process's, which only polling finds).
func (o *fakeOutbox) add(signal bool) {
	o.mu.Lock()
	o.events = append(o.events, resourceapi.Event{ID: int64(len(o.events) + 1), Name: "userCreated"})
	o.mu.Unlock()
	if signal {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
}

func (o *fakeOutbox) PublishEvents(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	o.mu.Lock()
	var batch []resourceapi.Event
	for _, ev := range o.events {
		if !o.published[ev.ID] && len(batch) < limit {
			batch = append(batch, ev)
		}
	}
	o.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}
	if err := publish(ctx, batch); err != nil {
		return 0, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ev := range batch {
		o.published[ev.ID] = true
	}
	return len(batch), nil
}

func (o *fakeOutbox) PurgeEvents(_ context.Context, before time.Time, limit int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.purges = append(o.purges, before)
	o.limits = append(o.limits, limit)
	n := min(limit, o.purgeable)
	o.purgeable -= n
	return n, nil
}

func (o *fakeOutbox) EventsWritten() <-chan struct{} { return o.wake }

// fakePublisher records what it is given, and fails while down.
type fakePublisher struct {
	mu   sync.Mutex
	got  []int64
	down bool
	more chan struct{}
}

func newFakePublisher() *fakePublisher { return &fakePublisher{more: make(chan struct{}, 1000)} }

func (p *fakePublisher) Publish(_ context.Context, events []resourceapi.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return errors.New("engine down")
	}
	for _, ev := range events {
		p.got = append(p.got, ev.ID)
		p.more <- struct{}{}
	}
	return nil
}

func (p *fakePublisher) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

// mustReceive waits, at most 10 s, until the publisher has n events, and
// checks they are 1..n in order.
func (p *fakePublisher) mustReceive(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		got := append([]int64(nil), p.got...)
		p.mu.Unlock()
		if len(got) >= n {
			for i, id := range got {
				if id != int64(i+1) {
					t.Fatalf("published ids %v, want 1..%d once each, in order", got, n)
				}
			}
			if len(got) > n {
				t.Fatalf("published ids %v, want 1..%d", got, n)
			}
			return
		}
		select {
		case <-p.more:
		case <-deadline:
			t.Fatalf("published %v within 10s, want 1..%d", got, n)
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger written from another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRelay runs a relay until the test ends.
func startRelay(t *testing.T, ob resourceapi.Outbox, pub resourceapi.Publisher, cfg relay.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay.New(ob, pub, cfg).Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Relay.Run did not return within 10s of its context's end")
		}
	})
}

func TestRelayPublishesSignalledAndPolled(t *testing.T) {
	ob, pub := newFakeOutbox(), newFakePublisher()
	// A poll of an hour: only the signal can publish the first events.
	startRelay(t, ob, pub, relay.Config{Poll: time.Hour})
	for range 250 { // more than a batch
		ob.add(true)
	}
	pub.mustReceive(t, 250)

	ob2, pub2 := newFakeOutbox(), newFakePublisher()
	startRelay(t, ob2, pub2, relay.Config{Poll: 10 * time.Millisecond})
	ob2.add(false) // committed by another process: no signal
	pub2.mustReceive(t, 1)
}

func TestRelayRetriesUntilThePublisherAnswers(t *testing.T) {
	ob, pub := newFakeOutbox(), newFakePublisher()
	var logs syncBuffer
	pub.setDown(true)
	startRelay(t, ob, pub, relay.Config{Poll: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 3 {
		ob.add(true)
	}
	// Several attempts fail (the backoff starts at the poll interval), and
	// one warning says so.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot publish") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning within 10s while the publisher fails; log:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	pub.setDown(false)
	pub.mustReceive(t, 3)
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "publishing again") {
		if time.Now().After(deadline) {
			t.Fatalf("no line saying publishing works again; log:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "cannot publish"); n != 1 {
		t.Fatalf("%d warnings in a short outage, want 1 (at most one per 10s):\n%s", n, logs.String())
	}
}

func TestRelayPurgesAfterRetention(t *testing.T) {
	ob, pub := newFakeOutbox(), newFakePublisher()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	startRelay(t, ob, pub, relay.Config{Retention: 90 * time.Minute,
		Now: func() time.Time { return now }})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ob.mu.Lock()
		purges := append([]time.Time(nil), ob.purges...)
		ob.mu.Unlock()
		if len(purges) > 0 {
			if want := now.Add(-90 * time.Minute); !purges[0].Equal(want) {
				t.Fatalf("purged events published before %v, want before %v", purges[0], want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no purge within 10s of the start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRelayPurgesInBatches: a purge deletes a backlog of old events in
// bounded batches, one transaction each, until a batch comes back short.
func TestRelayPurgesInBatches(t *testing.T) {
	ob, pub := newFakeOutbox(), newFakePublisher()
	ob.purgeable = 2500
	startRelay(t, ob, pub, relay.Config{Retention: time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ob.mu.Lock()
		limits, left := append([]int(nil), ob.limits...), ob.purgeable
		ob.mu.Unlock()
		if left == 0 && len(limits) == 3 {
			for _, l := range limits {
				if l != 1000 {
					t.Fatalf("purge limits %v, want batches of 1000", limits)
				}
			}
			return
		}
		if len(limits) > 3 {
			t.Fatalf("%d purge calls for 2,500 events in batches of 1,000, want 3", len(limits))
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s, %d events left to purge in %d calls", left, len(limits))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRelayLastRound checks that Run, when its context ends, publishes what
// committed meanwhile before it returns.
func TestRelayLastRound(t *testing.T) {
	ob, pub := newFakeOutbox(), newFakePublisher()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r := relay.New(ob, pub, relay.Config{Poll: time.Hour})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	ob.add(false)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's end")
	}
	pub.mustReceive(t, 1)
	if got := r.Published(); got != 1 {
		t.Fatalf("Published() = %d, want 1", got)
	}
}
