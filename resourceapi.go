// Package resourceapi is the vocabulary of the service: resources and their
// declarations, records, list queries, callers and permissions, errors, and the
// interfaces the storage engines implement. It imports the standard library
// only; transports (http, graph) and stores (sqlite, postgres) depend on it and
// meet in cmd/resourceapi.
package resourceapi

import (
	"context"
	"time"
)

// Store is implemented by every storage engine (sqlite, postgres). Each method is
// one transaction: it either commits all of its effects or none.
//
// Records passed in must already be decoded and validated (see http.DecodeRecord and
// Resource.Validate); the store enforces what only the database can: existence,
// uniqueness and the invariants that need a consistent view (the last admin).
// A store does not keep or change the records it is given. The records Get and
// List return may be shared with other callers (a store may cache them): treat
// them as read-only, and Clone one to change it.
type Store interface {
	// List returns one page of res's records matching q and the total number of
	// matching records.
	List(ctx context.Context, res *Resource, q ListQuery) (Page, error)

	// Get returns the record with the given id, or an error with CodeNotFound.
	Get(ctx context.Context, res *Resource, id int64) (Record, error)

	// Create inserts rec and returns the stored record, with id and timestamps.
	// Returns CodeConflict when a unique field is taken. The records of
	// before are created first, in the same transaction, each one's id set
	// into rec's field its Link names: all are committed, or none.
	Create(ctx context.Context, res *Resource, rec Record, before ...Prerequisite) (Record, error)

	// Replace overwrites the writable fields of record id with rec, or creates
	// the record with that id when it does not exist (created is then true).
	// cond, when not nil, is called inside the transaction with the current
	// record (nil when absent) and aborts the write with its error.
	// Returns CodeConflict when a unique field is taken and CodeUnprocessable
	// when the write would break an invariant (the last admin). An id that a
	// deleted record of res held (a hard delete, cascades included) is
	// retired: Replace creates no record at it, and returns CodeConflict,
	// unless ctx allows it (WithIDReuse).
	Replace(ctx context.Context, res *Resource, id int64, rec Record, cond Condition) (_ Record, created bool, _ error)

	// Update changes only the fields present in patch. Returns CodeNotFound when
	// the record does not exist, and the errors of Replace.
	Update(ctx context.Context, res *Resource, id int64, patch Record, cond Condition) (Record, error)

	// Delete removes record id and everything that belongs to it. Returns
	// CodeNotFound when it does not exist and CodeUnprocessable when the delete
	// would break an invariant.
	Delete(ctx context.Context, res *Resource, id int64, cond Condition) error

	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
}

// FirstCreator is implemented by stores that can create a record only when no
// active record holds its resource's Retain value, check and insert in one
// transaction: the first admin, when several instances start together on an
// empty database.
type FirstCreator interface {
	// CreateFirst creates rec, which must hold res's Retain value, when no
	// active record of res holds it, and reports whether it did.
	CreateFirst(ctx context.Context, res *Resource, rec Record) (_ Record, created bool, _ error)
}

// Condition is a precondition checked inside a write transaction against the
// current state of the record (nil when the record does not exist). A non-nil
// error aborts the write and is returned to the caller unchanged.
type Condition func(current Record) error

type idReuseKey struct{}

// WithIDReuse returns a context in which Store.Replace may create a record
// at a retired id. The rule layer sets it for admins only: an id once used
// names, in logs, links, caches and other systems, the record that held it,
// and only an admin may decide to give it to another.
func WithIDReuse(ctx context.Context) context.Context {
	return context.WithValue(ctx, idReuseKey{}, true)
}

// IDReuseAllowed reports whether ctx lets Store.Replace create a record at
// a retired id (WithIDReuse).
func IDReuseAllowed(ctx context.Context) bool { return ctx.Value(idReuseKey{}) != nil }

// Clock returns the current time. Stores take one reading per transaction.
type Clock func() time.Time

// Timestamp normalises t to what the service stores and shows: UTC with
// millisecond precision.
func Timestamp(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}

// Prerequisite is a record a create needs created with it, in the same
// transaction (an OAuth client's service user): Resource.Companion declares
// it, the Service validates it by its resource's rules, and the store
// creates it first and sets its id into the Link field of the record that
// needs it.
type Prerequisite struct {
	Resource *Resource
	Record   Record
	// Link is the field of the dependent record that takes the id of this
	// one.
	Link string
}
