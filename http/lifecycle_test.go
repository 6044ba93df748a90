package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/resourceapi/resourceapi"
	rauth "github.com/resourceapi/resourceapi/auth"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/token"
)

// The lifecycle of every credential, over a real server with the OAuth
// endpoints and GraphQL, on every store: what ends a refresh token, an
// access token and an API key, who may change a password or an email, and
// what a deleted record's id gives a new one.

// shiftedClock is the Authenticator's clock in these tests: the real time,
// moved forward by an amount a test sets (to pass an API key's expiry
// without waiting for it).
type shiftedClock struct{ by atomic.Int64 }

func (c *shiftedClock) Now() time.Time          { return time.Now().Add(time.Duration(c.by.Load())) }
func (c *shiftedClock) Advance(d time.Duration) { c.by.Add(int64(d)) }

// lifeServer is a test server with the authorization server and GraphQL,
// whose Authenticator runs on a shifted clock and throttles failed
// passwords per account and address (guessLimit of them).
type lifeServer struct {
	*client // the admin's (user 1)
	clock   *shiftedClock
	app     *oauth2.Config // a confidential client: password and refresh_token grants
}

const guessLimit = 4

func mustLifeServer(t *testing.T, store resourceapi.Store) *lifeServer {
	t.Helper()
	clock := &shiftedClock{}
	tokens, err := token.New(testSecret, token.Options{})
	if err != nil {
		t.Fatal(err)
	}
	guesses := inmem.NewRateLimiter(guessLimit, time.Hour, inmem.Options{})
	t.Cleanup(func() { guesses.Close() })
	auth, err := rauth.New(rauth.Config{Store: store.(resourceapi.IdentityStore),
		Hasher: testHasher(), Tokens: tokens, AccountGuessesFrom: guesses, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	svc := resourceapi.NewService(store, testHasher())
	svc.SetAuthenticator(auth)
	authServer := oauth.NewServer(oauth.Config{Store: store.(resourceapi.OAuthStore), Auth: auth, Tokens: tokens, Logger: testLogger(t)})
	hub := inmem.NewHub()
	t.Cleanup(hub.Close)
	gql := graph.New(graph.Options{Service: svc, ParseCredential: rhttp.ParseCredential, Events: hub, Logger: testLogger(t), RequestID: rhttp.RequestID, Version: "test"})
	t.Cleanup(gql.Shutdown)
	api := rhttp.NewServer(rhttp.Config{Service: svc, OAuth: authServer.Handler(), GraphQL: gql, Logger: testLogger(t)})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	c := &client{tb: t, base: srv.URL, service: svc, contract: &contractRef{doc: api.OpenAPIDocument()},
		hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	c = c.as(c.mustAccount("Test Admin", adminEmail, resourceapi.RoleAdmin))
	app, err := svc.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, resourceapi.Record{
		"name": "App", "grants": []string{resourceapi.GrantPassword, resourceapi.GrantRefreshToken}})
	if err != nil {
		t.Fatal(err)
	}
	return &lifeServer{client: c, clock: clock, app: &oauth2.Config{
		ClientID: app["client_id"].(string), ClientSecret: app["secret"].(string),
		Endpoint: oauth2.Endpoint{TokenURL: srv.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInHeader}}}
}

// forEachLifeStore runs f against a fresh life server of every backend.
func forEachLifeStore(t *testing.T, f func(t *testing.T, s *lifeServer)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, mustLifeServer(t, b.open(t, nil)))
		})
	}
}

func (s *lifeServer) ctx(t *testing.T) context.Context {
	return context.WithValue(t.Context(), oauth2.HTTPClient, &http.Client{Timeout: 10 * time.Second})
}

// signIn signs in with the password grant, as x/oauth2 does.
func (s *lifeServer) signIn(t *testing.T, email, password string) *oauth2.Token {
	t.Helper()
	tok, err := s.app.PasswordCredentialsToken(s.ctx(t), email, password)
	if err != nil {
		t.Fatalf("sign in as %s: %v", email, err)
	}
	if tok.RefreshToken == "" {
		t.Fatalf("sign in as %s: no refresh token", email)
	}
	return tok
}

