package http_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rauth "github.com/resourceapi/resourceapi/auth"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/token"
)

func basicAuth(email, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+password))
}

// bearer returns an Authorization value with an access token for user id
// of c's server, signed as the test servers sign them, with the user's
// security stamp (any, when there is no such user), that expires at exp
// (issued a minute before, or now if that is earlier).
func bearer(t *testing.T, c *client, id int64, exp time.Time) string {
	t.Helper()
	stamp := "NOSUCHUSER"
	if acct, err := c.service.Store().(resourceapi.IdentityStore).AccountByID(context.Background(), id); err == nil {
		stamp = acct.Stamp
	}
	return bearerStamped(t, id, stamp, exp)
}

// bearerStamped is bearer with the security stamp given.
func bearerStamped(t *testing.T, id int64, stamp string, exp time.Time) string {
	t.Helper()
	iat := exp.Add(-time.Minute)
	if now := time.Now(); now.Before(iat) {
		iat = now
	}
	tokens, err := token.New(testSecret, token.Options{Now: func() time.Time { return iat }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Issue(resourceapi.Claims{Subject: fmt.Sprint(id), Name: "x", IssuedAt: iat, ExpiresAt: exp, Stamp: stamp})
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + tok
}

func TestCredentials(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		anon := c.anonymous()
		const path = "/api/users/1"
		soon := time.Now().Add(10 * time.Minute)

		// Every scheme works.
		c.get(path).mustStatus(t, http.StatusOK)
		anon.get(path, "Authorization", basicAuth(adminEmail, "correct horse battery")).mustStatus(t, http.StatusOK)
		anon.get(path, "Authorization", basicAuth(strings.ToUpper(adminEmail), "correct horse battery")).mustStatus(t, http.StatusOK)
		anon.get(path, "Authorization", bearer(t, c, 1, soon)).mustStatus(t, http.StatusOK)

		// None: 401 with a challenge for every scheme.
		r := anon.get(path)
		r.mustError(t, http.StatusUnauthorized, resourceapi.CodeUnauthenticated)
		if ch := r.Header.Get("WWW-Authenticate"); !strings.Contains(ch, "Bearer") || !strings.Contains(ch, "Basic") {
			t.Errorf("401 WWW-Authenticate = %q, want Bearer and Basic challenges", ch)
		}
		anon.do("HEAD", path, "").mustStatus(t, http.StatusUnauthorized)

		// Any invalid credential: 403 INVALID_TOKEN, the same body whatever
		// failed.
		none := `{"alg":"none","typ":"JWT"}`
		payload := fmt.Sprintf(`{"sub":"1","name":"x","iat":%d,"exp":%d}`, time.Now().Unix(), soon.Unix())
		algNone := base64.RawURLEncoding.EncodeToString([]byte(none)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "."
		invalid := [][]string{
			{"X-API-Key", "rak_AAAAAAAAAAAAAAAAAAAAAAAAAA"},
			{"X-API-Key", "not-a-key"},
			{"Authorization", "Bearer " + algNone},
			{"Authorization", bearer(t, c, 1, time.Now().Add(-time.Second))},
			{"Authorization", bearer(t, c, 9999, soon)}, // no such user
			{"Authorization", "Bearer garbage"},
			{"Authorization", basicAuth(adminEmail, "wrong password")},
			{"Authorization", basicAuth("nobody@example.com", "correct horse battery")},
			{"Authorization", "Basic !!!"},
			{"Authorization", "Digest username=x"},
		}
		var first string
		for _, h := range invalid {
			r := anon.get(path, h...)
			r.mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
			if ch := r.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) {
				t.Errorf("%v: WWW-Authenticate = %q", h, ch)
			}
			body := withoutRequestID(t, r.body)
			if first == "" {
				first = body
			} else if body != first {
				t.Errorf("%v: body %s differs from another invalid credential's %s", h, body, first)
			}
			if strings.Contains(string(r.body), h[1]) || strings.Contains(string(r.body), "wrong password") {
				t.Errorf("%v: the error echoes the credential: %s", h, r.body)
			}
		}

		// Two credentials: 400. Credentials in the URL: 400, never used.
		anon.get(path, "X-API-Key", c.auth[1], "Authorization", bearer(t, c, 1, soon)).mustError(t, http.StatusBadRequest, resourceapi.CodeBadRequest)
		c.get(path+"?access_token="+strings.TrimPrefix(bearer(t, c, 1, soon), "Bearer ")).mustError(t, http.StatusBadRequest, resourceapi.CodeBadRequest)
		anon.get(path+"?api_key="+c.auth[1]).mustError(t, http.StatusBadRequest, resourceapi.CodeBadRequest)

		// OPTIONS needs no credential and shows no data.
		o := anon.do("OPTIONS", path, "")
		o.mustStatus(t, http.StatusOK)
		if len(o.body) != 0 || o.Header.Get("Allow") == "" {
			t.Errorf("OPTIONS: body %q, Allow %q", o.body, o.Header.Get("Allow"))
		}
	})
}

