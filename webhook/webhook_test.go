package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/webhook"
)

// TestSignVector checks Sign against the example of the Standard Webhooks
// libraries' tests (the specification's reference implementations).
func TestSignVector(t *testing.T) {
	got, err := webhook.Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; err != nil || got != want {
		t.Fatalf("Sign = %q, %v; want %q", got, err, want)
	}
}

// verify is a receiver's check, as the specification describes it: some
// v1 signature of the header is the HMAC of id.timestamp.body by secret,
// and the timestamp is within 5 minutes.
func verify(secret string, h http.Header, body []byte) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || id == "" {
		return errors.New("missing headers")
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp out of tolerance")
	}
	k, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, sig, _ := strings.Cut(s, ",")
		got, _ := base64.StdEncoding.DecodeString(sig)
		if v == "v1" && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no valid signature")
}

// receiver is a TLS endpoint on loopback that fails the first fail
// requests with 503.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	fail  int
	got   []http.Header
	valid []error
	ids   []string
}

func newReceiver(t *testing.T, fail int, secret string) *receiver {
	r := &receiver{fail: fail}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, req.Header.Clone())
		r.valid = append(r.valid, verify(secret, req.Header, body))
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		if r.fail > 0 {
			r.fail--
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func loopbackOptions(r *receiver) webhook.Options {
	// AllowPrivate is the test-only override that lets a delivery reach
	// a receiver on loopback; the production default refuses it.
	return webhook.Options{AllowPrivate: true, TLS: r.Client().Transport.(*http.Transport).TLSClientConfig, Timeout: 5 * time.Second}
}

func event(id int64) resourceapi.Event {
	return resourceapi.Event{ID: id, Name: "users.created", Resource: "users", Actor: 1, At: time.Now(),
		Record: resourceapi.Record{"id": int64(7), "name": "Ann", "email": "ann@example.com", "age": nil,
			"roles": []string{"user"}, "permissions": []string{}, "created_at": time.Now(), "updated_at": time.Now(), "deleted": false}}
}

// TestDeliverRetries delivers to a receiver that fails twice: three
// attempts, the same webhook-id each time, every one signed validly.
func TestDeliverRetries(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, 2, secret)
	m, err := webhook.NewMessage(event(42))
	if err != nil {
		t.Fatal(err)
	}
	var seen []webhook.Attempt
	out := webhook.Deliver(context.Background(), webhook.NewClient(loopbackOptions(r)), r.URL, func() []string { return []string{secret} }, m,
		webhook.Backoff{First: time.Millisecond, Max: 4 * time.Millisecond, Period: time.Minute}, func(a webhook.Attempt) { seen = append(seen, a) })
	if !out.Delivered || len(out.Attempts) != 3 || len(seen) != 3 {
		t.Fatalf("Deliver = %+v, want delivered at the third attempt", out)
	}
	if seen[0].Status != 503 || !strings.Contains(seen[0].Snippet, "try later") || seen[2].Status != 204 {
		t.Fatalf("attempts %+v, want 503 (with its body) twice then 204", seen)
	}
	for i, err := range r.valid {
		if err != nil || r.ids[i] != "evt_42" {
			t.Fatalf("request %d: id %q, signature: %v", i, r.ids[i], err)
		}
	}
}

// TestDeadLetter gives up once the period would pass.
func TestDeadLetter(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, 1000, secret)
	m, _ := webhook.NewMessage(event(1))
	out := webhook.Deliver(context.Background(), webhook.NewClient(loopbackOptions(r)), r.URL, func() []string { return []string{secret} }, m,
		// Period is long beside one attempt even under the race detector
		// on a loaded machine (a first TLS handshake took 530 ms there,
		// and with 300 ms the delivery was dead-lettered after one).
		webhook.Backoff{First: 50 * time.Millisecond, Max: 100 * time.Millisecond, Period: 3 * time.Second}, nil)
	if out.Delivered || len(out.Attempts) < 2 {
		t.Fatalf("Deliver = %+v, want dead-lettered after several attempts", out)
	}
}

// TestRotation: while a secret is rotated both sign, and a receiver with
// either verifies.
func TestRotation(t *testing.T) {
	old, next := webhook.NewSecret(), webhook.NewSecret()
	m, _ := webhook.NewMessage(event(3))
	now := time.Now()
	sig, err := webhook.Sign([]string{old, next}, m.ID, now, m.Body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Webhook-Id": {m.ID}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "Webhook-Signature": {sig}}
	for _, s := range []string{old, next} {
		if err := verify(s, h, m.Body); err != nil {
			t.Errorf("a receiver with one of the secrets: %v", err)
		}
	}
	if err := verify(webhook.NewSecret(), h, m.Body); err == nil {
		t.Error("a receiver with another secret verified the message")
	}
}

// TestNoForgery: the loopback receiver, reached by its address or by a
// name that resolves to it, is refused by default, on every attempt; plain
// http and redirects are refused too.
func TestNoForgery(t *testing.T) {
	secret := webhook.NewSecret()
	r := newReceiver(t, 0, secret)
	opts := loopbackOptions(r)
	opts.AllowPrivate = false
	client := webhook.NewClient(opts)
	m, _ := webhook.NewMessage(event(5))
	port := r.URL[strings.LastIndex(r.URL, ":"):]
	for _, u := range []string{r.URL, "https://localhost" + port} {
		a := webhook.Send(context.Background(), client, u, []string{secret}, m, time.Now())
		if a.OK() || a.Status != 0 || !strings.Contains(a.Snippet, "not reachable") {
			t.Errorf("Send to %s = %+v, want refused before connecting", u, a)
		}
	}
	if len(r.got) != 0 {
		t.Fatalf("the receiver got %d requests, want none", len(r.got))
	}
	for _, c := range []struct {
		url  string
		opts webhook.Options
		ok   bool
	}{
		{"https://example.com/hook", webhook.Options{}, true},
		{"http://example.com/hook", webhook.Options{}, false},
		{"http://example.com/hook", webhook.Options{AllowHTTP: true}, true},
		{"https://169.254.169.254/latest/meta-data", webhook.Options{}, false},
		{"https://[::1]/", webhook.Options{}, false},
		{"https://10.0.0.1/", webhook.Options{}, false},
		{"https://[::ffff:127.0.0.1]/", webhook.Options{}, false},
		{"https://user:pw@example.com/", webhook.Options{}, false},
		{"example.com/hook", webhook.Options{}, false},
		{"https://10.0.0.1/", webhook.Options{AllowPrivate: true}, true},
	} {
		if err := webhook.CheckURL(c.url, c.opts); (err == nil) != c.ok {
			t.Errorf("CheckURL(%s, %+v) = %v, want ok %v", c.url, c.opts, err, c.ok)
		}
	}

	// A redirect is an answer, not followed.
	target := newReceiver(t, 0, secret)
	redirect := httptest.NewTLSServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirect.Close()
	a := webhook.Send(context.Background(), webhook.NewClient(loopbackOptions(r)), redirect.URL, []string{secret}, m, time.Now())
	if a.OK() || a.Status != http.StatusFound || len(target.got) != 0 {
		t.Fatalf("Send to a redirect = %+v (target got %d), want 302 and the target untouched", a, len(target.got))
	}
}
