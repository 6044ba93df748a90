package http_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// productCount returns how many products the server lists.
func (c *client) productCount() int {
	c.tb.Helper()
	r := c.get("/api/products?limit=1")
	r.mustStatus(c.tb, http.StatusOK)
	p := r.object(c.tb)["pagination"].(map[string]any)
	n, _ := p["total"].(interface{ Int64() (int64, error) }).Int64()
	return int(n)
}

// TestIdempotencyKeyReplay: a POST or PATCH with an Idempotency-Key
// happens once; its retry with the same key and body gets the stored
// status, headers and body again, marked as a replay, and writes nothing;
// the same key with another body or path is 422; another caller's key is
// theirs alone.
func TestIdempotencyKeyReplay(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		const body = `{"name":"Lamp","price_cents":1200}`
		first := c.post("/api/products", body, "Idempotency-Key", "k-1")
		first.mustStatus(t, http.StatusCreated)
		if got := first.Header.Get("Idempotency-Replayed"); got != "" {
			t.Errorf("first response: Idempotency-Replayed = %q, want none", got)
		}
		// The quoted form (a Structured Field string) is the same key.
		for _, key := range []string{"k-1", `"k-1"`} {
			again := c.post("/api/products", body, "Idempotency-Key", key)
			again.mustStatus(t, http.StatusCreated)
			if got := again.Header.Get("Idempotency-Replayed"); got != "true" {
				t.Errorf("retry: Idempotency-Replayed = %q, want true", got)
			}
			if !bytes.Equal(again.body, first.body) {
				t.Errorf("retry body = %s, want %s", again.body, first.body)
			}
			for _, h := range []string{"Location", "ETag", "Last-Modified", "Content-Type"} {
				if got, want := again.Header.Get(h), first.Header.Get(h); got != want {
					t.Errorf("retry %s = %q, want %q", h, got, want)
				}
			}
		}
		if n := c.productCount(); n != 1 {
			t.Fatalf("products = %d, want 1", n)
		}
		// Same key, other body or other path: 422, nothing written.
		c.post("/api/products", `{"name":"Lamp","price_cents":1300}`, "Idempotency-Key", "k-1").mustStatus(t, http.StatusUnprocessableEntity)
		c.post("/api/articles", `{"title":"T","body":"B"}`, "Idempotency-Key", "k-1").mustStatus(t, http.StatusUnprocessableEntity)
		// Another key is another request.
		c.post("/api/products", body, "Idempotency-Key", "k-2").mustStatus(t, http.StatusCreated)
		if n := c.productCount(); n != 2 {
			t.Fatalf("products = %d, want 2", n)
		}
		// Another caller's k-1 is theirs.
		other := c.as(c.mustAccount("Other", "other@example.com", resourceapi.RoleAdmin))
		r := other.post("/api/products", body, "Idempotency-Key", "k-1")
		r.mustStatus(t, http.StatusCreated)
		if r.Header.Get("Idempotency-Replayed") != "" {
			t.Errorf("another caller's key was replayed")
		}

		// PATCH: the retry replays the first change's response and does
		// not apply it again over a later change.
		loc := first.Header.Get("Location")
		p1 := c.do("PATCH", loc, `{"price_cents":1500}`, "Idempotency-Key", "p-1")
		p1.mustStatus(t, http.StatusOK)
		c.do("PATCH", loc, `{"price_cents":1700}`).mustStatus(t, http.StatusOK)
		p2 := c.do("PATCH", loc, `{"price_cents":1500}`, "Idempotency-Key", "p-1")
		p2.mustStatus(t, http.StatusOK)
		if p2.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(p2.body, p1.body) {
			t.Errorf("PATCH retry: replayed %q, body %s; want the first's %s", p2.Header.Get("Idempotency-Replayed"), p2.body, p1.body)
		}
		if got := c.get(loc).object(t)["price_cents"]; fmt.Sprint(got) != "1700" {
			t.Errorf("price after the PATCH retry = %v, want 1700 (the retry wrote again)", got)
		}
		// Prefer: return=minimal is kept as answered.
		m1 := c.do("PATCH", loc, `{"price_cents":1800}`, "Idempotency-Key", "p-2", "Prefer", "return=minimal")
		m1.mustStatus(t, http.StatusNoContent)
		m2 := c.do("PATCH", loc, `{"price_cents":1800}`, "Idempotency-Key", "p-2")
		m2.mustStatus(t, http.StatusNoContent)
		if m2.Header.Get("ETag") != m1.Header.Get("ETag") || m2.Header.Get("Preference-Applied") != "return=minimal" {
			t.Errorf("minimal replay headers = %v, want those of %v", m2.Header, m1.Header)
		}
	})
}

