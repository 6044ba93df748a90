package graph

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// What bounds the memory of subscriptions, now that no count of events does:
//
//   - An event is held once, whatever the number of its subscribers: the hub
//     hands it to each, and each connection queues a two-word entry
//     (wsPending) pointing at the one shared value (sharedEvent).
//   - The sources of events (the relay's batches, the Redis stream's pages)
//     ask Ready before they hand over more: it waits while a connection that
//     is being written to has paceHigh entries or more waiting. So a client
//     that keeps reading holds at most about paceHigh entries plus one batch,
//     and the events of a burst wait where they were (the outbox, the Redis
//     stream) rather than in this process.
//   - A connection whose write makes no progress is not waited for after
//     paceStuck (one client that stops reading never holds back the others);
//     its write times out after WebSocketOptions.WriteTimeout, which closes
//     it and frees what waited for it.
//   - WebSocketOptions.MaxQueueBytes bounds what one connection may hold
//     meanwhile (counting each event's estimated size as if it were its
//     own): the last guard, far above what a reading client needs; past it
//     the connection is closed with 1008.

const (
	// paceHigh is how many entries a connection that is being written to
	// may have waiting before the sources of events wait for it.
	paceHigh = 256
	// paceStuck is how long a write may make no progress before its
	// connection is no longer waited for.
	paceStuck = 100 * time.Millisecond
	// paceTick is how often Ready looks again while it waits.
	paceTick = time.Millisecond
	// pendingEntryBytes is what one queued entry costs a connection.
	pendingEntryBytes = 16
)

// monoEpoch is the origin of the writes' timestamps (wsConn.writeSince).
var monoEpoch = time.Now()

// monoNow returns the time since monoEpoch in ns, never 0.
func monoNow() int64 { return int64(time.Since(monoEpoch)) | 1 }

// pace is the set of connections with paceHigh entries or more waiting.
type pace struct {
	mu   sync.Mutex
	over map[*wsConn]struct{}
	n    atomic.Int64 // len(over), read without the lock
}

func (p *pace) add(c *wsConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over == nil {
		p.over = make(map[*wsConn]struct{})
	}
	p.over[c] = struct{}{}
	p.n.Store(int64(len(p.over)))
}

func (p *pace) remove(c *wsConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.over, c)
	p.n.Store(int64(len(p.over)))
}

// behind reports whether a connection over paceHigh is still being written
// to (its write in progress, if any, began less than paceStuck ago).
func (p *pace) behind() bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := monoNow()
	for c := range p.over {
		if since := c.writeSince.Load(); since == 0 || now-since < int64(paceStuck) {
			return true
		}
	}
	return false
}

// Ready returns once the subscription connections can take more events: no
// connection that is being written to has paceHigh events or more waiting.
// The sources of events call it before each batch (through the hub, see
// inmem.Hub.SetPacer), so that a burst waits at its source, not in memory.
// It fails only when ctx ends.
func (h *Handler) Ready(ctx context.Context) error {
	if !h.pace.behind() {
		return nil
	}
	t := time.NewTicker(paceTick)
	defer t.Stop()
	for h.pace.behind() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// sharedEvent is an event as every subscription of this instance receives
// it: its id, the GraphQL value of its record (converted once, read only),
// when it reached the handler (for Service.Confirm), and an estimate of its
// size (for MaxQueueBytes).
type sharedEvent struct {
	id    int64
	value any
	at    time.Time
	size  int64
	// event is the event itself, for the rule layer to decide which
	// subscribers receive it (Service.EventFor, in wsConn.next).
	event resourceapi.Event
}

// converted returns ev as a sharedEvent, converted once for all the
// subscriptions the hub hands it to, one after the other.
func converted[T any](h *Handler, ev resourceapi.Event, conv func(resourceapi.Record) T) *sharedEvent {
	if last := h.converted.Load(); last != nil && last.id == ev.ID && ev.ID != 0 {
		if _, ok := last.value.(T); ok {
			return last
		}
	}
	se := &sharedEvent{id: ev.ID, value: conv(ev.Record), at: time.Now(), size: recordSize(ev.Record), event: ev}
	h.converted.Store(se)
	return se
}

// recordSize estimates what rec costs in memory and on the wire.
func recordSize(rec resourceapi.Record) int64 {
	n := int64(64)
	for k, v := range rec {
		n += int64(len(k)) + 16
		if s, ok := v.(string); ok {
			n += int64(len(s))
		}
	}
	return n
}
