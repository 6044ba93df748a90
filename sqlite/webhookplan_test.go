package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestWebhookRoundPlans: the statements of the webhook worker's rounds read
// the pending deliveries through their partial index, never through the
// delivery log's (webhook_id, id), which holds every delivery kept (7 days
// of them) and made each claim walk all the delivered ones of its endpoint,
// in a round that commits inside a request's write. Each statement the
// rounds ran is planned again (EXPLAIN QUERY PLAN) on the same file. It
// fails with the pending state bound as a value (SQLite then cannot use
// the partial index) or without INDEXED BY (the planner, without
// statistics, prefers the log's index for ORDER BY id).
func TestWebhookRoundPlans(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plans.db")
	var mu sync.Mutex
	var statements []string
	record := false
	db, err := sqlite.Open(ctx, path, sqlite.Options{OnStatement: func(q string) {
		mu.Lock()
		defer mu.Unlock()
		if record && strings.Contains(q, "webhook_deliveries") {
			statements = append(statements, q)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.CreateWebhook(ctx, resourceapi.Webhook{URL: "https://a.example/hook", Types: []string{"*"}, Enabled: true, Secret: "whsec_a"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rec := resourceapi.Products.Example(i)
		if err := resourceapi.Validate(resourceapi.Products, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(ctx, resourceapi.Products, rec); err != nil {
			t.Fatal(err)
		}
	}
	fan := storetest.FanToFirst
	room := func(int64) int { return 10 }
	mu.Lock()
	record = true
	mu.Unlock()
	// A round that fans out and claims, one that records the attempts
	// and claims, one that finds nothing (its read).
	res, err := db.RunWebhookRound(ctx, resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute})
	if err != nil || len(res.Claimed) != 3 {
		t.Fatalf("round = %+v, %v; want 3 deliveries claimed", res, err)
	}
	var attempts []resourceapi.WebhookAttempt
	for _, d := range res.Claimed {
		attempts = append(attempts, resourceapi.WebhookAttempt{DeliveryID: d.ID, Owner: "one", At: time.Now(), Status: 204, State: resourceapi.DeliveryDelivered})
	}
	if _, err := db.RunWebhookRound(ctx, resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute, Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RunWebhookRound(ctx, resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	record = false
	got := statements
	mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no statement of the rounds read webhook_deliveries")
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	claims := 0
	for _, q := range got {
		// Every value unbound (NULL): the plan does not depend on them.
		rows, err := raw.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, make([]any, strings.Count(q, "?"))...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "\n")
		if strings.Contains(all, "webhook_deliveries_log") {
			t.Errorf("a round's statement reads the delivery log's index:\n%s\nplan:\n%s", q, all)
		}
		if strings.Contains(q, "lease_until <") {
			claims++
			if !strings.Contains(all, "webhook_deliveries_pending") {
				t.Errorf("a claim does not read the pending deliveries' index:\n%s\nplan:\n%s", q, all)
			}
		}
	}
	if claims == 0 {
		t.Fatalf("no claim among the rounds' statements: %q", got)
	}
}

// TestWebhookFanOutBeforeWrite: a round makes its deliveries (the worker's
// fan: the record as an admin sees it, the body) before its write
// transaction, which on SQLite is a request's and holds the one writer;
// the transaction only checks that the endpoints and events are still
// those, and when an endpoint changed meanwhile it reads and makes them
// again: a disabled endpoint gets no delivery of the round. The fan here
// disables an endpoint on its first call, a write that could not run
// while the round held the writer (it fails at its deadline: the fan ran
// inside the transaction, as before this change).
func TestWebhookFanOutBeforeWrite(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	mk := func(url string) resourceapi.Webhook {
		h, err := db.CreateWebhook(ctx, resourceapi.Webhook{URL: url, Types: []string{"products.*"}, Enabled: true, Secret: "whsec_a"})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := mk("https://a.example/hook"), mk("https://b.example/hook")
	for i := range 2 {
		rec := resourceapi.Products.Example(i)
		if err := resourceapi.Validate(resourceapi.Products, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(ctx, resourceapi.Products, rec); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	var disableErr error
	fan := func(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
		calls++
		if calls == 1 {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, disableErr = db.UpdateWebhook(wctx, b.ID, func(w *resourceapi.Webhook) error { w.Enabled = false; return nil })
			cancel()
		}
		var out []resourceapi.WebhookDelivery
		for _, h := range hooks {
			for _, ev := range events {
				out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name,
					MessageID: fmt.Sprintf("evt_%d", ev.ID), RecordKey: fmt.Sprintf("%s/%d", ev.Resource, ev.Record.ID()), Body: []byte(`{}`)})
			}
		}
		return out, nil
	}
	res, err := db.RunWebhookRound(ctx, resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: func(int64) int { return 10 }, Now: time.Now(), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if disableErr != nil {
		t.Fatalf("the fan could not write (it ran inside the round's write transaction): %v", disableErr)
	}
	if res.FannedOut != 2 || calls != 2 {
		t.Fatalf("round = %+v, fan called %d times; want 2 events fanned out, the fan called again after the endpoint changed", res, calls)
	}
	for _, h := range []struct {
		id   int64
		want int
	}{{a.ID, 2}, {b.ID, 0}} {
		ds, err := db.WebhookDeliveries(ctx, h.id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != h.want {
			t.Errorf("endpoint %d: %d deliveries, want %d", h.id, len(ds), h.want)
		}
	}
}

// TestWebhookRoundStatementsPerBatch: a round's statements do not grow
// with its events and attempts. On SQLite a round commits inside a
// request's write transaction, so every statement it runs delays that
// request's commit: the deliveries it makes are inserted in one
// statement, and the attempts it records are recorded in one (plus one
// for their log). The rounds of 2 and of 24 events (each fanned out to
// two endpoints, then each delivery's attempt recorded) run as many
// statements. It fails with a statement per delivery inserted or per
// attempt recorded, as before. And a round claims only from endpoints
// that have something to claim (what its read found, or a record's next
// delivery an attempt it records lets go): it fails when a round that
// records attempts claims from every enabled endpoint, as before.
func TestWebhookRoundStatementsPerBatch(t *testing.T) {
	ctx := context.Background()
	claims := 0
	count := func(events int) (fanOut, record int) {
		var mu sync.Mutex
		n, on := 0, false
		db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "statements.db"), sqlite.Options{OnStatement: func(q string) {
			mu.Lock()
			defer mu.Unlock()
			if on {
				n++
				if strings.HasPrefix(q, "UPDATE webhook_deliveries SET lease_owner = ?") {
					claims++
				}
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, url := range []string{"https://a.example/hook", "https://b.example/hook"} {
			if _, err := db.CreateWebhook(ctx, resourceapi.Webhook{URL: url, Types: []string{"*"}, Enabled: true, Secret: "whsec_a"}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range events {
			rec := resourceapi.Products.Example(i)
			if err := resourceapi.Validate(resourceapi.Products, rec, resourceapi.ModeCreate); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Create(ctx, resourceapi.Products, rec); err != nil {
				t.Fatal(err)
			}
		}
		fan := func(hooks []resourceapi.Webhook, evs []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
			var out []resourceapi.WebhookDelivery
			for _, ev := range evs {
				for _, h := range hooks {
					out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name, MessageID: fmt.Sprint("evt_", ev.ID),
						RecordKey: fmt.Sprint(ev.Resource, "/", ev.Record.ID()), Body: []byte(`{}`)})
				}
			}
			return out, nil
		}
		room := func(int64) int { return 1000 }
		run := func(r resourceapi.WebhookRound) (resourceapi.WebhookRoundResult, int) {
			mu.Lock()
			n, on = 0, true
			mu.Unlock()
			res, err := db.RunWebhookRound(ctx, r)
			mu.Lock()
			defer mu.Unlock()
			on = false
			if err != nil {
				t.Fatal(err)
			}
			return res, n
		}
		res, fanOut := run(resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: fan, Room: room, Now: time.Now(), Lease: time.Minute})
		if res.FannedOut != events || len(res.Claimed) != 2*events {
			t.Fatalf("round fanned out %d events, claimed %d deliveries; want %d, %d", res.FannedOut, len(res.Claimed), events, 2*events)
		}
		var attempts []resourceapi.WebhookAttempt
		for i, d := range res.Claimed {
			state, next := resourceapi.DeliveryDelivered, time.Time{}
			if i%2 == 1 {
				state, next = resourceapi.DeliveryPending, time.Now().Add(time.Hour)
			}
			attempts = append(attempts, resourceapi.WebhookAttempt{DeliveryID: d.ID, Owner: "one", At: time.Now(), Status: 204, State: state, Next: next})
		}
		res, record = run(resourceapi.WebhookRound{Owner: "one", Attempts: attempts, Room: room, Now: time.Now(), Lease: time.Minute})
		if !res.Wrote {
			t.Fatal("the round recording the attempts wrote nothing")
		}
		return fanOut, record
	}
	fan2, record2 := count(2)
	fan24, record24 := count(24)
	if fan24 != fan2 {
		t.Errorf("a round fanning out 24 events ran %d statements, one fanning out 2 ran %d", fan24, fan2)
	}
	if record24 != record2 {
		t.Errorf("a round recording 48 attempts ran %d statements, one recording 4 ran %d", record24, record2)
	}
	// Every delivery was claimed as it was made, and each record has one:
	// after the attempts nothing is left to claim, and no round runs the
	// claim (it walks the endpoint's pending deliveries, inside the
	// request's transaction on SQLite).
	if claims != 0 {
		t.Errorf("the rounds ran the claim %d times; want none: nothing was left to claim", claims)
	}
}

// TestWebhookFanOutWaitsForPending: a record's event fanned out while its
// earlier delivery is still pending (claimed, under way) is not claimed
// as it is made: it waits, so that the record's events arrive in order.
// It failed on SQLite when the fan-out's check bound the record keys
// before the endpoints in a statement that names the endpoints first
// (positional placeholders): the check matched nothing.
func TestWebhookFanOutWaitsForPending(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	if _, err := db.CreateWebhook(ctx, resourceapi.Webhook{URL: "https://a.example/hook", Types: []string{"*"}, Enabled: true, Secret: "whsec_a"}); err != nil {
		t.Fatal(err)
	}
	rec := resourceapi.Products.Example(1)
	if err := resourceapi.Validate(resourceapi.Products, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	created, err := db.Create(ctx, resourceapi.Products, rec)
	if err != nil {
		t.Fatal(err)
	}
	round := resourceapi.WebhookRound{Owner: "one", FanOut: 100, Fan: storetest.FanToFirst, Room: func(int64) int { return 10 }, Now: time.Now(), Lease: time.Minute}
	res, err := db.RunWebhookRound(ctx, round)
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("first round = %+v, %v; want the creation's delivery claimed", res, err)
	}
	if _, err := db.Update(ctx, resourceapi.Products, created.ID(), resourceapi.Record{"price_cents": int64(5)}, nil); err != nil {
		t.Fatal(err)
	}
	round.Now = time.Now()
	res, err = db.RunWebhookRound(ctx, round)
	if err != nil || res.FannedOut != 1 || len(res.Claimed) != 0 {
		t.Fatalf("second round = %+v, %v; want the update fanned out and not claimed: the creation's delivery is pending", res, err)
	}
}
