package resourceapi

import (
	"context"
	"time"
)

// Event is something that happened to a record, delivered to subscribers
// once the write that made it has committed. Resources declare which writes
// publish events (Resource.Events); the store records each event in the
// write's own transaction, and a relay publishes it from there, so that a
// committed write's event is never lost, whatever dies when.
type Event struct {
	// ID identifies the event across instances and restarts (the store's
	// outbox id): each subscriber receives an ID at most once.
	ID int64
	// Name is the event's name, as subscriptions name it: "userCreated".
	Name string
	// Resource is the name of the resource the record belongs to.
	Resource string
	// Record is the record as the write committed it (its visible fields;
	// for a delete, the record as it was). It is nil in the rare event that
	// this version cannot read it: an event of a resource that only a newer
	// version declares, during a rolling upgrade.
	Record Record
	// At is when the event was recorded, in the write's transaction.
	At time.Time
}

// Events is how front doors (GraphQL subscriptions) hear about committed
// writes, from whichever instance made them.
type Events interface {
	// Listen calls deliver with each event named name that is delivered
	// after the call, each once, in the order this instance receives them,
	// until ctx ends, the service shuts down, or deliver returns false.
	// deliver runs on the engine's goroutine and must not block: it hands
	// the event on (to a bounded buffer) or returns false to be dropped,
	// so that a consumer that cannot keep up never slows the others or
	// grows memory. ended is called once when listening ends, whatever the
	// reason, and deliver is never called after it. Listen fails only when
	// the service is shutting down. A listener costs no goroutine.
	Listen(ctx context.Context, name string, deliver func(Event) bool, ended func()) error
}

// Subscribe returns the events of Listen as a channel of buffer events: the
// channel is closed when listening ends (ctx, shutdown), or when the
// consumer falls more than buffer events behind.
func Subscribe(ctx context.Context, events Events, name string, buffer int) (<-chan Event, error) {
	ch := make(chan Event, max(buffer, 1))
	err := events.Listen(ctx, name, func(ev Event) bool {
		select {
		case ch <- ev:
			return true
		default:
			return false
		}
	}, func() { close(ch) })
	if err != nil {
		return nil, err
	}
	return ch, nil
}