// TestIdempotencyKeySecret: the replay of a create that showed a generated
// secret once (an API key) leaves it out: no store keeps it.
func TestIdempotencyKeySecret(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		first := c.post("/api/api-keys", `{"user_id":1}`, "Idempotency-Key", "ak")
		first.mustStatus(t, http.StatusCreated)
		key, _ := first.object(t)["key"].(string)
		if key == "" {
			t.Fatalf("first response has no key: %s", first.body)
		}
		again := c.post("/api/api-keys", `{"user_id":1}`, "Idempotency-Key", "ak")
		again.mustStatus(t, http.StatusCreated)
		if again.Header.Get("Idempotency-Replayed") != "true" {
			t.Fatalf("not a replay: %v", again.Header)
		}
		if _, ok := again.object(t)["key"]; ok || strings.Contains(string(again.body), key) {
			t.Errorf("the replay shows the secret: %s", again.body)
		}
		if first.object(t)["id"] != again.object(t)["id"] {
			t.Errorf("replay id = %v, want %v", again.object(t)["id"], first.object(t)["id"])
		}
	})
}

// TestIdempotencyKeyMalformed: a key that is empty, too long, holds what is
// not printable ASCII, or comes twice is 400, and nothing is written.
func TestIdempotencyKeyMalformed(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		c = c.lenient()
		for _, key := range []string{" ", `""`, strings.Repeat("k", resourceapi.MaxIdempotencyKeyLen+1),
			"a\tb", "caf\u00e9", `"open`, `"a"b`, `"a\tb"`, `"a\b"`, "two words"} {
			r := c.post("/api/products", `{"name":"Lamp","price_cents":1}`, "Idempotency-Key", key)
			if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.body), "Idempotency-Key") {
				t.Errorf("key %q: %d %s, want 400 naming Idempotency-Key", key, r.StatusCode, r.body)
			}
		}
		r := c.post("/api/products", `{"name":"Lamp","price_cents":1}`, "Idempotency-Key", "a", "Idempotency-Key", "b")
		r.mustStatus(t, http.StatusBadRequest)
		if n := c.productCount(); n != 0 {
			t.Errorf("products = %d, want 0", n)
		}
		// The longest key is a key.
		c.post("/api/products", `{"name":"Lamp","price_cents":1}`, "Idempotency-Key", strings.Repeat("k", resourceapi.MaxIdempotencyKeyLen)).mustStatus(t, http.StatusCreated)
	})
}

// TestIdempotencyKeyRace: retries of one request racing each other write
// once; each of the others is told the first is under way (409) or gets its
// response (a replay).
func TestIdempotencyKeyRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		const n = 16
		var wg sync.WaitGroup
		replies := make([]*reply, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				replies[i] = c.post("/api/products", `{"name":"Race","price_cents":5}`, "Idempotency-Key", "race")
			})
		}
		close(start)
		wg.Wait()
		fresh, replays, conflicts := 0, 0, 0
		var body []byte
		for _, r := range replies {
			switch {
			case r.StatusCode == http.StatusCreated && r.Header.Get("Idempotency-Replayed") == "":
				fresh++
				body = r.body
			case r.StatusCode == http.StatusCreated:
				replays++
			case r.StatusCode == http.StatusConflict:
				conflicts++
			default:
				t.Errorf("status %d: %s", r.StatusCode, r.body)
			}
		}
		if fresh != 1 {
			t.Fatalf("%d responses wrote, want 1 (%d replays, %d conflicts)", fresh, replays, conflicts)
		}
		for _, r := range replies {
			if r.StatusCode == http.StatusCreated && !bytes.Equal(r.body, body) {
				t.Errorf("replay body %s, want %s", r.body, body)
			}
		}
		if got := c.productCount(); got != 1 {
			t.Errorf("products = %d, want 1", got)
		}
	})
}

// TestIdempotencyKeyExpires: a key is kept for the retention period; after
// it, the key is free again and the request writes anew.
func TestIdempotencyKeyExpires(t *testing.T) {
	// The test clock moves 1.5 s at each reading: a retention of 1 s has
	// passed at the next request.
	forEachStore(t, func(t *testing.T, c *client) {
		for range 2 {
			r := c.post("/api/products", `{"name":"Once","price_cents":5}`, "Idempotency-Key", "short")
			r.mustStatus(t, http.StatusCreated)
			if r.Header.Get("Idempotency-Replayed") != "" {
				t.Errorf("an expired key was replayed")
			}
		}
		if got := c.productCount(); got != 2 {
			t.Errorf("products = %d, want 2", got)
		}
	}, func(cfg *rhttp.Config) { cfg.Service.SetIdempotencyRetention(time.Second) })
}

