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
	// Subscribe returns the events named name that are delivered after the
	// call, each once, in the order this instance receives them. The
	// channel is closed when ctx ends, when the service shuts down, or when
	// the subscriber falls more than buffer events behind: a consumer that
	// cannot keep up is dropped rather than let memory grow. Subscribe fails
	// only when the service is shutting down.
	Subscribe(ctx context.Context, name string, buffer int) (<-chan Event, error)
}
