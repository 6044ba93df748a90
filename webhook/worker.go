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
// together.
const maxInFlight = 64

// Worker delivers the events of the outbox to the webhook endpoints, on
// every instance: it fans each committed event out once into a delivery per
// matching endpoint (the body: the record as an admin may see it, by the
// rule layer's EventFor), claims due deliveries under a lease in the
// database (a dead instance's lease expires and another takes them), sends
// them, and records each attempt, retrying by Backoff, dead-lettering after
// Backoff.Period, and disabling endpoints that fail for longer. It works
// beside the requests, never on their path: a write only commits its
// event.
type Worker struct {
	Store   resourceapi.WebhookStore
	Service *resourceapi.Service
	Client  *http.Client
	// Events, when set, wakes the worker as soon as an event is published
	// (on this instance or, through a shared engine, another), rather than
	// at the next poll.
	Events resourceapi.Events
	// Owner names this instance in leases; default: random.
	Owner       string
	Backoff     Backoff
	Lease       time.Duration
	Concurrency int
	Poll        time.Duration
	// Batch is how many events one fan-out takes; default 200.
	Batch  int
	Logger *slog.Logger
	// Settle is how long the worker waits, once woken by an event, for
	// the events that follow it, so that a burst of writes costs one
	// fan-out transaction rather than one each (on SQLite, where the
	// worker's transactions share the one writer with the requests');
	// default 50 ms.
	Settle time.Duration
	// HousekeepingEvery is how often the worker disables failing endpoints
	// and purges the delivery log; default a minute.
	HousekeepingEvery time.Duration

	mu       sync.Mutex
	inflight map[int64]int // attempts under way, by endpoint
	total    int
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
	w.inflight = map[int64]int{}
}

// Run delivers until ctx ends, then waits for the attempts under way (each
// bounded by the client's timeout) and returns. Failures of the store are
// logged and retried at the next poll.
func (w *Worker) Run(ctx context.Context) error {
	w.defaults()
	// wake: an event was published; freed: an attempt ended (a record's
	// next delivery, or another to the same endpoint, may go now).
	wake, freed := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if w.Events != nil {
		_ = w.Events.Listen(ctx, resourceapi.AllEvents, func(resourceapi.Event) bool { signal(wake); return true }, func() {})
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var lastHousekeeping time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		fanOut := true
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(w.Settle):
			}
		case <-freed:
			fanOut = false
		case <-timer.C:
		}
		for fanOut {
			n, err := w.Store.FanOutWebhookEvents(ctx, w.Batch, w.fan)
			if err != nil {
				if ctx.Err() == nil {
					w.Logger.Error("webhooks: fan out events", "error", err)
				}
				break
			}
			fanOut = n == w.Batch
		}
		if time.Since(lastHousekeeping) >= w.HousekeepingEvery {
			lastHousekeeping = time.Now()
			w.housekeeping(ctx)
		}
		for w.claim(ctx, &wg, func() { signal(freed) }) {
		}
		timer.Reset(w.Poll)
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

// claim leases what this instance can attempt now, at most Concurrency at
// a time (an endpoint's share), starts the attempts, and reports whether
// to claim again (it took all it asked for, and room is left).
func (w *Worker) claim(ctx context.Context, wg *sync.WaitGroup, nudge func()) bool {
	w.mu.Lock()
	free := min(maxInFlight-w.total, w.Concurrency)
	w.mu.Unlock()
	if free <= 0 {
		return false
	}
	claimed, err := w.Store.ClaimWebhookDeliveries(ctx, w.Owner, time.Now(), w.Lease, free)
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Error("webhooks: claim deliveries", "error", err)
		}
		return false
	}
	var back []int64
	w.mu.Lock()
	for _, d := range claimed {
		if w.inflight[d.WebhookID] >= w.Concurrency {
			back = append(back, d.ID) // the endpoint has all it may take
			continue
		}
		w.inflight[d.WebhookID]++
		w.total++
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.attempt(ctx, d)
			w.mu.Lock()
			w.inflight[d.WebhookID]--
			if w.inflight[d.WebhookID] == 0 {
				delete(w.inflight, d.WebhookID)
			}
			w.total--
			w.mu.Unlock()
			nudge() // the record's next delivery may go now
		}()
	}
	w.mu.Unlock()
	if err := w.Store.ReleaseWebhookDeliveries(ctx, w.Owner, back); err != nil && ctx.Err() == nil {
		w.Logger.Error("webhooks: release deliveries", "error", err)
	}
	return len(claimed) == free && len(back) == 0
}

// attempt sends d once and records the outcome.
func (w *Worker) attempt(ctx context.Context, d resourceapi.WebhookDelivery) {
	// What is recorded is recorded even as the server stops.
	record, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	hook, err := w.Store.Webhook(ctx, d.WebhookID)
	if err != nil {
		_ = w.Store.ReleaseWebhookDeliveries(record, w.Owner, []int64{d.ID})
		return
	}
	now := time.Now()
	a := Send(ctx, w.Client, hook.URL, hook.Secrets(now), Message{ID: d.MessageID, Body: d.Body}, now)
	if ctx.Err() != nil && !a.OK() {
		// Stopped, not failed: another instance (or this one, restarted)
		// attempts it again.
		_ = w.Store.ReleaseWebhookDeliveries(record, w.Owner, []int64{d.ID})
		return
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
	if err := w.Store.FinishWebhookDelivery(record, out); err != nil {
		w.Logger.Error("webhooks: record an attempt", "delivery", d.ID, "error", err)
	}
}
