package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestFanOutInRecordOrder has two instances fan events out to a webhook
// at once: a record's deliveries must be created in the order of its
// events, since the worker delivers a record's deliveries in id order.
// Instance A (a transaction doing what FanOutWebhookEvents does) holds the
// record's creation; instance B fans out meanwhile. B waits for A, and the
// update's delivery comes after the creation's. When instances took
// distinct events at once (SKIP LOCKED), B skipped the held creation and
// fanned out the update first: its delivery, with the lower id, went
// first.
func TestFanOutInRecordOrder(t *testing.T) {
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	ctx := context.Background()
	hook, err := db.CreateWebhook(ctx, resourceapi.Webhook{URL: "https://hooks.example.com/in", Types: []string{"users.*"},
		Enabled: true, Secret: "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0"})
	if err != nil {
		t.Fatal(err)
	}
	user := mustUser(t, db, "first@example.com")
	key := "users/" + strconv.FormatInt(user.ID(), 10)
	// The record's second event: an update, committed after its creation.
	if _, err := raw.Exec(`INSERT INTO events (name, alias, actor, resource, record_id, payload, payload_text, created_at)
		SELECT 'users.updated', '', actor, resource, record_id, payload, payload_text, created_at FROM events ORDER BY id DESC LIMIT 1`); err != nil {
		t.Fatal(err)
	}

	// Instance A takes the fan-out lock and the oldest event, the creation.
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext('webhooks.fanout'))`); err != nil {
		t.Fatal(err)
	}
	var created int64
	if err := tx.QueryRow(`SELECT id FROM events WHERE hooked_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE`).Scan(&created); err != nil {
		t.Fatal(err)
	}

	// Instance B fans out meanwhile.
	done := make(chan struct{})
	var fanned int
	var errB error
	go func() {
		defer close(done)
		fanned, errB = db.FanOutWebhookEvents(ctx, 100, func(hooks []resourceapi.Webhook, evs []resourceapi.Event) ([]resourceapi.WebhookDelivery, error) {
			var out []resourceapi.WebhookDelivery
			for _, h := range hooks {
				for _, ev := range evs {
					out = append(out, resourceapi.WebhookDelivery{WebhookID: h.ID, EventID: ev.ID, EventType: ev.Name,
						MessageID: "msg_" + strconv.FormatInt(ev.ID, 10), RecordKey: ev.Resource + "/" + strconv.FormatInt(ev.Record.ID(), 10),
						Body: []byte("{}")})
				}
			}
			return out, nil
		})
	}()
	waited := pgtest.WaitLockedOr(t, raw, done)

	// A stores the creation's delivery, marks it and commits.
	if _, err := tx.Exec(`INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, message_id, record_key, body, state, next_attempt_at, created_at)
		VALUES ($1, $2, 'users.created', $3, $4, '{}', $5, now(), now())`,
		hook.ID, created, "msg_"+strconv.FormatInt(created, 10), key, resourceapi.DeliveryPending); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE events SET hooked_at = now() WHERE id = $1`, created); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if errB != nil {
		t.Fatal(errB)
	}

	order := queryIDs(t, raw, `SELECT event_id FROM webhook_deliveries WHERE record_key = $1 ORDER BY id`, key)
	if len(order) != 2 || order[0] != created || !slices.IsSorted(order) || fanned != 1 {
		t.Fatalf("%s's deliveries, in id order, are of events %v (B fanned out %d, waited for A: %v); want the creation %d first, then the update, each once",
			key, order, fanned, waited, created)
	}
}
