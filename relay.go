package resourceapi

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

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

// Relay defaults.
const (
	// DefaultRelayPoll is how often a relay looks for events it was not
	// told about, when RelayConfig.Poll is 0.
	DefaultRelayPoll = 250 * time.Millisecond
	// DefaultRelayRetention is how long published events stay in the
	// outbox, when RelayConfig.Retention is 0.
	DefaultRelayRetention = time.Hour
	// DefaultRelayTimeout bounds one batch's publication, when
	// RelayConfig.Timeout is 0.
	DefaultRelayTimeout = 5 * time.Second
)

const (
	// relayBatch is how many events one PublishEvents call takes.
	relayBatch = 100
	// purgeBatch is how many published events one PurgeEvents call
	// deletes: small transactions, so that a purge after a burst never
	// holds a lock for long.
	purgeBatch = 1000
	// maxPurgeEvery is the longest time between two purges.
	maxPurgeEvery = time.Minute
	// maxBackoff bounds the wait after failures: once the engine answers
	// again, events flow again within it.
	maxBackoff = 5 * time.Second
	// relayWarnEvery spaces the relay's warnings: an outage logs one line
	// per interval, not one per attempt.
	relayWarnEvery = 10 * time.Second
	// finalTimeout bounds the last round Run makes when its context ends.
	finalTimeout = 2 * time.Second
)

// RelayConfig configures NewRelay.
type RelayConfig struct {
	Outbox    Outbox
	Publisher Publisher
	// Poll is how often the relay looks for events that no signal told it
	// about: committed by another process (a command beside the server,
	// another instance that died before publishing, or whose relay is off).
	// 0 is DefaultRelayPoll.
	Poll time.Duration
	// Retention is how long published events stay in the outbox before they
	// are purged; 0 is DefaultRelayRetention.
	Retention time.Duration
	// Timeout bounds the publication of one batch (reading, publishing and
	// marking it); 0 is DefaultRelayTimeout.
	Timeout time.Duration
	// Logger receives warnings while publishing fails, at most one every 10
	// seconds, and a line when it works again; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the retention; nil is time.Now.
	Now Clock
}

// Relay publishes the events of an Outbox through a Publisher: right after
// this process commits events (EventsWritten), every Poll for the others',
// and again after failures, backing off up to 5 seconds while the
// publisher or the database does not answer. Events wait in the outbox
// meanwhile: none is lost. A Publisher that is a Pacer is asked before each
// batch, so that a burst waits in the outbox while subscribers drain. It
// deletes published events once Retention has passed, in small batches.
type Relay struct {
	outbox    Outbox
	publisher Publisher
	poll      time.Duration
	retention time.Duration
	timeout   time.Duration
	logger    *slog.Logger
	now       Clock

	published atomic.Int64
	failing   bool
	warned    time.Time
}

// NewRelay returns a relay for cfg; Run runs it.
func NewRelay(cfg RelayConfig) *Relay {
	r := &Relay{outbox: cfg.Outbox, publisher: cfg.Publisher, poll: cfg.Poll, retention: cfg.Retention,
		timeout: cfg.Timeout, logger: cfg.Logger, now: cfg.Now}
	if r.poll <= 0 {
		r.poll = DefaultRelayPoll
	}
	if r.retention <= 0 {
		r.retention = DefaultRelayRetention
	}
	if r.timeout <= 0 {
		r.timeout = DefaultRelayTimeout
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// Published returns how many events the relay has published.
func (r *Relay) Published() int64 { return r.published.Load() }

// Run publishes events until ctx ends, then makes one last bounded round
// (for the writes that committed while the server was shutting down) and
// returns. Run it once.
func (r *Relay) Run(ctx context.Context) {
	wake := r.outbox.EventsWritten()
	poll := time.NewTicker(r.poll)
	defer poll.Stop()
	purgeEvery := min(r.retention, maxPurgeEvery)
	nextPurge := r.now()
	failures := 0
	for {
		switch {
		case r.round(ctx):
			failures = 0
		case ctx.Err() == nil:
			failures++
		}
		if now := r.now(); !now.Before(nextPurge) && ctx.Err() == nil {
			r.purge(ctx, now.Add(-r.retention))
			nextPurge = now.Add(purgeEvery)
		}
		if failures > 0 {
			// Neither wake-ups nor polls shorten the wait: while the engine
			// is down, every write would otherwise cost an attempt.
			t := time.NewTimer(backoff(r.poll, failures))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalTimeout)
			r.round(last)
			cancel()
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// backoff returns the wait after n failures in a row: the poll interval,
// doubling, at most maxBackoff.
func backoff(poll time.Duration, n int) time.Duration {
	d := poll
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// round publishes batches until the outbox has no more, and reports whether
// it got there without an error.
func (r *Relay) round(ctx context.Context) bool {
	pacer, _ := r.publisher.(Pacer)
	for ctx.Err() == nil {
		if pacer != nil && pacer.Ready(ctx) != nil {
			return false
		}
		bctx, cancel := context.WithTimeout(ctx, r.timeout)
		n, err := r.outbox.PublishEvents(bctx, relayBatch, r.publisher.Publish)
		cancel()
		r.published.Add(int64(n))
		if err != nil {
			if ctx.Err() == nil {
				r.failing = true
				r.warn("events: cannot publish; they wait in the outbox and are published once this works again", err)
			}
			return false
		}
		if r.failing {
			r.failing = false
			r.logger.Info("events: publishing again")
		}
		if n < relayBatch {
			return true
		}
	}
	return false
}

// purge deletes the events published before cutoff, a batch at a time.
func (r *Relay) purge(ctx context.Context, cutoff time.Time) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, r.timeout)
		n, err := r.outbox.PurgeEvents(pctx, cutoff, purgeBatch)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.warn("events: cannot purge published events", err)
			}
			return
		}
		if n < purgeBatch {
			return
		}
	}
}

// warn logs msg unless a warning was logged less than relayWarnEvery ago.
func (r *Relay) warn(msg string, err error) {
	now := time.Now()
	if !r.warned.IsZero() && now.Sub(r.warned) < relayWarnEvery {
		return
	}
	r.warned = now
	r.logger.Warn(msg, "err", err)
}