// refresh refreshes tok as x/oauth2 does, and returns the new token or the
// error code of the refusal.
func (s *lifeServer) refresh(t *testing.T, tok *oauth2.Token) (*oauth2.Token, string) {
	t.Helper()
	held := &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Second)}
	next, err := s.app.TokenSource(s.ctx(t), held).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) {
			t.Fatalf("refresh: %v", err)
		}
		return nil, re.ErrorCode
	}
	return next, ""
}

// mustRefreshRefused fails unless tok's refresh is refused as invalid_grant.
func (s *lifeServer) mustRefreshRefused(t *testing.T, tok *oauth2.Token, why string) {
	t.Helper()
	if next, code := s.refresh(t, tok); code != "invalid_grant" {
		got := "a new token"
		if next == nil {
			got = "error " + code
		}
		t.Fatalf("%s: refresh gave %s, want invalid_grant", why, got)
	}
}

// bearerOf returns a client of the server that sends tok's access token.
func (s *lifeServer) bearerOf(tok *oauth2.Token) *client {
	c := s.anonymous()
	c.auth = []string{"Authorization", "Bearer " + tok.AccessToken}
	return c
}

// mustUserAccount creates a user with a password and returns their id and
// an API key of theirs.
func (s *lifeServer) mustUserAccount(t *testing.T, name, email string, roles ...string) (int64, *client) {
	t.Helper()
	key := s.mustAccount(name, email, roles...)
	acct, err := s.service.Authenticate(context.Background(), resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key})
	if err != nil {
		t.Fatal(err)
	}
	return acct.UserID, s.as(key)
}

// mustDetail fails unless details hold exactly one, on field, whose
// message contains msg.
func mustDetail(t *testing.T, details []map[string]any, field, msg string) {
	t.Helper()
	if len(details) != 1 || details[0]["field"] != field || !strings.Contains(fmt.Sprint(details[0]["message"]), msg) {
		t.Fatalf("details = %v, want one on %s saying %q", details, field, msg)
	}
}

// TestPasswordChangeEndsSessions: a change of a user's password, or of
// their email, by themselves or by an admin, ends every refresh token and
// access token issued before it, on the next request; a new sign-in works.
func TestPasswordChangeEndsSessions(t *testing.T) {
	forEachLifeStore(t, func(t *testing.T, s *lifeServer) {
		id, ann := s.mustUserAccount(t, "Ann", "ann@example.com", resourceapi.RoleUser)
		item := fmt.Sprintf("/api/users/%d", id)

		tok := s.signIn(t, "ann@example.com", "correct horse battery")
		s.bearerOf(tok).get(item).mustStatus(t, http.StatusOK)
		rotated, code := s.refresh(t, tok)
		if code != "" {
			t.Fatalf("refresh before any change: %s", code)
		}
		ann.do("PATCH", item, `{"password":"a new passphrase","current_password":"correct horse battery"}`).mustStatus(t, http.StatusOK)
		s.mustRefreshRefused(t, rotated, "refresh token issued before a password change")
		s.bearerOf(rotated).get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		// The API key is no session: it keeps working.
		ann.get(item).mustStatus(t, http.StatusOK)

		tok = s.signIn(t, "ann@example.com", "a new passphrase")
		ann.do("PATCH", item, `{"email":"ann.b@example.com","current_password":"a new passphrase"}`).mustStatus(t, http.StatusOK)
		s.mustRefreshRefused(t, tok, "refresh token issued before an email change")
		s.bearerOf(tok).get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)

		// An email whose case alone changes names the same account: no
		// session ends, and no current password is needed.
		tok = s.signIn(t, "ann.b@example.com", "a new passphrase")
		ann.do("PATCH", item, `{"email":"Ann.B@example.com"}`).mustStatus(t, http.StatusOK)
		if tok, code = s.refresh(t, tok); code != "" {
			t.Fatalf("refresh after a change of the email's case: %s", code)
		}

		// An admin's change of the password ends the sessions too.
		s.do("PATCH", item, `{"password":"set by the admin"}`).mustStatus(t, http.StatusOK)
		s.mustRefreshRefused(t, tok, "refresh token issued before an admin changed the password")
		s.signIn(t, "ann.b@example.com", "set by the admin")
	})
}

