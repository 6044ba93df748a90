package inmem

import (
	"context"
	"errors"
	"sync"

	"github.com/resourceapi/resourceapi"
)

// ErrClosed is Subscribe's error once the hub is closed.
var ErrClosed = errors.New("inmem: event hub is closed")

// Hub fans events out to the subscribers of this process: it implements
// resourceapi.Events for the front doors, and Deliver is how events reach it
// (from the relay on a single instance, or from an engine shared by
// instances). Every subscriber has a bounded buffer: one that falls behind
// by more than it is dropped (its channel closed), so a slow consumer never
// slows the others or grows memory. An event ID is delivered once, however
// often it arrives (an engine that redelivers after a failure): the hub
// remembers the last dedupeWindow IDs.
type Hub struct {
	mu     sync.Mutex
	subs   map[string]map[*subscriber]struct{}
	seen   map[int64]struct{}
	order  []int64 // seen IDs in arrival order, a ring of dedupeWindow
	next   int
	closed bool
	// Dropped counts subscribers dropped for falling behind.
	dropped int64
}

// dedupeWindow is how many recent event IDs the hub remembers to deliver
// each once. A redelivery comes within seconds of the first (an engine
// retrying a publish), far fewer events than this.
const dedupeWindow = 65536

type subscriber struct {
	ch   chan resourceapi.Event
	once sync.Once
}

func (s *subscriber) close() { s.once.Do(func() { close(s.ch) }) }

var _ resourceapi.Events = (*Hub)(nil)

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{subs: make(map[string]map[*subscriber]struct{}), seen: make(map[int64]struct{}, dedupeWindow),
		order: make([]int64, dedupeWindow)}
}

// Subscribe implements resourceapi.Events.
func (h *Hub) Subscribe(ctx context.Context, name string, buffer int) (<-chan resourceapi.Event, error) {
	if buffer < 1 {
		buffer = 1
	}
	s := &subscriber{ch: make(chan resourceapi.Event, buffer)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	set := h.subs[name]
	if set == nil {
		set = make(map[*subscriber]struct{})
		h.subs[name] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.remove(name, s) })
	return s.ch, nil
}

func (h *Hub) remove(name string, s *subscriber) {
	h.mu.Lock()
	if set := h.subs[name]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.subs, name)
		}
	}
	h.mu.Unlock()
	s.close()
}

// Deliver hands ev to every subscriber of its name, unless an event with its
// ID was delivered before (within the window). It never blocks: a
// subscriber whose buffer is full is dropped.
func (h *Hub) Deliver(ev resourceapi.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if _, dup := h.seen[ev.ID]; dup {
		return
	}
	if old := h.order[h.next]; old != 0 {
		delete(h.seen, old)
	}
	h.order[h.next] = ev.ID
	h.next = (h.next + 1) % len(h.order)
	h.seen[ev.ID] = struct{}{}
	for s := range h.subs[ev.Name] {
		select {
		case s.ch <- ev:
		default:
			delete(h.subs[ev.Name], s)
			s.close()
			h.dropped++
		}
	}
}

// Subscribers returns how many subscriptions of name are open.
func (h *Hub) Subscribers(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[name])
}

// Dropped returns how many subscribers were dropped for falling behind.
func (h *Hub) Dropped() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// Close closes every subscription and refuses new ones: the service is
// shutting down.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for name, set := range h.subs {
		for s := range set {
			s.close()
		}
		delete(h.subs, name)
	}
}

var _ resourceapi.Publisher = (*Hub)(nil)

// Publish implements resourceapi.Publisher: it delivers events to this
// process's subscribers (the engine of a single instance). It fails only
// once the hub is closed.
func (h *Hub) Publish(_ context.Context, events []resourceapi.Event) error {
	for _, ev := range events {
		h.Deliver(ev)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	return nil
}
