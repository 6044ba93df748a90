package main_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// hookReceiver is an https endpoint on loopback that the binary delivers
// to: its certificate is in a file that SSL_CERT_FILE names for the
// binary, and the binary runs with RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE=true
// (a receiver on loopback is otherwise refused). It verifies every request
// with the Standard Webhooks library.
type hookReceiver struct {
	*httptest.Server
	certFile string
	delay    time.Duration

	mu       sync.Mutex
	gate     chan struct{} // when set, requests wait until it is closed
	secrets  []string
	requests []hookRequest
	inflight map[string]int // webhook-id: requests being answered
}

type hookRequest struct {
	id       string
	typ      string
	recordID int64
	sigs     int
	verified []bool
	answered time.Time
}

func newHookReceiver(t *testing.T, delay time.Duration) *hookReceiver {
	t.Helper()
	r := &hookReceiver{delay: delay, inflight: map[string]int{}}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		r.inflight[id]++
		secrets, gate := r.secrets, r.gate
		r.mu.Unlock()
		if gate != nil {
			<-gate
		}
		var msg struct {
			Type string `json:"type"`
			Data struct {
				Record struct {
					ID int64 `json:"id"`
				} `json:"record"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &msg)
		got := hookRequest{id: id, typ: msg.Type, recordID: msg.Data.Record.ID, sigs: len(strings.Fields(req.Header.Get("webhook-signature")))}
		for _, s := range secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			got.verified = append(got.verified, err == nil && wh.Verify(body, req.Header) == nil)
		}
		time.Sleep(r.delay)
		w.WriteHeader(http.StatusNoContent)
		got.answered = time.Now()
		r.mu.Lock()
		r.inflight[id]--
		r.requests = append(r.requests, got)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	r.certFile = filepath.Join(t.TempDir(), "receiver.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
	if err := os.WriteFile(r.certFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// env is what a server needs to deliver to the receiver.
func (r *hookReceiver) env() []string {
	return []string{"SSL_CERT_FILE=" + r.certFile, "RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE=true"}
}

func (r *hookReceiver) setSecrets(s ...string) {
	r.mu.Lock()
	r.secrets = s
	r.mu.Unlock()
}

func (r *hookReceiver) received() []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookRequest(nil), r.requests...)
}

// waitUntil polls cond; the minute bounds a broken build, it asserts no
// speed.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited two minutes for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookCommands registers an endpoint with the command line beside a
// running server, on each store: the server delivers a user's creation to
// it, signed with the secret create printed (verified by the Standard
// Webhooks library); list, deliveries, rotate (both secrets sign after it)
// and delete do what they say.
func TestWebhookCommands(t *testing.T) {
	for name, database := range stores() {
		t.Run(name, func(t *testing.T) {
			r := newHookReceiver(t, 0)
			env := append([]string{"RESOURCEAPI_DATABASE_URL=" + database(t)}, r.env()...)
			srv := mustStart(t, env...)
			c := newCLI(t, env...)

			c.fails(2, "", "webhook", "create", "--url", r.URL+"/in")
			if out := c.fails(1, "", "webhook", "create", "--url", "http://hooks.example.com/in", "--type", "users.*"); !strings.Contains(out, "https") {
				t.Errorf("an http URL: %q, want it refused for not being https", out)
			}
			if out := c.fails(1, "", "webhook", "create", "--url", r.URL+"/in", "--type", "nothing.*"); !strings.Contains(out, "nothing") {
				t.Errorf("an unknown resource: %q", out)
			}
			out := c.must("", "webhook", "create", "--url", r.URL+"/in", "--type", "users.created")
			secret := lastLine(out)
			if !strings.HasPrefix(secret, "whsec_") || !strings.Contains(out, "Created webhook 1") {
				t.Fatalf("webhook create printed %q", out)
			}
			r.setSecrets(secret)
			rows := tableRows(t, c.must("", "webhook", "list"), "ID", "URL", "TYPES", "ENABLED", "CREATED")
			if len(rows) != 1 || rows[0][1] != r.URL+"/in" || rows[0][2] != "users.created" || rows[0][3] != "true" {
				t.Fatalf("webhook list: %v", rows)
			}
			if strings.Contains(c.must("", "webhook", "list", "--json"), secret) {
				t.Fatal("webhook list shows the secret")
			}

			c.must("a password\n", "user", "create", "--email", "ann@example.com", "--name", "Ann", "--password-stdin")
			waitUntil(t, "the delivery", func() bool { return len(r.received()) == 1 })
			if got := r.received()[0]; got.typ != "users.created" || !got.verified[0] || got.sigs != 1 {
				t.Fatalf("received %+v, want users.created signed once with the secret", got)
			}
			waitUntil(t, "the log to say delivered", func() bool {
				rows := tableRows(t, c.must("", "webhook", "deliveries", "1"), "ID", "EVENT", "TYPE", "STATE", "ATTEMPTS", "STATUS", "LATENCY", "RESPONSE")
				return len(rows) == 1 && rows[0][3] == "delivered" && rows[0][5] == "204"
			})
			// Every attempt is in the log: --json's attempt_log, --attempts.
			var logged []struct {
				Attempts   int `json:"attempts"`
				AttemptLog []struct {
					At        time.Time `json:"at"`
					Status    int       `json:"status"`
					LatencyMS int64     `json:"latency_ms"`
					State     string    `json:"state"`
				} `json:"attempt_log"`
			}
			if err := json.Unmarshal([]byte(c.must("", "webhook", "deliveries", "1", "--json")), &logged); err != nil || len(logged) != 1 ||
				len(logged[0].AttemptLog) != 1 || logged[0].AttemptLog[0].Status != 204 || logged[0].AttemptLog[0].State != "delivered" ||
				logged[0].AttemptLog[0].At.IsZero() {
				t.Fatalf("webhook deliveries --json: %+v, %v; want one delivery with its one attempt (204, delivered)", logged, err)
			}
			if out := c.must("", "webhook", "deliveries", "1", "--attempts"); !strings.Contains(out, logged[0].AttemptLog[0].At.Format(time.RFC3339)) {
				t.Fatalf("webhook deliveries --attempts does not list the attempt at %s:\n%s", logged[0].AttemptLog[0].At.Format(time.RFC3339), out)
			}

			out = c.must("", "webhook", "rotate", "1")
			next := lastLine(out)
			if !strings.HasPrefix(next, "whsec_") || next == secret {
				t.Fatalf("webhook rotate printed %q", out)
			}
			r.setSecrets(secret, next)
			c.must("a password\n", "user", "create", "--email", "bob@example.com", "--name", "Bob", "--password-stdin")
			waitUntil(t, "the delivery after the rotation", func() bool { return len(r.received()) == 2 })
			if got := r.received()[1]; got.sigs != 2 || !got.verified[0] || !got.verified[1] {
				t.Fatalf("after rotate: %d signatures, verified by the old and new secret: %v", got.sigs, got.verified)
			}

			c.fails(1, "", "webhook", "rotate", "99")
			c.fails(2, "", "webhook", "delete", "x")
			c.must("", "webhook", "delete", "1")
			if rows := tableRows(t, c.must("", "webhook", "list"), "ID", "URL", "TYPES", "ENABLED", "CREATED"); len(rows) != 0 {
				t.Fatalf("after delete: %v", rows)
			}
			srv.stop(t)
		})
	}
}

// TestWebhooksTwoInstances runs two servers on one PostgreSQL database (and
// Redis, when configured) and kills one with SIGKILL in the middle of
// deliveries (the receiver holds every request until then, so that both
// have requests under way): every event reaches the receiver, and the only
// events that reach it twice are those whose requests were under way when
// the instance died (their answer lost with it; the other instance
// delivers them again once the dead one's leases expire).
func TestWebhooksTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	db := pgtest.NewDatabase(t)
	r := newHookReceiver(t, 0)
	env := append([]string{"RESOURCEAPI_DATABASE_URL=" + db, "RESOURCEAPI_WEBHOOKS_TIMEOUT=5s", "RESOURCEAPI_WEBHOOKS_LEASE=6s",
		"RESOURCEAPI_WEBHOOKS_BACKOFF=100ms", "RESOURCEAPI_WEBHOOKS_CONCURRENCY=4"}, r.env()...)
	if u := os.Getenv("RESOURCEAPI_TEST_REDIS_URL"); u != "" {
		env = append(env, "RESOURCEAPI_REDIS_URL="+u, "RESOURCEAPI_EVENTS_STREAM=webhooks-"+filepath.Base(t.TempDir()))
	}
	a := mustStart(t, env...)
	b := mustStart(t, env...)
	key := a.Key

	status, hook := request(t, a, "POST", "/api/webhooks", `{"url": "`+r.URL+`/in", "types": ["products.*"]}`, withKey(key))
	if status != 201 {
		t.Fatalf("POST /api/webhooks: %d %v", status, hook)
	}
	r.setSecrets(hook["secret"].(string))
	gate := make(chan struct{})
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()

	const n = 60
	created := map[int64]bool{}
	for i := range n {
		p := a
		if i%2 == 1 {
			p = b
		}
		status, rec := request(t, p, "POST", "/api/products", fmt.Sprintf(`{"name": "Engine %d", "price_cents": 100}`, i), withKey(key))
		if status != 201 {
			t.Fatalf("POST /api/products: %d %v", status, rec)
		}
		created[int64(rec["id"].(float64))] = true
	}
	// Each instance sends at most 4 at once to the endpoint: with more
	// than 4 under way, both are delivering.
	inflight := func() map[string]bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := map[string]bool{}
		for id, k := range r.inflight {
			if k > 0 {
				out[id] = true
			}
		}
		return out
	}
	waitUntil(t, "both instances delivering", func() bool { return len(inflight()) > 4 })
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait()
	unsure := inflight()
	r.mu.Lock()
	r.gate = nil
	r.mu.Unlock()
	close(gate)

	// Delivered, as the delivery log says (a request the dead instance
	// sent reached the receiver, but its answer did not reach the
	// instance).
	delivered := waitDelivered(t, b, key, int64(hook["id"].(float64)), n)
	// The log keeps each delivery's every attempt, the last one the 204.
	for _, item := range delivered {
		d := item.(map[string]any)
		attempts, _ := d["attempt_log"].([]any)
		if len(attempts) == 0 || float64(len(attempts)) != d["attempts"].(float64) ||
			attempts[len(attempts)-1].(map[string]any)["status"] != float64(204) || attempts[len(attempts)-1].(map[string]any)["state"] != "delivered" {
			t.Errorf("delivery %v: %v attempts, attempt_log %v; want each attempt, the last a 204", d["id"], d["attempts"], attempts)
		}
	}
	got := map[int64]bool{}
	for _, req := range r.received() {
		if req.typ == "products.created" {
			got[req.recordID] = true
		}
	}
	if len(got) != n {
		t.Errorf("%d products' creations received, want %d", len(got), n)
	}
	times := map[string]int{}
	for _, req := range r.received() {
		if !req.verified[0] {
			t.Errorf("%s: the library refused its signature", req.id)
		}
		if !created[req.recordID] {
			t.Errorf("%s is about product %d, which the test did not create", req.id, req.recordID)
		}
		times[req.id]++
	}
	again := 0
	for id, k := range times {
		if k > 1 {
			again++
			if !unsure[id] {
				t.Errorf("%s delivered %d times, though no request of it was under way when the instance died", id, k)
			}
		}
	}
	if again == 0 {
		t.Errorf("nothing was delivered twice: the killed instance had requests under way, whose answers it never read")
	}
	t.Logf("%d events, %d requests, %d under way at the kill, %d delivered again", len(times), len(r.received()), len(unsure), again)
	b.stop(t)
}