func withoutRequestID(t *testing.T, body []byte) string {
	t.Helper()
	var env map[string]map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	delete(env["error"], "request_id")
	b, _ := json.Marshal(env)
	return string(b)
}

// TestChangesTakeEffectAtOnce: roles, grants, deletes, soft deletes, revoked
// keys and password changes all apply to the very next request, whatever
// the scheme.
func TestChangesTakeEffectAtOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		key := c.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser)
		ann := c.as(key)
		id := idOf(t, ann.get("/api/users/2").object(t))
		item := fmt.Sprintf("/api/users/%d", id)
		basic := c.anonymous().as("")
		basic.auth = []string{"Authorization", basicAuth("ann@example.com", "correct horse battery")}
		jwt := c.anonymous()
		jwt.auth = []string{"Authorization", bearer(t, c, id, time.Now().Add(10*time.Minute))}

		for _, who := range []*client{ann, basic, jwt} {
			who.post("/api/users", `{"name":"X","email":"x@example.com"}`).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		}
		// A direct grant.
		c.do("PATCH", item, `{"permissions":["users:write"]}`).mustStatus(t, http.StatusOK)
		for i, who := range []*client{ann, basic, jwt} {
			who.post("/api/users", fmt.Sprintf(`{"name":"X","email":"x%d@example.com"}`, i)).mustStatus(t, http.StatusCreated)
		}
		// A role.
		for _, who := range []*client{ann, basic, jwt} {
			who.do("DELETE", "/api/users/3", "").mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		}
		c.do("PATCH", item, `{"roles":["admin"],"permissions":[]}`).mustStatus(t, http.StatusOK)
		ann.do("DELETE", "/api/users/3", "").mustStatus(t, http.StatusNoContent)
		c.do("PATCH", item, `{"roles":["user"]}`).mustStatus(t, http.StatusOK)
		jwt.do("DELETE", "/api/users/4", "").mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)

		// A password change forgets the remembered Basic credential, and
		// ends the access tokens issued before it.
		basic.get(item).mustStatus(t, http.StatusOK)
		jwt.get(item).mustStatus(t, http.StatusOK)
		ann.do("PATCH", item, `{"password":"a new passphrase","current_password":"correct horse battery"}`).mustStatus(t, http.StatusOK)
		basic.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		basic.auth[1] = basicAuth("ann@example.com", "a new passphrase")
		basic.get(item).mustStatus(t, http.StatusOK)
		jwt.auth[1] = bearer(t, c, id, time.Now().Add(10*time.Minute))
		jwt.get(item).mustStatus(t, http.StatusOK)

		// So does an email change: the old email no longer signs in.
		ann.do("PATCH", item, `{"email":"ann.b@example.com","current_password":"a new passphrase"}`).mustStatus(t, http.StatusOK)
		basic.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		basic.auth[1] = basicAuth("ANN.B@example.com", "a new passphrase")
		basic.get(item).mustStatus(t, http.StatusOK)
		jwt.auth[1] = bearer(t, c, id, time.Now().Add(10*time.Minute))

		// A soft-deleted user authenticates by no scheme; restored, by
		// their password and keys, not by a token issued before.
		c.do("PATCH", item, `{"deleted":true}`).mustStatus(t, http.StatusOK)
		for _, who := range []*client{ann, basic, jwt} {
			who.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		}
		c.do("PATCH", item, `{"deleted":false}`).mustStatus(t, http.StatusOK)
		ann.get(item).mustStatus(t, http.StatusOK)
		basic.get(item).mustStatus(t, http.StatusOK)
		jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		jwt.auth[1] = bearer(t, c, id, time.Now().Add(10*time.Minute))

		// A revoked key is refused at once.
		keys, _ := ann.get("/api/api-keys").list(t)
		if len(keys) != 1 {
			t.Fatalf("Ann's keys = %v, want one", keys)
		}
		ann.do("DELETE", fmt.Sprintf("/api/api-keys/%d", idOf(t, keys[0])), "").mustStatus(t, http.StatusNoContent)
		ann.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)

		// A deleted user's credentials all stop working.
		c.do("DELETE", item, "").mustStatus(t, http.StatusNoContent)
		basic.get("/api/users/1").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		jwt.get("/api/users/1").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	})
}

