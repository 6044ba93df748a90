package inmem

import (
	"context"
	"errors"
	"sync"

	"github.com/resourceapi/resourceapi"
)

// ErrClosed is Listen's error once the hub is closed.
var ErrClosed = errors.New("inmem: event hub is closed")

// Hub fans events out to the subscribers of this process: it implements
// resourceapi.Events for the front doors, and Deliver and Publish are how
// events reach it (from the relay on a single instance, or from an engine
// shared by instances). Delivery never blocks: each subscriber takes an
// event or is dropped (its deliver returns false). Subscribers that queue
// what they take bound their memory with the hub's pacer (SetPacer), which
// the sources ask before each batch (Ready). An event ID is delivered once, however
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
	// pacer, when set, says when subscribers can take more (Ready).
	pacer func(context.Context) error
}

// dedupeWindow is how many recent event IDs the hub remembers to deliver
// each once. A redelivery comes within seconds of the first (an engine
// retrying a publish), far fewer events than this.
const dedupeWindow = 65536

type subscriber struct {
	deliver func(resourceapi.Event) bool
	ended   func()
	once    sync.Once
}

// end tells the subscriber that listening ended, once. The hub calls it
// without holding its lock, after removing the subscriber under it, so that
// deliver is never called after it.
func (s *subscriber) end() { s.once.Do(s.ended) }

var _ resourceapi.Events = (*Hub)(nil)

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{subs: make(map[string]map[*subscriber]struct{}), seen: make(map[int64]struct{}, dedupeWindow),
		order: make([]int64, dedupeWindow)}
}

// Listen implements resourceapi.Events.
func (h *Hub) Listen(ctx context.Context, name string, deliver func(resourceapi.Event) bool, ended func()) error {
	s := &subscriber{deliver: deliver, ended: ended}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	set := h.subs[name]
	if set == nil {
		set = make(map[*subscriber]struct{})
		h.subs[name] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.remove(name, s) })
	return nil
}

// Subscribe is resourceapi.Subscribe of the hub: its events as a channel.
func (h *Hub) Subscribe(ctx context.Context, name string, buffer int) (<-chan resourceapi.Event, error) {
	return resourceapi.Subscribe(ctx, h, name, buffer)
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
	s.end()
}

// Deliver hands ev to every subscriber of its name, of its alias and of
// resourceapi.AllEvents, unless an event with its
// ID was delivered before (within the window). It never blocks: a
// subscriber that cannot take the event is dropped.
func (h *Hub) Deliver(ev resourceapi.Event) {
	var dropped []*subscriber
	defer func() {
		for _, s := range dropped {
			s.end()
		}
	}()
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
	for i, name := range [3]string{ev.Name, ev.Alias, resourceapi.AllEvents} {
		if name == "" || i == 1 && name == ev.Name {
			continue
		}
		set := h.subs[name]
		for s := range set {
			if !s.deliver(ev) {
				delete(set, s)
				dropped = append(dropped, s)
				h.dropped++
			}
		}
		if set != nil && len(set) == 0 {
			delete(h.subs, name)
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
	var ended []*subscriber
	h.mu.Lock()
	h.closed = true
	for name, set := range h.subs {
		for s := range set {
			ended = append(ended, s)
		}
		delete(h.subs, name)
	}
	h.mu.Unlock()
	for _, s := range ended {
		s.end()
	}
}

var (
	_ resourceapi.Publisher = (*Hub)(nil)
	_ resourceapi.Pacer     = (*Hub)(nil)
)

// SetPacer makes Ready wait for ready, which returns once the subscribers
// can take more events (GraphQL's Handler.Ready): the hub's sources (the
// relay, the Redis stream's follower) ask before each batch.
func (h *Hub) SetPacer(ready func(context.Context) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pacer = ready
}

// Ready implements resourceapi.Pacer: it returns at once without a pacer.
func (h *Hub) Ready(ctx context.Context) error {
	h.mu.Lock()
	ready := h.pacer
	h.mu.Unlock()
	if ready == nil {
		return nil
	}
	return ready(ctx)
}

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
