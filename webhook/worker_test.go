package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/webhook"
)

// hookReceiver is a TLS endpoint on loopback that verifies every request
// with the Standard Webhooks library, by each of its secrets, and fails
// the first fail requests with 500.
type hookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	fail     int
	secrets  []string
	requests []received
}

type received struct {
	id       string
	body     map[string]any
	verified []bool // by each secret
	sigs     int
}

func newHookReceiver(t *testing.T, fail int) *hookReceiver {
	r := &hookReceiver{fail: fail}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		got := received{id: req.Header.Get("webhook-id"), sigs: len(strings.Fields(req.Header.Get("webhook-signature")))}
		_ = json.Unmarshal(body, &got.body)
		for _, s := range r.secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			got.verified = append(got.verified, err == nil && wh.Verify(body, req.Header) == nil)
		}
		r.requests = append(r.requests, got)
		if r.fail > 0 {
			r.fail--
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) setSecrets(s ...string) {
	r.mu.Lock()
	r.secrets = s
	r.mu.Unlock()
}

func (r *hookReceiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type hookSetup struct {
	db      *sqlite.DB
	service *resourceapi.Service
	hook    resourceapi.Webhook
	r       *hookReceiver
}

// startHooks opens a SQLite store, registers r's URL for types through the
// rule layer, and runs a worker with backoff b until the test ends.
func startHooks(t *testing.T, r *hookReceiver, b webhook.Backoff, types ...string) *hookSetup {
	t.Helper()
	return startHooksWith(t, r, b, nil, types...)
}

// startHooksWith is startHooks with the worker's store wrapped by wrap
// (when not nil).
func startHooksWith(t *testing.T, r *hookReceiver, b webhook.Backoff, wrap func(*sqlite.DB) resourceapi.WebhookStore, types ...string) *hookSetup {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	service := resourceapi.NewService(db, nil)
	opts := webhook.Options{AllowPrivate: true, TLS: r.Client().Transport.(*http.Transport).TLSClientConfig, Timeout: 5 * time.Second}
	service.SetWebhookPolicy(resourceapi.WebhookPolicy{CheckURL: func(u string) error { return webhook.CheckURL(u, opts) }, Overlap: time.Hour})
	url, enabled := r.URL+"/hook", true
	hook, err := service.CreateWebhook(context.Background(), resourceapi.SystemCaller(), resourceapi.WebhookInput{URL: &url, Types: &types, Enabled: &enabled})
	if err != nil {
		t.Fatalf("CreateWebhook: %v", err)
	}
	r.setSecrets(hook.Secret)
	ctx, cancel := context.WithCancel(context.Background())
	var store resourceapi.WebhookStore = db
	if wrap != nil {
		store = wrap(db)
	}
	w := &webhook.Worker{Store: store, Service: service, Client: webhook.NewClient(opts), Backoff: b, Poll: 5 * time.Millisecond,
		Lease: time.Minute, HousekeepingEvery: 5 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return &hookSetup{db: db, service: service, hook: hook, r: r}
}

func (h *hookSetup) product(t *testing.T, n int) resourceapi.Record {
	t.Helper()
	rec, err := h.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(n))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (h *hookSetup) deliveries(t *testing.T) []resourceapi.WebhookDelivery {
	t.Helper()
	ds, err := h.service.WebhookDeliveries(context.Background(), resourceapi.SystemCaller(), h.hook.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

var quick = webhook.Backoff{First: 5 * time.Millisecond, Max: 20 * time.Millisecond, Period: time.Hour}

// TestWorkerDelivers: writes reach a receiver that fails twice first,
// each event once it accepts, signed (verified by the Standard Webhooks
// library), a record's events in order, with the record as an admin sees
// it; the delivery log says what happened.
func TestWorkerDelivers(t *testing.T) {
	r := newHookReceiver(t, 2)
	h := startHooks(t, r, quick, "products.*")
	a := h.product(t, 1)
	if _, err := h.service.Update(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, resourceapi.Address{ID: a.ID()},
		resourceapi.Record{"price_cents": int64(5)}, nil); err != nil {
		t.Fatal(err)
	}
	h.product(t, 2)
	waitFor(t, "three deliveries", func() bool {
		n := 0
		for _, d := range h.deliveries(t) {
			if d.State == resourceapi.DeliveryDelivered {
				n++
			}
		}
		return n == 3
	})
	got := r.received()
	var accepted []received
	for i, req := range got {
		if !req.verified[0] {
			t.Errorf("request %d (%s): the library refused its signature", i, req.id)
		}
		if i >= 2 {
			accepted = append(accepted, req)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d requests, want 5 (two refused, three accepted)", len(got))
	}
	// Product 1's create before its update.
	var types []string
	for _, req := range accepted {
		data := req.body["data"].(map[string]any)
		if rec := data["record"].(map[string]any); rec["id"].(float64) == float64(a.ID()) {
			types = append(types, req.body["type"].(string))
		}
	}
	if !slices.Equal(types, []string{"products.created", "products.updated"}) {
		t.Fatalf("product %d's events arrived as %v, want created then updated", a.ID(), types)
	}
	log := h.deliveries(t)
	total := 0
	for _, d := range log {
		total += d.Attempts
		if d.LastStatus != 204 || d.DeliveredAt.IsZero() || !strings.HasPrefix(d.MessageID, "evt_") {
			t.Errorf("delivery %+v", d)
		}
		// The log keeps every attempt: the refusals, then the success.
		if len(d.History) != d.Attempts {
			t.Fatalf("delivery %d: %d attempts, %d in its history: %+v", d.ID, d.Attempts, len(d.History), d.History)
		}
		for i, a := range d.History {
			last := i == len(d.History)-1
			want, state := 500, resourceapi.DeliveryPending
			if last {
				want, state = 204, resourceapi.DeliveryDelivered
			}
			if a.Status != want || a.State != state || a.At.IsZero() || a.Latency < 0 || (i > 0 && a.At.Before(d.History[i-1].At)) ||
				(!last && a.Response != "not now\n") {
				t.Errorf("delivery %d, attempt %d of %d: %+v; want status %d, state %s", d.ID, i+1, len(d.History), a, want, state)
			}
		}
	}
	if total != 5 {
		t.Fatalf("the log counts %d attempts, want 5", total)
	}
}

// TestWorkerDeadLetter: a receiver that always fails: each delivery is
// dead-lettered once the retry period has passed, and the endpoint is
// disabled, saying why.
func TestWorkerDeadLetter(t *testing.T) {
	r := newHookReceiver(t, 1<<30)
	h := startHooks(t, r, webhook.Backoff{First: 5 * time.Millisecond, Max: 10 * time.Millisecond, Period: time.Second}, "*")
	h.product(t, 1)
	waitFor(t, "a dead letter", func() bool {
		log := h.deliveries(t)
		return len(log) == 1 && log[0].State == resourceapi.DeliveryDead
	})
	if d := h.deliveries(t)[0]; d.Attempts < 2 || d.LastStatus != 500 || d.LastResponse != "not now\n" || !d.DeliveredAt.IsZero() {
		t.Fatalf("dead letter %+v", d)
	}
	waitFor(t, "the endpoint disabled", func() bool {
		w, err := h.service.Webhook(context.Background(), resourceapi.SystemCaller(), h.hook.ID)
		return err == nil && !w.Enabled && strings.Contains(w.DisabledReason, "failed")
	})
}

// TestWorkerReplayAndRotation: a replay delivers the same message again
// (same webhook-id); after a rotation both secrets sign, and a receiver
// holding either verifies.
func TestWorkerReplayAndRotation(t *testing.T) {
	r := newHookReceiver(t, 0)
	h := startHooks(t, r, quick, "products.created")
	h.product(t, 1)
	waitFor(t, "the delivery", func() bool { return len(r.received()) == 1 })
	first := h.deliveries(t)[0]

	replayed, err := h.service.ReplayWebhookDeliveries(context.Background(), resourceapi.SystemCaller(), h.hook.ID, first.ID, time.Time{}, time.Time{})
	if err != nil || len(replayed) != 1 || replayed[0].ReplayOf != first.ID {
		t.Fatalf("replay = %+v, %v", replayed, err)
	}
	waitFor(t, "the replay", func() bool { return len(r.received()) == 2 })
	if got := r.received(); got[1].id != got[0].id {
		t.Fatalf("replay's webhook-id %q, want the original's %q", got[1].id, got[0].id)
	}

	old := h.hook.Secret
	rotated, err := h.service.RotateWebhookSecret(context.Background(), resourceapi.SystemCaller(), h.hook.ID)
	if err != nil || rotated.Secret == "" || rotated.Secret == old || rotated.PreviousSecret != "" {
		t.Fatalf("rotate = %+v, %v; want a new secret shown, the previous one not", rotated, err)
	}
	r.setSecrets(old, rotated.Secret)
	h.product(t, 2)
	waitFor(t, "the delivery after the rotation", func() bool { return len(r.received()) == 3 })
	if got := r.received()[2]; got.sigs != 2 || !got.verified[0] || !got.verified[1] {
		t.Fatalf("after a rotation: %d signatures, verified by old and new: %v; want 2, both", got.sigs, got.verified)
	}
	// Replay of a time range: everything so far.
	all, err := h.service.ReplayWebhookDeliveries(context.Background(), resourceapi.SystemCaller(), h.hook.ID, 0,
		time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil || len(all) != 3 {
		t.Fatalf("replay of a range = %d deliveries, %v; want 3", len(all), err)
	}
	waitFor(t, "the range replayed", func() bool { return len(r.received()) == 6 })
}

// TestWorkerAdminOnly: only admins manage endpoints, and a URL is checked.
func TestWorkerAdminOnly(t *testing.T) {
	r := newHookReceiver(t, 0)
	h := startHooks(t, r, quick, "*")
	user := resourceapi.NewCaller(7, "u", []string{resourceapi.RoleUser}, resourceapi.DefaultRoles())
	if _, err := h.service.Webhooks(context.Background(), user); resourceapi.ErrorCode(err) != resourceapi.CodeForbidden {
		t.Fatalf("a user lists webhooks: %v, want forbidden", err)
	}
	for _, u := range []string{"http://example.com/x", "ftp://example.com/", "https://user:pw@example.com/", "not a url"} {
		in := resourceapi.WebhookInput{URL: &u}
		if _, err := h.service.UpdateWebhook(context.Background(), resourceapi.SystemCaller(), h.hook.ID, in); resourceapi.ErrorCode(err) != resourceapi.CodeValidation {
			t.Errorf("URL %q: %v, want a validation error", u, err)
		}
	}
	bad := []string{"nothings.*"}
	if _, err := h.service.UpdateWebhook(context.Background(), resourceapi.SystemCaller(), h.hook.ID, resourceapi.WebhookInput{Types: &bad}); resourceapi.ErrorCode(err) != resourceapi.CodeValidation {
		t.Errorf("types %v: %v, want a validation error", bad, err)
	}
}

// disablingStore disables every endpoint it claims deliveries for, right
// after the claim (as an administrator could while the deliveries wait in
// the worker's queue), and reports what the worker then recorded or gave
// back.
type disablingStore struct {
	*sqlite.DB
	attempted, released chan int
}

func (s *disablingStore) RunWebhookRound(ctx context.Context, r resourceapi.WebhookRound) (resourceapi.WebhookRoundResult, error) {
	res, err := s.DB.RunWebhookRound(ctx, r)
	if len(r.Attempts) > 0 {
		s.attempted <- len(r.Attempts)
	}
	if len(r.Release) > 0 {
		s.released <- len(r.Release)
	}
	for _, d := range res.Claimed {
		if _, err := s.DB.UpdateWebhook(ctx, d.WebhookID, func(w *resourceapi.Webhook) error { w.Enabled = false; return nil }); err != nil {
			return res, err
		}
	}
	return res, err
}

// TestWorkerSkipsDisabledEndpoint: a delivery claimed before its endpoint
// was disabled is given back unattempted, not sent: a disabled endpoint
// receives nothing more, even what an instance had already queued.
func TestWorkerSkipsDisabledEndpoint(t *testing.T) {
	r := newHookReceiver(t, 0)
	store := &disablingStore{attempted: make(chan int, 100), released: make(chan int, 100)}
	h := startHooksWith(t, r, quick, func(db *sqlite.DB) resourceapi.WebhookStore { store.DB = db; return store }, "products.*")
	h.product(t, 1)
	select {
	case n := <-store.attempted:
		t.Fatalf("the worker sent %d deliveries to an endpoint disabled after their claim (receiver got %d requests)", n, len(r.received()))
	case <-store.released:
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the worker to send or give back the claimed delivery")
	}
	if got := r.received(); len(got) != 0 {
		t.Fatalf("the disabled endpoint received %d requests", len(got))
	}
	ds := h.deliveries(t)
	if len(ds) != 1 || ds[0].State != resourceapi.DeliveryPending || ds[0].Attempts != 0 {
		t.Fatalf("deliveries %+v; want the one delivery pending, unattempted", ds)
	}
}

// roundCounter counts the worker's rounds that wrote, and keeps the first.
type roundCounter struct {
	*sqlite.DB
	mu     sync.Mutex
	rounds []resourceapi.WebhookRoundResult
}

func (s *roundCounter) RunWebhookRound(ctx context.Context, r resourceapi.WebhookRound) (resourceapi.WebhookRoundResult, error) {
	res, err := s.DB.RunWebhookRound(ctx, r)
	if res.Wrote {
		s.mu.Lock()
		s.rounds = append(s.rounds, res)
		s.mu.Unlock()
	}
	return res, err
}

// TestWorkerWriteTransactions pins the worker's write transactions on
// SQLite, where each shares the one writer, and its fsync, with the
// requests' writes: a batch of events committed before the worker starts,
// each accepted at its first attempt, costs two in all, counted by the
// store's writer. One fans the batch out and claims every delivery; one
// records every attempt (the receiver answers once all have arrived, so
// that they end together). Before rounds it was four: fan-out, claim,
// attempts, and the housekeeping's.
func TestWorkerWriteTransactions(t *testing.T) {
	const events = 24
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		mu.Lock()
		if arrived++; arrived == events {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(time.Minute):
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	service := resourceapi.NewService(db, nil)
	opts := webhook.Options{AllowPrivate: true, TLS: receiver.Client().Transport.(*http.Transport).TLSClientConfig, Timeout: 5 * time.Second}
	service.SetWebhookPolicy(resourceapi.WebhookPolicy{CheckURL: func(u string) error { return webhook.CheckURL(u, opts) }})
	url, types := receiver.URL, []string{"products.*"}
	hook, err := service.CreateWebhook(context.Background(), resourceapi.SystemCaller(), resourceapi.WebhookInput{URL: &url, Types: &types})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		if _, err := service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(i)); err != nil {
			t.Fatal(err)
		}
	}
	store := &roundCounter{DB: db}
	before := db.WriteTransactions()
	ctx, cancel := context.WithCancel(context.Background())
	// FinishSettle: the attempts end within milliseconds of each other;
	// two seconds make sure one round records them all.
	w := &webhook.Worker{Store: store, Service: service, Client: webhook.NewClient(opts), Concurrency: events, FinishSettle: 2 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	waitFor(t, "every delivery recorded", func() bool {
		ds, err := db.WebhookDeliveries(context.Background(), hook.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range ds {
			if d.State == resourceapi.DeliveryDelivered {
				n++
			}
		}
		return n == events
	})
	cancel()
	<-done
	got := db.WriteTransactions() - before
	store.mu.Lock()
	defer store.mu.Unlock()
	if got != 2 || len(store.rounds) != 2 {
		t.Fatalf("%d events cost %d write transactions, %d of them rounds; want 2 rounds and nothing else", events, got, len(store.rounds))
	}
	if r := store.rounds[0]; r.FannedOut != events || len(r.Claimed) != events {
		t.Fatalf("the first round fanned out %d events and claimed %d deliveries; want %d and %d", r.FannedOut, len(r.Claimed), events, events)
	}
}
