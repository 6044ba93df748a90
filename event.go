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

// Outbox is the store's side of events: every write whose resource declares
// an event records it in the write's own transaction (so a committed write
// always has its event, and a failed one never), and the relay takes the
// events from there.
type Outbox interface {
	// PublishEvents hands publish the oldest unpublished events, at most
	// limit, in the order of their IDs, and once publish returns nil marks
	// them published, never to be handed out again (a store that one
	// process relays may record the marks in the database a little later:
	// until then, only a restart would publish them again). When publish
	// fails they stay unpublished, to be handed out again, and PublishEvents
	// returns its error. It returns how many events it published. Events that another relay is publishing at
	// the same moment are skipped, not waited for, so relays on several
	// instances share the work and publish each event once, unless one dies
	// between publishing and marking (then another publishes it again).
	PublishEvents(ctx context.Context, limit int, publish func(context.Context, []Event) error) (int, error)

	// PurgeEvents deletes at most limit events published before t, oldest
	// first, and returns how many it deleted. Unpublished events are kept,
	// however old.
	PurgeEvents(ctx context.Context, before time.Time, limit int) (int, error)

	// EventsWritten returns a channel that receives a value after this
	// process ends a write transaction that recorded events (several such
	// ends may share one value), so that the relay publishes them at once.
	// Events committed by other processes are found by polling.
	EventsWritten() <-chan struct{}
}

// Publisher carries events to their subscribers: straight into this
// process's hub, or into an engine that every instance reads.
type Publisher interface {
	// Publish delivers events, in order, or fails. It may have delivered
	// some of them when it fails; they are then published again, and the
	// subscribers' hubs, which deliver each event ID once, drop the repeats.
	Publish(ctx context.Context, events []Event) error
}

// Pacer is implemented by a Publisher whose subscribers may take events
// more slowly than the publisher hands them over (a process's hub, whose
// subscribers are network clients): Ready returns once they can take more,
// so that a burst waits where it is (the outbox, a stream) rather than in
// memory. It fails only when ctx ends.
type Pacer interface {
	Ready(ctx context.Context) error
}