// TestAPIKeys covers keys over the API: shown once on creation, listed by
// prefix, usable at once, never shown again.
func TestAPIKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		ann := c.as(c.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser))
		// A key in the body is ignored (a tolerance: the document leaves
		// generated fields out of request bodies).
		r := ann.lenient().post("/api/api-keys", `{"name":"laptop","key":"rak_CHOSENBYMEAAAAAAAAAAAAAAAA"}`)
		r.mustStatus(t, http.StatusCreated)
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("the response that shows a key has Cache-Control %q, want no-store", r.Header.Get("Cache-Control"))
		}
		created := r.object(t)
		key, _ := created["key"].(string)
		if !resourceapi.LooksLikeAPIKey(key) || key == "rak_CHOSENBYMEAAAAAAAAAAAAAAAA" {
			t.Fatalf("created key %q: want a generated rak_ key", key)
		}
		if created["prefix"] != key[:12] || fmt.Sprint(created["user_id"]) != "2" {
			t.Errorf("created key record %v", created)
		}
		c.anonymous().as(key).get("/api/users/1").mustStatus(t, http.StatusOK)
		got := ann.get(fmt.Sprintf("/api/api-keys/%d", idOf(t, created)))
		got.mustStatus(t, http.StatusOK)
		if strings.Contains(string(got.body), key) || strings.Contains(string(got.body), resourceapi.HashToken(key)) {
			t.Errorf("GET shows the key or its hash: %s", got.body)
		}
		for _, k := range []string{"key", "key_hash"} {
			if _, ok := got.object(t)[k]; ok {
				t.Errorf("GET has %q", k)
			}
		}
		// A user may not make a key for someone else.
		ann.post("/api/api-keys", `{"user_id":1}`).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		// PUT does not create keys or clients: only POST generates secrets.
		c.do("PUT", "/api/api-keys/424242", `{"name":"x"}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.do("PUT", "/api/oauth-clients/424242", `{"name":"x","grants":["client_credentials"]}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		// An admin may.
		r = c.post("/api/api-keys", `{"user_id":2,"name":"for Ann"}`)
		r.mustStatus(t, http.StatusCreated)
		if fmt.Sprint(r.object(t)["user_id"]) != "2" {
			t.Errorf("admin-made key belongs to %v, want 2", r.object(t)["user_id"])
		}
	})
}

// countingHasher counts password verifications.
type countingHasher struct {
	resourceapi.PasswordHasher
	verifies atomic.Int64
}

func (h *countingHasher) Verify(encoded, secret string) (bool, error) {
	h.verifies.Add(1)
	return h.PasswordHasher.Verify(encoded, secret)
}

