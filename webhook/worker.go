package webhook

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Defaults of a Worker's settings.
const (
	// DefaultTimeout bounds one attempt.
	DefaultTimeout = 10 * time.Second
	// DefaultLease is how long an instance holds a delivery it attempts:
	// longer than an attempt, so that only a dead instance's lease expires.
	DefaultLease = time.Minute
	// DefaultConcurrency is how many attempts at once go to one endpoint
	// from one instance.
	DefaultConcurrency = 4
	// DefaultPoll is how often a worker looks for work when nothing wakes
	// it: events committed by another instance, retries that come due.
	DefaultPoll = time.Second
	// DeliveryLogRetention is how long delivered and dead-lettered
	// deliveries stay in the log (and can be replayed), at least.
	DeliveryLogRetention = 7 * 24 * time.Hour
)

// maxInFlight bounds the attempts a worker makes at once, all endpoints
// together; maxHeld the deliveries it holds leases on (claimed, under way
// or not yet recorded).
const (
	maxInFlight = 64
	maxHeld     = 512
)

// Worker delivers the events of the outbox to the webhook endpoints, on
// every instance that runs one (all, unless RESOURCEAPI_WEBHOOKS_DELIVER
// keeps it off the instances that serve requests): it fans each committed event out once into a delivery per
// matching endpoint (the body: the record as an admin may see it, by the
// rule layer's EventFor), claims due deliveries under a lease in the
// database (a dead instance's lease expires and another takes them), sends
// them, and records each attempt, retrying by Backoff, dead-lettering after
// Backoff.Period, and disabling endpoints that fail for longer. It works
// beside the requests, never on their path: a write only commits its
// event.
//
// Its own writes are few, because on SQLite they share the one writer, and
// its fsync, with the requests': the worker works in rounds, at most one
// every Settle, and each round is one write transaction
// (WebhookStore.RunWebhookRound), or none when there is nothing to do. A
// round records the attempts that ended since the last (their outcome, and
// each attempt kept in the delivery log), fans out the events committed
// since, and claims a share of every endpoint's due deliveries (Queue
// each), those it just made included, which the worker then sends
// Concurrency at a time. So at any rate of events the worker makes at most
// 1/Settle write transactions a second (20 by default).
type Worker struct {
	Store   resourceapi.WebhookStore
	Service *resourceapi.Service
	Client  *http.Client
	// Events, when set, wakes the worker as soon as an event is published
	// (on this instance or, through a shared engine, another), rather than
	// at the next poll.
	Events resourceapi.Events
	// Owner names this instance in leases; default: random.
	Owner   string
	Backoff Backoff
	Lease   time.Duration
	// Concurrency bounds the attempts under way to one endpoint from this
	// instance.
	Concurrency int
	// Queue is how many deliveries of one endpoint the worker holds (sent
	// Concurrency at a time; claimed, under way, or ended and not yet
	// recorded), and so at most how many it sends it per round; default
	// 16 × Concurrency. One that
	// waits so long in the queue that its lease could expire before its
	// attempt ends is given back unattempted.
	Queue int
	Poll  time.Duration
	// Batch is how many events one fan-out takes; default 200.
	Batch  int
	Logger *slog.Logger
	// Settle is how long the worker waits, once woken by an event, for
	// the events that follow it, and the shortest time between two of its
	// rounds, so that a burst of writes and of attempts costs one
	// transaction rather than one each (on SQLite, where the worker's
	// transactions share the one writer with the requests'); default
	// 50 ms.
	Settle time.Duration
	// FinishSettle is how long the worker waits, once an attempt has
	// ended, for others to end before a round records them all (rounds
	// stay Settle apart); default 20 ms.
	FinishSettle time.Duration
	// HousekeepingEvery is how often the worker disables failing endpoints
	// and purges the delivery log; default a minute.
	HousekeepingEvery time.Duration

	mu       sync.Mutex
	queued   map[int64][]claimed // claimed, not yet attempted, by endpoint
	inflight map[int64]int       // attempts under way, by endpoint
	held     map[int64]int       // leases held (queued, under way, not yet recorded), by endpoint
	total    int                 // attempts under way
	allHeld  int
	// ended are the outcomes the next round records; signalEnded tells
	// the loop that one was added.
	ended       []outcome
	signalEnded func()
}

