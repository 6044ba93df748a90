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
	fan := func(hooks []resourceapi.Webhook, events []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
		var out []resourceapi.WebhookDelivery
		for _, ev := range events {
			out = append(out, resourceapi.WebhookDelivery{WebhookID: hooks[0].ID, EventID: ev.ID, EventType: ev.Name,
				MessageID: fmt.Sprintf("evt_%d", ev.ID), RecordKey: fmt.Sprintf("%s/%d", ev.Resource, ev.Record.ID()), Body: []byte(`{}`)})
		}
		return out, nil
	}
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