// TestBasicCosts checks what HTTP Basic costs in password verifications: an
// unknown email one, like a wrong password (so they take the same time); a
// correct one once, then remembered.
func TestBasicCosts(t *testing.T) {
	store := mustSQLite(t, nil)
	hasher := &countingHasher{PasswordHasher: testHasher()}
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		auth, err := rauth.New(rauth.Config{Store: store.(resourceapi.IdentityStore), Hasher: hasher})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Service.SetAuthenticator(auth)
	})
	anon := c.anonymous()
	cost := func(email, password string, want int) {
		t.Helper()
		before := hasher.verifies.Load()
		anon.get("/api/users/1", "Authorization", basicAuth(email, password))
		if got := hasher.verifies.Load() - before; got != int64(want) {
			t.Errorf("%s / %s: %d verifications, want %d", email, password, got, want)
		}
	}
	cost("nobody@example.com", "whatever", 1)
	cost(adminEmail, "wrong password", 1)
	cost(adminEmail, "correct horse battery", 1)
	cost(adminEmail, "correct horse battery", 0)
	cost(adminEmail, "correct horse battery", 0)
	cost(adminEmail, "wrong password", 1)
}

// TestGuessThrottling: failed passwords for one account are throttled
// (before any verification) once its budget from a client is spent; other
// accounts and other credentials are not.
func TestGuessThrottling(t *testing.T) {
	store := mustSQLite(t, nil)
	hasher := &countingHasher{PasswordHasher: testHasher()}
	guesses := newTestLimiter(3)
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		auth, err := rauth.New(rauth.Config{Store: store.(resourceapi.IdentityStore),
			Hasher: hasher, AccountGuessesFrom: guesses})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Service.SetAuthenticator(auth)
	})
	anon := c.anonymous()
	for range 3 {
		anon.get("/api/users/1", "Authorization", basicAuth(adminEmail, "guess")).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	}
	before := hasher.verifies.Load()
	r := anon.get("/api/users/1", "Authorization", basicAuth(adminEmail, "correct horse battery"))
	r.mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
	if r.Header.Get("Retry-After") == "" {
		t.Error("throttled sign-in without Retry-After")
	}
	if hasher.verifies.Load() != before {
		t.Error("a throttled attempt still verified the password")
	}
	// The API key of the same account still works.
	c.get("/api/users/1").mustStatus(t, http.StatusOK)
}

// TestFailuresFromAnAddress: failed passwords from one client address,
// whatever the accounts (random emails), are throttled once the address's
// budget of failures is spent, before any password is verified; API keys
// and a credential verified before still work.
func TestFailuresFromAnAddress(t *testing.T) {
	store := mustSQLite(t, nil)
	hasher := &countingHasher{PasswordHasher: testHasher()}
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		auth, err := rauth.New(rauth.Config{Store: store.(resourceapi.IdentityStore),
			Hasher: hasher, FailuresFrom: newTestLimiter(3)})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Service.SetAuthenticator(auth)
	})
	anon := c.anonymous()
	anon.get("/api/users/1", "Authorization", basicAuth(adminEmail, "correct horse battery")).mustStatus(t, http.StatusOK)
	for i := range 3 {
		anon.get("/api/users/1", "Authorization", basicAuth(fmt.Sprintf("random%d@example.com", i), "guess")).
			mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	}
	before := hasher.verifies.Load()
	r := anon.get("/api/users/1", "Authorization", basicAuth("random9@example.com", "guess"))
	r.mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
	if r.Header.Get("Retry-After") == "" {
		t.Error("throttled sign-in without Retry-After")
	}
	if hasher.verifies.Load() != before {
		t.Error("a throttled attempt still verified a password")
	}
	// The remembered credential and the API key still work.
	anon.get("/api/users/1", "Authorization", basicAuth(adminEmail, "correct horse battery")).mustStatus(t, http.StatusOK)
	c.get("/api/users/1").mustStatus(t, http.StatusOK)
}

// testLimiter is a resourceapi.RateLimiter with a fixed budget per key and no
// refill, for tests that count.
type testLimiter struct {
	limit int
	used  map[string]int
}

func newTestLimiter(limit int) *testLimiter {
	return &testLimiter{limit: limit, used: map[string]int{}}
}

func (l *testLimiter) AllowN(_ context.Context, key string, n int) (resourceapi.RateDecision, error) {
	d := resourceapi.RateDecision{Limit: l.limit, Reset: time.Now().Add(time.Hour), RetryAfter: time.Hour}
	if l.used[key]+n <= l.limit && (n > 0 || l.used[key] < l.limit) {
		l.used[key] += n
		d.Allowed, d.RetryAfter = true, 0
	}
	d.Remaining = l.limit - l.used[key]
	return d, nil
}