// claimed is a delivery the worker holds a lease on, and when it claimed
// it.
type claimed struct {
	d  resourceapi.WebhookDelivery
	at time.Time
}

// outcome is what a round records of a delivery held: an attempt, or
// (attempt nil) the delivery given back unattempted.
type outcome struct {
	hook, id int64
	attempt  *resourceapi.WebhookAttempt
}

func (w *Worker) defaults() {
	if w.Owner == "" {
		w.Owner = "worker-" + rand.Text()[:12]
	}
	if w.Backoff == (Backoff{}) {
		w.Backoff = DefaultBackoff
	}
	if w.Lease <= 0 {
		w.Lease = DefaultLease
	}
	if w.Concurrency <= 0 {
		w.Concurrency = DefaultConcurrency
	}
	if w.Queue < w.Concurrency {
		w.Queue = 16 * w.Concurrency
	}
	if w.FinishSettle <= 0 {
		w.FinishSettle = 20 * time.Millisecond
	}
	if w.Poll <= 0 {
		w.Poll = DefaultPoll
	}
	if w.Batch <= 0 {
		w.Batch = 200
	}
	if w.Settle <= 0 {
		w.Settle = 50 * time.Millisecond
	}
	if w.HousekeepingEvery <= 0 {
		w.HousekeepingEvery = time.Minute
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
	w.queued, w.inflight, w.held = map[int64][]claimed{}, map[int64]int{}, map[int64]int{}
}

// Run delivers until ctx ends, then waits for the attempts under way (each
// bounded by the client's timeout), records them and returns. Failures of
// the store are logged and retried at the next poll.
func (w *Worker) Run(ctx context.Context) error {
	w.defaults()
	// wake: an event was published; ended: an attempt ended (to record;
	// a record's next delivery, or more to the same endpoint, may then
	// be claimed).
	wake, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if w.Events != nil {
		_ = w.Events.Listen(ctx, resourceapi.AllEvents, func(resourceapi.Event) bool { signal(wake); return true }, func() {})
	}
	w.signalEnded = func() { signal(ended) }
	var wg sync.WaitGroup
	defer func() {
		// The attempts under way end (each bounded by the client's
		// timeout), what is queued is given back, and all is recorded.
		wg.Wait()
		w.mu.Lock()
		for hook, q := range w.queued {
			for _, c := range q {
				w.ended = append(w.ended, outcome{hook: hook, id: c.d.ID})
			}
		}
		clear(w.queued)
		w.mu.Unlock()
		w.round(ctx, false)
	}()
	var last, lastHousekeeping time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var settle time.Duration
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			settle = w.Settle
		case <-ended:
			settle = w.FinishSettle
		case <-timer.C:
		}
		// Rounds stay Settle apart, however many events and attempts
		// come: each is a write transaction (see Worker).
		if wait := max(settle, time.Until(last.Add(w.Settle))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if time.Since(lastHousekeeping) >= w.HousekeepingEvery {
			lastHousekeeping = time.Now()
			w.housekeeping(ctx)
		}
		w.round(ctx, true)
		last = time.Now()
		w.dispatch(ctx, &wg)
		timer.Reset(w.Poll)
	}
}