// TestOwnChangesNeedCurrentPassword: changing one's own password or email
// needs current_password in the same request, over REST (PATCH and PUT) and
// GraphQL; missing or wrong, it is 400 VALIDATION_ERROR on current_password
// and nothing changes; wrong ones count against the account like failed
// sign-ins. Admins changing another user's record need none.
func TestOwnChangesNeedCurrentPassword(t *testing.T) {
	forEachLifeStore(t, func(t *testing.T, s *lifeServer) {
		id, ann := s.mustUserAccount(t, "Ann", "ann@example.com", resourceapi.RoleUser)
		item := fmt.Sprintf("/api/users/%d", id)
		for _, body := range []string{`{"password":"a new passphrase"}`, `{"email":"ann.b@example.com"}`, `{"email":"ann.b@example.com","name":"Ann B"}`} {
			d := ann.do("PATCH", item, body).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			mustDetail(t, d, "current_password", "is required")
		}
		// A token of the user is no more than their key.
		tok := s.signIn(t, "ann@example.com", "correct horse battery")
		d := s.bearerOf(tok).do("PATCH", item, `{"email":"thief@example.com"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		mustDetail(t, d, "current_password", "is required")
		d = ann.do("PATCH", item, `{"email":"ann.b@example.com","current_password":"a wrong guess"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		mustDetail(t, d, "current_password", "is not your current password")
		got := ann.get(item).object(t)
		if got["email"] != "ann@example.com" || got["name"] != "Ann" {
			t.Fatalf("user after refused changes = %v, want unchanged", got)
		}
		s.signIn(t, "ann@example.com", "correct horse battery") // the password too
		// Other fields need none, and an email sent unchanged is no change.
		ann.do("PATCH", item, `{"name":"Ann B","email":"ann@example.com"}`).mustStatus(t, http.StatusOK)

		// GraphQL's updateUser has no current password to give: a change
		// of one's own email there is refused, with the same detail.
		r := ann.post("/graphql", fmt.Sprintf(`{"query":"mutation { updateUser(id: \"%d\", email: \"g@example.com\") { email } }"}`, id))
		if body := string(r.body); !strings.Contains(body, "BAD_USER_INPUT") || !strings.Contains(body, "current_password") {
			t.Fatalf("GraphQL updateUser of one's own email = %d %s, want BAD_USER_INPUT on current_password", r.StatusCode, body)
		}

		// A PUT of one's own record that changes the email needs it too
		// (a user granted users:write may PUT users).
		s.do("PATCH", item, `{"permissions":["users:write"]}`).mustStatus(t, http.StatusOK)
		d = ann.do("PUT", item, `{"name":"Ann B","email":"ann.c@example.com"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		mustDetail(t, d, "current_password", "is required")
		ann.do("PUT", item, `{"name":"Ann C","email":"ann@example.com"}`).mustStatus(t, http.StatusOK)
		ann.do("PUT", item, `{"name":"Ann C","email":"ann.c@example.com","current_password":"correct horse battery"}`).mustStatus(t, http.StatusOK)

		// An admin changes another user's email and password without one,
		// but not their own.
		s.do("PATCH", item, `{"email":"ann@example.com","password":"set by the admin"}`).mustStatus(t, http.StatusOK)
		d = s.do("PATCH", "/api/users/1", `{"email":"root@test.example"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		mustDetail(t, d, "current_password", "is required")
		s.do("PATCH", "/api/users/1", `{"email":"root@test.example","current_password":"correct horse battery"}`).mustStatus(t, http.StatusOK)

		// Wrong current passwords are failed guesses: after guessLimit of
		// them from one address, the account is throttled, for them and
		// for signing in, right password or not.
		for i := range guessLimit - 1 { // one guess was spent above
			d = ann.do("PATCH", item, `{"password":"another one","current_password":"guess`+fmt.Sprint(i)+`"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			mustDetail(t, d, "current_password", "is not your current password")
		}
		r = ann.do("PATCH", item, `{"password":"another one","current_password":"set by the admin"}`)
		r.mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		if _, err := s.app.PasswordCredentialsToken(s.ctx(t), "ann@example.com", "set by the admin"); err == nil {
			t.Fatalf("sign-in of an account throttled by wrong current passwords succeeded")
		}
	})
}

// TestAPIKeyExpiry: a key may carry expires_at, set in the future on
// create; it works until then, and is refused after it as any invalid
// credential, on the very next request, though the server has the key's
// account in its cache.
func TestAPIKeyExpiry(t *testing.T) {
	forEachLifeStore(t, func(t *testing.T, s *lifeServer) {
		_, ann := s.mustUserAccount(t, "Ann", "ann@example.com", resourceapi.RoleUser)
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		d := ann.post("/api/api-keys", `{"name":"old","expires_at":"`+past+`"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		mustDetail(t, d, "expires_at", "in the future")
		for _, bad := range []string{`"tomorrow"`, `"2030-01-02"`, `1893456000`, `"2030-01-02T03:04:05"`} {
			d := ann.lenient().post("/api/api-keys", `{"expires_at":`+bad+`}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			mustDetail(t, d, "expires_at", "")
		}

		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		r := ann.post("/api/api-keys", `{"name":"ci","expires_at":"`+at.Format(time.RFC3339Nano)+`"}`)
		r.mustStatus(t, http.StatusCreated)
		created := r.object(t)
		if got := created["expires_at"]; got != at.Format("2006-01-02T15:04:05.000Z") {
			t.Fatalf("expires_at = %v, want %s", got, at.Format("2006-01-02T15:04:05.000Z"))
		}
		expiring := s.as(created["key"].(string))
		forever := s.as(ann.post("/api/api-keys", `{"name":"forever"}`).object(t)["key"].(string))
		for range 2 { // the second from the caches
			expiring.get("/api/users/1").mustStatus(t, http.StatusOK)
		}
		s.clock.Advance(time.Hour)
		r = expiring.get("/api/users/1")
		r.mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		unknown := s.as("rak_AAAAAAAAAAAAAAAAAAAAAAAAAA").get("/api/users/1")
		if a, b := withoutRequestID(t, r.body), withoutRequestID(t, unknown.body); a != b {
			t.Errorf("expired key's body %s differs from an unknown key's %s", a, b)
		}
		forever.get("/api/users/1").mustStatus(t, http.StatusOK)
	})
}

// TestEndSessions: DELETE /api/users/{id}/sessions, by the user or an admin,
// ends every refresh token and access token of the user at once (204); API
// keys keep working; anyone else gets 403, and an unknown user is 404.
func TestEndSessions(t *testing.T) {
	forEachLifeStore(t, func(t *testing.T, s *lifeServer) {
		annID, ann := s.mustUserAccount(t, "Ann", "ann@example.com", resourceapi.RoleUser)
		boID, bo := s.mustUserAccount(t, "Bo", "bo@example.com", resourceapi.RoleUser)
		sessions := func(id int64) string { return fmt.Sprintf("/api/users/%d/sessions", id) }

		first, second := s.signIn(t, "ann@example.com", "correct horse battery"), s.signIn(t, "ann@example.com", "correct horse battery")
		boTok := s.signIn(t, "bo@example.com", "correct horse battery")
		bo.do("DELETE", sessions(annID), "").mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		s.bearerOf(boTok).do("DELETE", sessions(annID), "").mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		s.anonymous().do("DELETE", sessions(annID), "").mustError(t, http.StatusUnauthorized, resourceapi.CodeUnauthenticated)
		if _, code := s.refresh(t, first); code != "" {
			t.Fatalf("refresh after refused ends: %s", code)
		}

		// By the user, with one of the sessions it ends.
		s.bearerOf(second).do("DELETE", sessions(annID), "").mustStatus(t, http.StatusNoContent)
		s.mustRefreshRefused(t, second, "the session that ended them all")
		s.bearerOf(second).get("/api/users/1").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		ann.get("/api/users/1").mustStatus(t, http.StatusOK)
		// Another user's sessions are untouched.
		s.bearerOf(boTok).get("/api/users/1").mustStatus(t, http.StatusOK)

		// By an admin.
		again := s.signIn(t, "ann@example.com", "correct horse battery")
		s.do("DELETE", sessions(annID), "").mustStatus(t, http.StatusNoContent)
		s.mustRefreshRefused(t, again, "a session an admin ended")
		s.do("DELETE", sessions(boID), "").mustStatus(t, http.StatusNoContent)
		s.mustRefreshRefused(t, boTok, "Bo's session an admin ended")
		s.do("DELETE", sessions(999999), "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		s.do("DELETE", "/api/v2/users/0/sessions", "").mustStatus(t, http.StatusNotFound)
		s.do("GET", sessions(annID), "").mustStatus(t, http.StatusMethodNotAllowed)
	})
}

// TestRetiredIDs: an id once used is given to a new record by PUT only when
// an admin asks: a user with posts:write cannot take the id of another's
// deleted post, nor a user with users:write a deleted user's id; an admin
// can, and a user created again at a deleted user's id does not inherit a
// single token of theirs.
func TestRetiredIDs(t *testing.T) {
	forEachLifeStore(t, func(t *testing.T, s *lifeServer) {
		annID, ann := s.mustUserAccount(t, "Ann", "ann@example.com", resourceapi.RoleUser)
		_, bo := s.mustUserAccount(t, "Bo", "bo@example.com", resourceapi.RoleUser)

		post := idOf(t, ann.post("/api/posts", `{"title":"Mine","content":"Ann's"}`).object(t))
		path := fmt.Sprintf("/api/posts/%d", post)
		s.do("DELETE", path, "").mustStatus(t, http.StatusNoContent)
		d := bo.do("PUT", path, `{"title":"Taken","content":"Bo's"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		mustDetail(t, d, "id", "deleted")
		ann.do("PUT", path, `{"title":"Again","content":"Ann's"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		bo.get(path).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		// A fresh id is anyone's with the permission.
		bo.do("PUT", "/api/posts/123456789", `{"title":"Fresh","content":"Bo's"}`).mustStatus(t, http.StatusCreated)
		// An admin may give the id to a new record.
		r := s.do("PUT", path, `{"title":"Restored","content":"by an admin","author_id":`+fmt.Sprint(annID)+`}`)
		r.mustStatus(t, http.StatusCreated)

		// A deleted user's tokens never work again, even for a user an
		// admin creates at their id.
		carl, _ := s.mustUserAccount(t, "Carl", "carl@example.com", resourceapi.RoleUser)
		tok := s.signIn(t, "carl@example.com", "correct horse battery")
		user := fmt.Sprintf("/api/users/%d", carl)
		s.bearerOf(tok).get(user).mustStatus(t, http.StatusOK)
		s.do("DELETE", user, "").mustStatus(t, http.StatusNoContent)
		s.do("PATCH", fmt.Sprintf("/api/users/%d", annID), `{"permissions":["users:write"]}`).mustStatus(t, http.StatusOK)
		ann.do("PUT", user, `{"name":"Not Carl","email":"notcarl@example.com"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		s.do("PUT", user, `{"name":"Carl","email":"carl@example.com","password":"correct horse battery"}`).mustStatus(t, http.StatusCreated)
		s.bearerOf(tok).get(user).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		s.mustRefreshRefused(t, tok, "a deleted user's refresh token")
		// The new user signs in for themself.
		s.bearerOf(s.signIn(t, "carl@example.com", "correct horse battery")).get(user).mustStatus(t, http.StatusOK)
	})
}
