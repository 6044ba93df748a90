// Package relay publishes the events of a resourceapi.Outbox through a
// resourceapi.Publisher: the worker between the store's outbox and the
// engine that carries events to subscribers (docs/events.md).
package relay

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Relay defaults.
const (
	// DefaultPoll is how often a relay looks for events it was not
	// told about, when Config.Poll is 0.
	DefaultPoll = 250 * time.Millisecond
	// DefaultRetention is how long published events stay in the
	// outbox, when Config.Retention is 0.
	DefaultRetention = time.Hour
	// DefaultTimeout bounds one batch's publication, when
	// Config.Timeout is 0.
	DefaultTimeout = 5 * time.Second
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

// Config configures New.
type Config struct {
	// Poll is how often the relay looks for events that no signal told it
	// about: committed by another process (a command beside the server,
	// another instance that died before publishing, or whose relay is off).
	// 0 is DefaultPoll.
	Poll time.Duration
	// Retention is how long events stay in the outbox, from their
	// recording, before they are purged once published; 0 is
	// DefaultRetention.
	Retention time.Duration
	// Timeout bounds the publication of one batch (reading, publishing and
	// marking it); 0 is DefaultTimeout.
	Timeout time.Duration
	// Logger receives warnings while publishing fails, at most one every 10
	// seconds, and a line when it works again; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the retention; nil is time.Now.
	Now func() time.Time
	// Trace, when set, is told of each batch as its publication starts and
	// ends (package tracing: a span per batch).
	Trace func(ctx context.Context, events int) (context.Context, func(error))
}

// Relay publishes the events of an Outbox through a Publisher: right after
// this process commits events (EventsWritten), every Poll for the others',
// and again after failures, backing off up to 5 seconds while the
// publisher or the database does not answer. Events wait in the outbox
// meanwhile: none is lost. A Publisher that is a Pacer is asked before each
// batch, so that a burst waits in the outbox while subscribers drain. It
// deletes published events once Retention has passed, in small batches.
type Relay struct {
	outbox    resourceapi.Outbox
	publisher resourceapi.Publisher
	poll      time.Duration
	retention time.Duration
	timeout   time.Duration
	logger    *slog.Logger
	now       func() time.Time
	trace     func(ctx context.Context, events int) (context.Context, func(error))

	published atomic.Int64
	failing   bool
	warned    time.Time
}

// New returns a relay that publishes the events of outbox through
// publisher, configured by cfg; Run runs it.
func New(outbox resourceapi.Outbox, publisher resourceapi.Publisher, cfg Config) *Relay {
	r := &Relay{outbox: outbox, publisher: publisher, poll: cfg.Poll, retention: cfg.Retention,
		timeout: cfg.Timeout, logger: cfg.Logger, now: cfg.Now, trace: cfg.Trace}
	if r.poll <= 0 {
		r.poll = DefaultPoll
	}
	if r.retention <= 0 {
		r.retention = DefaultRetention
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
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
	pacer, _ := r.publisher.(resourceapi.Pacer)
	for ctx.Err() == nil {
		if pacer != nil && pacer.Ready(ctx) != nil {
			return false
		}
		bctx, cancel := context.WithTimeout(ctx, r.timeout)
		n, err := r.outbox.PublishEvents(bctx, relayBatch, r.publish)
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

// publish hands events to the publisher, traced when Config.Trace is set.
func (r *Relay) publish(ctx context.Context, events []resourceapi.Event) error {
	if r.trace == nil {
		return r.publisher.Publish(ctx, events)
	}
	ctx, end := r.trace(ctx, len(events))
	err := r.publisher.Publish(ctx, events)
	end(err)
	return err
}

// purge deletes the published events recorded before cutoff, a batch at a
// time.
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