// round records the attempts that ended and gives back the deliveries not
// attempted and, with work, fans out the events committed since the last
// round and claims what this instance has room for (up to Queue held of
// each endpoint, maxHeld in all): one write transaction, or none when
// there is nothing to do. A full batch of events takes another round at
// once. What is recorded is recorded even as the worker stops.
func (w *Worker) round(ctx context.Context, work bool) {
	for {
		w.mu.Lock()
		ended := w.ended
		w.ended = nil
		freed := map[int64]int{}
		for _, o := range ended {
			freed[o.hook]++
		}
		room := maxHeld - w.allHeld + len(ended)
		w.mu.Unlock()
		r := resourceapi.WebhookRound{Owner: w.Owner}
		for _, o := range ended {
			if o.attempt != nil {
				r.Attempts = append(r.Attempts, *o.attempt)
			} else {
				r.Release = append(r.Release, o.id)
			}
		}
		claim := func() {
			left := room
			r.Now, r.Lease = time.Now(), w.Lease
			r.Room = func(hook int64) int {
				w.mu.Lock()
				n := max(min(w.Queue-w.held[hook]+freed[hook], left), 0)
				w.mu.Unlock()
				left -= n
				return n
			}
		}
		work = work && ctx.Err() == nil
		if work {
			r.FanOut, r.Fan = w.Batch, w.fan
			if room > 0 {
				claim()
			}
		}
		store, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		res, err := w.Store.RunWebhookRound(store, r)
		if err != nil && r.FanOut > 0 {
			// An event that cannot be fanned out must not keep the
			// attempts from being recorded, nor the deliveries from
			// being claimed.
			w.Logger.Error("webhooks: fan out events", "error", err)
			r.FanOut, r.Fan, r.Room = 0, nil, nil
			if room > 0 {
				claim()
			}
			res, err = w.Store.RunWebhookRound(store, r)
		}
		cancel()
		if err != nil {
			// Unrecorded, the leases expire and the deliveries are
			// attempted again.
			w.Logger.Error("webhooks: round", "attempts", len(r.Attempts), "released", len(r.Release), "error", err)
		}
		now := time.Now()
		w.mu.Lock()
		for _, o := range ended {
			if w.held[o.hook]--; w.held[o.hook] <= 0 {
				delete(w.held, o.hook)
			}
			w.allHeld--
		}
		for _, d := range res.Claimed {
			w.queued[d.WebhookID] = append(w.queued[d.WebhookID], claimed{d: d, at: now})
			w.held[d.WebhookID]++
			w.allHeld++
		}
		w.mu.Unlock()
		if !work || err != nil || res.FannedOut < w.Batch {
			return
		}
	}
}

// fan makes the deliveries of events to hooks.
func (w *Worker) fan(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
	filters := make([]resourceapi.EventFilter, len(hooks))
	for i, h := range hooks {
		filters[i], _ = resourceapi.NewEventFilter(h.Types) // one that no longer parses matches nothing
	}
	admin := resourceapi.SystemCaller()
	var out []resourceapi.WebhookDelivery
	for _, ev := range events {
		var msg *Message
		for i, h := range hooks {
			if !filters[i].Match(ev.Name) {
				continue
			}
			if msg == nil {
				seen, ok := w.Service.EventFor(admin, ev)
				if !ok {
					break
				}
				m, err := NewMessage(seen)
				if err != nil {
					return nil, fmt.Errorf("event %d: %w", ev.ID, err)
				}
				msg = &m
			}
			out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name, MessageID: msg.ID,
				RecordKey: ev.Resource + "/" + strconv.FormatInt(ev.Record.ID(), 10), Body: msg.Body})
		}
	}
	return out, nil
}

