package resourceapi

import (
	"context"
	"time"
)

// OutboxState is what an outbox holds, for the relay's lag: the id of the
// last event committed (ids grow with every event any process commits, so
// it counts them), how many are not yet published, and when the oldest of
// those was committed (zero when none is pending).
type OutboxState struct {
	Last    int64
	Pending int64
	Oldest  time.Time
}

// CacheStats are the lookups of one cache since it was made, for metrics:
// those it answered (Hits) and those that went to the source (Misses).
type CacheStats struct {
	Name         string
	Hits, Misses uint64
}

// OutboxStater is implemented by an Outbox that can say what it holds
// (package sqlstore), for metrics.
type OutboxStater interface {
	OutboxState(ctx context.Context) (OutboxState, error)
}
