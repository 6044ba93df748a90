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
	// Name is the event's type: "<resource>.created", ".updated" or
	// ".deleted" (EventType), the name listeners listen to.
	Name string
	// Alias is the name the resource declares for the event in
	// Resource.Events ("userCreated"), which GraphQL's first subscriptions
	// listen to; "" when it declares none. Listeners of the alias receive
	// the event too.
	Alias string
	// Actor is the id of the user whose write made the event (the caller's
	// UserID); 0 for the service itself (the command line, start-up work).
	Actor int64
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

// Event kinds: the suffix of an event type.
const (
	// EventCreated: a record was created (POST, a PUT that creates it), or a
	// soft-deleted record was restored (it is there again).
	EventCreated = "created"
	// EventUpdated: a record was changed (PUT, PATCH).
	EventUpdated = "updated"
	// EventDeleted: a record was deleted, or soft-deleted (its record says
	// which: the soft-delete field is then true).
	EventDeleted = "deleted"
)

// EventKinds lists the kinds of events every resource publishes.
var EventKinds = []string{EventCreated, EventUpdated, EventDeleted}

// AllEvents is the name under which a listener receives every event
// (Events.Listen): the streams and deliveries that filter by type
// themselves.
const AllEvents = "*"

// EventType returns the type of the events of kind on res's records:
// "orders.created".
func EventType(res *Resource, kind string) string { return res.Name + "." + kind }

// EventTypes returns the type of every event the declared resources
// publish, in declaration order.
func EventTypes() []string {
	out := make([]string, 0, 3*len(declared))
	for _, r := range declared {
		for _, k := range EventKinds {
			out = append(out, EventType(r, k))
		}
	}
	return out
}

// EventOf returns the event that a write of op publishes about a record of
// r, from the record as it was (before, nil for a create) to the record as
// the write committed it (after; for a delete, nil): its type and its alias
// (Resource.Events). Every write of every resource publishes one: a change
// of the soft-delete field from false to true is a delete, and back a
// create (the record is there again).
func (r *Resource) EventOf(op Op, before, after Record) (name, alias string) {
	kind := EventUpdated
	switch op {
	case OpCreate:
		kind = EventCreated
	case OpDelete:
		kind = EventDeleted
	case OpUpdate, OpReplace:
		if r.SoftDelete != "" && before != nil && after != nil {
			was, is := before.Bool(r.SoftDelete), after.Bool(r.SoftDelete)
			switch {
			case !was && is:
				kind = EventDeleted
			case was && !is:
				kind = EventCreated
			}
		}
	}
	return EventType(r, kind), r.Events[op]
}

type actorKey struct{}

// WithActor returns ctx carrying the user whose write it is, for the event
// the write records (Event.Actor). The Service sets it on every write.
func WithActor(ctx context.Context, c *Caller) context.Context {
	var id int64
	if c != nil {
		id = c.UserID
	}
	return context.WithValue(ctx, actorKey{}, id)
}

// ActorFrom returns the actor WithActor put in ctx, or 0.
func ActorFrom(ctx context.Context) int64 {
	id, _ := ctx.Value(actorKey{}).(int64)
	return id
}

// Events is how front doors (GraphQL subscriptions) hear about committed
// writes, from whichever instance made them.
type Events interface {
	// Listen calls deliver with each event named name (its type, its
	// alias, or AllEvents for every event) that is delivered
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
	// returns its error. It returns how many events it published. Relays
	// on several instances publish one batch at a time, each batch after
	// the last in id order (a relay waits while another publishes), so
	// they share the work and publish each event once, in order, unless
	// one dies between publishing and marking (then another publishes it
	// again, before anything after it).
	PublishEvents(ctx context.Context, limit int, publish func(context.Context, []Event) error) (int, error)

	// PurgeEvents deletes at most limit published events recorded before
	// t, oldest first, and returns how many it deleted. Unpublished events
	// are kept, however old.
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