// housekeeping disables the endpoints that failed for longer than the retry
// period and purges the old delivery log.
func (w *Worker) housekeeping(ctx context.Context) {
	now := time.Now()
	reason := fmt.Sprintf("every delivery failed for more than %s (the retry period) until %s: fix the receiver, then enable the endpoint again",
		w.Backoff.Period, now.UTC().Format(time.RFC3339))
	disabled, err := w.Store.DisableFailingWebhooks(ctx, now.Add(-w.Backoff.Period), reason)
	if err != nil && ctx.Err() == nil {
		w.Logger.Error("webhooks: disable failing endpoints", "error", err)
	}
	for _, h := range disabled {
		w.Logger.Warn("webhooks: endpoint disabled", "webhook", h.ID, "failing_since", h.FailingSince, "reason", reason)
	}
	if _, err := w.Store.PurgeWebhookDeliveries(ctx, now.Add(-max(DeliveryLogRetention, w.Backoff.Period)), 1000); err != nil && ctx.Err() == nil {
		w.Logger.Error("webhooks: purge the delivery log", "error", err)
	}
}

// attemptBound is how long an attempt may take: the client's timeout.
func (w *Worker) attemptBound() time.Duration {
	if w.Client != nil && w.Client.Timeout > 0 {
		return w.Client.Timeout
	}
	return DefaultTimeout
}

// dispatch starts the queued attempts that may go now: at most Concurrency
// to an endpoint, maxInFlight in all. A delivery claimed so long ago that
// its lease could expire before its attempt ends is given back.
func (w *Worker) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	if ctx.Err() != nil {
		return
	}
	fresh := w.Lease - w.attemptBound()
	if fresh <= 0 {
		fresh = w.Lease / 2
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for hook, q := range w.queued {
		for len(q) > 0 && w.inflight[hook] < w.Concurrency && w.total < maxInFlight {
			c := q[0]
			q = q[1:]
			if now.Sub(c.at) > fresh {
				w.ended = append(w.ended, outcome{hook: hook, id: c.d.ID})
				w.signalEnded()
				continue
			}
			w.inflight[hook]++
			w.total++
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := w.attempt(ctx, c.d)
				w.mu.Lock()
				w.ended = append(w.ended, o)
				if w.inflight[hook]--; w.inflight[hook] == 0 {
					delete(w.inflight, hook)
				}
				w.total--
				w.mu.Unlock()
				w.signalEnded()
				w.dispatch(ctx, wg) // the next of the queue may go now
			}()
		}
		if len(q) == 0 {
			delete(w.queued, hook)
		} else {
			w.queued[hook] = q
		}
	}
}

// attempt sends d once and returns what to record: the attempt, or
// nothing (give d back) when the endpoint could not be read or the worker
// stopped during the attempt.
func (w *Worker) attempt(ctx context.Context, d resourceapi.WebhookDelivery) outcome {
	back := outcome{hook: d.WebhookID, id: d.ID}
	hook, err := w.Store.Webhook(ctx, d.WebhookID)
	if err != nil || !hook.Enabled {
		// Gone, or disabled since the claim: given back unattempted (a
		// disabled endpoint's deliveries are claimed again only if it is
		// enabled again).
		return back
	}
	now := time.Now()
	a := Send(ctx, w.Client, hook.URL, hook.Secrets(now), Message{ID: d.MessageID, Body: d.Body}, now)
	if ctx.Err() != nil && !a.OK() {
		// Stopped, not failed: another instance (or this one, restarted)
		// attempts it again.
		return back
	}
	out := resourceapi.WebhookAttempt{DeliveryID: d.ID, Owner: w.Owner, At: now, Status: a.Status, Latency: a.Latency, Response: a.Snippet}
	first := d.FirstAttemptAt
	if first.IsZero() {
		first = now
	}
	switch wait := w.Backoff.Wait(d.Attempts + 1); {
	case a.OK():
		out.State = resourceapi.DeliveryDelivered
	case now.Add(wait).Sub(first) > w.Backoff.Period:
		out.State = resourceapi.DeliveryDead
		w.Logger.Warn("webhooks: delivery dead-lettered", "webhook", d.WebhookID, "delivery", d.ID, "event", d.EventID, "attempts", d.Attempts+1)
	default:
		out.State, out.Next = resourceapi.DeliveryPending, now.Add(wait)
	}
	back.attempt = &out
	return back
}
