package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// deliverOff is the environment of an instance with delivery off: it may
// register a receiver on loopback but does not trust the receiver's
// certificate (no SSL_CERT_FILE), so that an attempt it made would fail and
// stay in the delivery log beside the one that succeeded.
const deliverOff = "RESOURCEAPI_WEBHOOKS_DELIVER=false"

// waitDelivered waits until endpoint hook's delivery log on p lists n
// deliveries, every one delivered, and returns them.
func waitDelivered(t *testing.T, p *process, key string, hook int64, n int) []any {
	t.Helper()
	path := fmt.Sprintf("/api/webhooks/%d/deliveries?limit=1000", hook)
	var data []any
	waitUntil(t, "every delivery recorded as delivered", func() bool {
		status, log := request(t, p, "GET", path, "", withKey(key))
		data, _ = log["data"].([]any)
		if status != 200 || len(data) != n {
			return false
		}
		for _, d := range data {
			if d.(map[string]any)["state"] != "delivered" {
				return false
			}
		}
		return true
	})
	return data
}

// checkDeliveredOnce waits until endpoint hook's log on p shows n
// deliveries delivered, then checks that each took one attempt (the 204)
// and reached r once, and that they are the creations of n records.
func checkDeliveredOnce(t *testing.T, p *process, key string, hook int64, n int, r *hookReceiver) {
	t.Helper()
	for _, item := range waitDelivered(t, p, key, hook, n) {
		d := item.(map[string]any)
		attempts, _ := d["attempt_log"].([]any)
		if len(attempts) != 1 || attempts[0].(map[string]any)["status"] != float64(204) {
			t.Errorf("delivery %v: attempt_log %v; want one attempt, the 204 (an instance with delivery off attempted it)", d["id"], attempts)
		}
	}
	times, records := map[string]int{}, map[int64]bool{}
	for _, req := range r.received() {
		times[req.id]++
		records[req.recordID] = true
		if !req.verified[0] {
			t.Errorf("%s: the library refused its signature", req.id)
		}
	}
	for id, k := range times {
		if k != 1 {
			t.Errorf("%s received %d times, want once", id, k)
		}
	}
	if len(times) != n || len(records) != n {
		t.Errorf("%d messages about %d records received, want %d about %d", len(times), len(records), n, n)
	}
}

// mustCreateHook registers r's endpoint for products' events on p and
// returns its id.
func mustCreateHook(t *testing.T, p *process, key string, r *hookReceiver) int64 {
	t.Helper()
	status, hook := request(t, p, "POST", "/api/webhooks", `{"url": "`+r.URL+`/in", "types": ["products.*"]}`, withKey(key))
	if status != 201 {
		t.Fatalf("POST /api/webhooks: %d %v", status, hook)
	}
	r.setSecrets(hook["secret"].(string))
	return int64(hook["id"].(float64))
}

func mustCreateProduct(t *testing.T, p *process, key string, i int) {
	t.Helper()
	status, rec := request(t, p, "POST", "/api/products", fmt.Sprintf(`{"name": "Engine %d", "price_cents": 100}`, i), withKey(key))
	if status != 201 {
		t.Fatalf("POST /api/products: %d %v", status, rec)
	}
}

// TestWebhooksDeliverOff: on PostgreSQL, an instance with
// RESOURCEAPI_WEBHOOKS_DELIVER=false serves /api/webhooks and records its
// writes' events, and the instance with delivery on delivers every event,
// once, in one attempt: the one with delivery off, which cannot reach the
// receiver (it does not trust its certificate), attempted none, though it
// ran alone while half the events were written.
func TestWebhooksDeliverOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	db := pgtest.NewDatabase(t)
	r := newHookReceiver(t, 0)
	common := []string{"RESOURCEAPI_DATABASE_URL=" + db, "RESOURCEAPI_WEBHOOKS_BACKOFF=100ms", "RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE=true"}
	if u := os.Getenv("RESOURCEAPI_TEST_REDIS_URL"); u != "" {
		common = append(common, "RESOURCEAPI_REDIS_URL="+u, "RESOURCEAPI_EVENTS_STREAM=webhooks-"+filepath.Base(t.TempDir()))
	}
	off := mustStart(t, append(common, deliverOff)...)
	key := off.Key
	hook := mustCreateHook(t, off, key, r)
	const n = 40
	for i := range n / 2 {
		mustCreateProduct(t, off, key, i)
	}
	on := mustStart(t, append(common, r.env()...)...)
	for i := n / 2; i < n; i++ {
		p := off
		if i%2 == 1 {
			p = on
		}
		mustCreateProduct(t, p, key, i)
	}
	checkDeliveredOnce(t, on, key, hook, n, r)
	if log := off.stop(t); !strings.Contains(log, "delivery is off on this instance") {
		t.Errorf("the instance with delivery off did not say so at start:\n%s", log)
	}
	if log := on.stop(t); strings.Contains(log, "delivery is off") {
		t.Errorf("the instance with delivery on says it is off:\n%s", log)
	}
}

// TestWebhooksDeliverPause: on SQLite, RESOURCEAPI_WEBHOOKS_DELIVER=false
// pauses delivery, with a warning that names the outbox retention; the
// writes' events wait in the outbox (the delivery log stays empty), and
// the server started again with delivery on delivers the backlog, each
// event once, in one attempt.
func TestWebhooksDeliverPause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	r := newHookReceiver(t, 0)
	common := []string{"RESOURCEAPI_DATABASE_URL=" + filepath.Join(t.TempDir(), "paused.db"), "RESOURCEAPI_WEBHOOKS_BACKOFF=100ms",
		"RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE=true"}
	paused := mustStart(t, append(common, deliverOff)...)
	key := paused.Key
	hook := mustCreateHook(t, paused, key, r)
	const n = 20
	for i := range n {
		mustCreateProduct(t, paused, key, i)
	}
	status, log := request(t, paused, "GET", fmt.Sprintf("/api/webhooks/%d/deliveries", hook), "", withKey(key))
	if data, _ := log["data"].([]any); status != 200 || len(data) != 0 {
		t.Errorf("delivery log while paused: %d, %d deliveries, want 200 and none", status, len(data))
	}
	out := paused.stop(t)
	if !strings.Contains(out, "delivery is paused") || !strings.Contains(out, "outbox_retention=24h0m0s") {
		t.Errorf("no warning of the pause and the outbox retention at start:\n%s", out)
	}
	if got := len(r.received()); got != 0 {
		t.Errorf("%d requests received while delivery was paused, want none", got)
	}

	resumed := mustStart(t, append(common, r.env()...)...)
	checkDeliveredOnce(t, resumed, key, hook, n, r)
	resumed.stop(t)
}