// TestParseIdempotencyKey: what the parser takes, and what it refuses, with
// what an HTTP client cannot send (control characters) too.
func TestParseIdempotencyKey(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   string
		ok     bool
	}{
		{nil, "", true},
		{[]string{"abc"}, "abc", true},
		{[]string{" \tabc\t "}, "abc", true},
		{[]string{`"abc"`}, "abc", true},
		{[]string{`"a b"`}, "a b", true},
		{[]string{`"a\"b\\c"`}, `a"b\c`, true},
		{[]string{strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen)}, strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen), true},
		{[]string{`"` + strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen) + `"`}, strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen), true},
		{[]string{""}, "", false},
		{[]string{`""`}, "", false},
		{[]string{"a\x00b"}, "", false},
		{[]string{"a\x7fb"}, "", false},
		{[]string{`"a\x01"`}, "", false},
		{[]string{`"a\nb"`}, "", false},
		{[]string{`"\u00e9"`}, "", false},
		{[]string{`"ab`}, "", false},
		{[]string{`"a"b`}, "", false},
		{[]string{`"a\b"`}, "", false},
		{[]string{`"a\`}, "", false},
		{[]string{strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen+1)}, "", false},
		{[]string{`"` + strings.Repeat("x", resourceapi.MaxIdempotencyKeyLen+1) + `"`}, "", false},
		{[]string{"a", "b"}, "", false},
	} {
		h := http.Header{"Idempotency-Key": tt.values}
		got, err := rhttp.ParseIdempotencyKey(h)
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("%q: %q, %v; want %q", tt.values, got, err, tt.want)
		}
		if !tt.ok && (err == nil || resourceapi.ErrorCode(err) != resourceapi.CodeBadRequest) {
			t.Errorf("%q: %q, %v; want BAD_REQUEST", tt.values, got, err)
		}
	}
}

// TestIdempotencyKeyAcrossInstances: on PostgreSQL, two instances share the
// keys: a key used on one is replayed by the other, and retries racing on
// both write once, even when the write itself would conflict with its twin
// (a unique email): the losers get the winner's response, not a 409 about
// the email.
func TestIdempotencyKeyAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := mustServer(t, openPostgres(t, url, nil))
	b := mustServerOn(t, openPostgres(t, url, nil), a.auth[1])

	first := a.post("/api/products", `{"name":"Shared","price_cents":9}`, "Idempotency-Key", "shared")
	first.mustStatus(t, http.StatusCreated)
	again := b.post("/api/products", `{"name":"Shared","price_cents":9}`, "Idempotency-Key", "shared")
	again.mustStatus(t, http.StatusCreated)
	if again.Header.Get("Idempotency-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
		t.Errorf("retry on B: replayed %q, body %s; want A's %s", again.Header.Get("Idempotency-Replayed"), again.body, first.body)
	}
	b.post("/api/products", `{"name":"Other","price_cents":9}`, "Idempotency-Key", "shared").mustStatus(t, http.StatusUnprocessableEntity)

	for round := range 5 {
		const n = 8
		key := fmt.Sprintf("race-%d", round)
		body := fmt.Sprintf(`{"name":"Racer","email":"racer%d@example.com"}`, round)
		replies := make([]*reply, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				<-start
				replies[i] = c.post("/api/users", body, "Idempotency-Key", key)
			})
		}
		close(start)
		wg.Wait()
		fresh := 0
		for _, r := range replies {
			switch {
			case r.StatusCode == http.StatusCreated && r.Header.Get("Idempotency-Replayed") == "":
				fresh++
			case r.StatusCode == http.StatusCreated, r.StatusCode == http.StatusConflict &&
				strings.Contains(string(r.body), "still in progress"):
			default:
				t.Errorf("round %d: status %d: %s", round, r.StatusCode, r.body)
			}
		}
		if fresh != 1 {
			t.Errorf("round %d: %d responses wrote, want 1", round, fresh)
		}
	}
	_, p := a.get("/api/users?q=racer").list(t)
	if total := fmt.Sprint(p["total"]); total != "5" {
		t.Errorf("racers = %s, want 5", total)
	}
}
