package oauth_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestServer runs every case against a server on each real database. The
// cases share one server (its users and clients); each issues its own
// tokens, and the clock only moves forward.
func TestServer(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"Metadata", testMetadata},
		{"PasswordGrant", testPasswordGrant},
		{"PasswordGrantErrors", testPasswordGrantErrors},
		{"Throttled", testThrottled},
		{"ClientAuthentication", testClientAuthentication},
		{"RequestErrors", testRequestErrors},
		{"ClientCredentials", testClientCredentials},
		{"Refresh", testRefresh},
		{"RefreshReuse", testRefreshReuse},
		{"RefreshReuseThiefFirst", testRefreshReuseThiefFirst},
		{"RefreshConcurrent", testRefreshConcurrent},
		{"RefreshOtherClientOrUser", testRefreshOtherClientOrUser},
		{"AuthorizationCode", testAuthorizationCode},
		{"PublicClient", testPublicClient},
		{"PKCE", testPKCE},
		{"AuthorizeRedirectErrors", testAuthorizeRedirectErrors},
		{"RedirectURIMismatch", testRedirectURIMismatch},
		{"CodeReuse", testCodeReuse},
		{"CodeExpiry", testCodeExpiry},
		{"SessionsEnded", testSessionsEnded},
		{"AuthorizePage", testAuthorizePage},
		{"CSRF", testCSRF},
		{"Deny", testDeny},
		{"WrongPassword", testWrongPassword},
		{"Revoke", testRevoke},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if b.name == "PostgreSQL" {
				pgtest.URL(t)
			}
			e := newEnv(t, b.open)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, e) })
			}
		})
	}
}

func testMetadata(t *testing.T, e *env) {
	resp, err := e.srv.Client().Get(e.base + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("metadata: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                e.base,
		"authorization_endpoint":                e.base + "/oauth/authorize",
		"token_endpoint":                        e.base + "/oauth/token",
		"revocation_endpoint":                   e.base + "/oauth/revoke",
		"grant_types_supported":                 []any{"authorization_code", "client_credentials", "password", "refresh_token"},
		"response_types_supported":              []any{"code"},
		"code_challenge_methods_supported":      []any{"S256"},
		"token_endpoint_auth_methods_supported": []any{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      []any{"api"},
	}
	for k, v := range want {
		if got, _ := json.Marshal(m[k]); string(got) != mustJSON(v) {
			t.Errorf("metadata %s = %s, want %s", k, got, mustJSON(v))
		}
	}
	// The endpoints it names are the ones that answer.
	if _, err := url.Parse(m["token_endpoint"].(string)); err != nil {
		t.Fatal(err)
	}
	// No issuer is configured, so it comes from Host: no shared cache may
	// keep it for a client of another host. It used to be public for an hour.
	if cc, vary := resp.Header.Get("Cache-Control"), resp.Header.Values("Vary"); strings.Contains(cc, "public") || !strings.Contains(cc, "private") || !slices.Contains(vary, "Host") {
		t.Errorf("metadata: Cache-Control %q, Vary %q; want private, and Vary: Host", cc, vary)
	}
	req, err := http.NewRequest(http.MethodGet, e.base+"/.well-known/oauth-authorization-server", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "other.example:8443"
	other, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Body.Close()
	var om map[string]any
	if err := json.NewDecoder(other.Body).Decode(&om); err != nil {
		t.Fatal(err)
	}
	if got := om["issuer"]; got != "http://other.example:8443" {
		t.Errorf("metadata for Host other.example:8443: issuer %v", got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func testPasswordGrant(t *testing.T, e *env) {
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
		tok, err := e.config(e.app, style).PasswordCredentialsToken(e.ctx(t), "ADA@example.com", ownerPassword)
		if err != nil {
			t.Fatalf("PasswordCredentialsToken (style %d): %v", style, err)
		}
		e.mustVerify(t, tok.AccessToken, e.owner.ID(), "Ada Lovelace")
		e.mustCallAPI(t, tok.AccessToken, e.owner.ID())
		if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("scope") != "api" || tok.ExpiresIn != 900 {
			t.Fatalf("token = %+v, want Bearer, a refresh token, scope api, 900 s", tok)
		}
	}
	// The raw response, its headers and shape.
	b, _ := e.mustToken(t, 200, url.Values{"grant_type": {"password"}, "username": {"ada@example.com"},
		"password": {ownerPassword}, "scope": {"api"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}})
	if !strings.HasPrefix(b.RefreshToken, "rar_") {
		t.Errorf("refresh token %q lacks its prefix", b.RefreshToken)
	}
	// A client not registered for refresh tokens gets none.
	pwOnly := e.mustClient(t, resourceapi.Record{"name": "Password only", "grants": []string{resourceapi.GrantPassword}})
	b, _ = e.mustToken(t, 200, url.Values{"grant_type": {"password"}, "username": {"ada@example.com"},
		"password": {ownerPassword}, "client_id": {pwOnly.id}, "client_secret": {pwOnly.secret}})
	if b.RefreshToken != "" {
		t.Errorf("a client without the refresh_token grant got a refresh token")
	}
}

func testPasswordGrantErrors(t *testing.T, e *env) {
	base := func() url.Values {
		return url.Values{"grant_type": {"password"}, "username": {"ada@example.com"}, "password": {ownerPassword},
			"client_id": {e.app.id}, "client_secret": {e.app.secret}}
	}
	with := func(k, v string) url.Values {
		f := base()
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"wrong password", with("password", "wrong password"), 400, "invalid_grant"},
		{"unknown email", with("username", "nobody@example.com"), 400, "invalid_grant"},
		{"no username", with("username", ""), 400, "invalid_request"},
		{"no password", with("password", ""), 400, "invalid_request"},
		{"other scope", with("scope", "api admin"), 400, "invalid_scope"},
		{"public client", url.Values{"grant_type": {"password"}, "username": {"ada@example.com"},
			"password": {ownerPassword}, "client_id": {e.spa.id}}, 400, "unauthorized_client"},
		{"client not registered", url.Values{"grant_type": {"password"}, "username": {"ada@example.com"},
			"password": {ownerPassword}, "client_id": {e.web.id}, "client_secret": {e.web.secret}}, 400, "unauthorized_client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := e.mustToken(t, c.status, c.form)
			mustError(t, b, c.code)
			if strings.Contains(b.Description, ownerPassword) || strings.Contains(b.Description, e.app.secret) {
				t.Fatalf("error description %q echoes a secret", b.Description)
			}
		})
	}
	// Through x/oauth2: the error it reports.
	_, err := e.config(e.app, oauth2.AuthStyleInParams).PasswordCredentialsToken(e.ctx(t), "ada@example.com", "nope")
	mustRetrieveError(t, err, 400, "invalid_grant")

	// A soft-deleted user gets nothing.
	u := e.mustUser(t, "Gone Soon", "gone@example.com", "a fine password")
	e.setDeleted(t, u.ID(), true)
	b, _ := e.mustToken(t, 400, url.Values{"grant_type": {"password"}, "username": {"gone@example.com"},
		"password": {"a fine password"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}})
	mustError(t, b, "invalid_grant")
}

// testThrottled: an account out of failed attempts answers 429 with
// Retry-After, also for the right password, until the limiter allows again.
func testThrottled(t *testing.T, e *env) {
	e.mustUser(t, "Target", "target@example.com", "the right password")
	form := func(pw string) url.Values {
		return url.Values{"grant_type": {"password"}, "username": {"target@example.com"}, "password": {pw},
			"client_id": {e.app.id}, "client_secret": {e.app.secret}}
	}
	for range e.guess.limit {
		b, _ := e.mustToken(t, 400, form("guess"))
		mustError(t, b, "invalid_grant")
	}
	b, resp := e.mustToken(t, 429, form("the right password"))
	mustError(t, b, "invalid_grant")
	if got := resp.Header.Get("Retry-After"); got != "90" {
		t.Fatalf("Retry-After = %q, want 90", got)
	}
}

func testClientAuthentication(t *testing.T, e *env) {
	pw := url.Values{"grant_type": {"password"}, "username": {"ada@example.com"}, "password": {ownerPassword}}
	with := func(kv ...string) url.Values {
		f := url.Values{}
		for k, v := range pw {
			f[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	basic := func(id, secret string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	}
	// Both methods work.
	e.mustToken(t, 200, with("client_id", e.app.id, "client_secret", e.app.secret))
	e.mustToken(t, 200, pw, "Authorization", basic(e.app.id, e.app.secret))
	// Basic with a form client_id naming the same client is fine.
	e.mustToken(t, 200, with("client_id", e.app.id), "Authorization", basic(e.app.id, e.app.secret))

	for _, c := range []struct {
		name      string
		form      url.Values
		authz     string
		status    int
		code      string
		challenge bool
	}{
		{"wrong secret in form", with("client_id", e.app.id, "client_secret", e.app.secret+"x"), "", 401, "invalid_client", false},
		{"wrong secret in Basic", pw, basic(e.app.id, e.app.secret+"x"), 401, "invalid_client", true},
		{"other client's secret", with("client_id", e.app.id, "client_secret", e.web.secret), "", 401, "invalid_client", false},
		{"unknown client", with("client_id", "rac_nosuchclient", "client_secret", e.app.secret), "", 401, "invalid_client", false},
		{"unknown client in Basic", pw, basic("rac_nosuchclient", "x"), 401, "invalid_client", true},
		{"no secret", with("client_id", e.app.id), "", 401, "invalid_client", false},
		{"empty secret", with("client_id", e.app.id, "client_secret", ""), "", 401, "invalid_client", false},
		{"no client", pw, "", 401, "invalid_client", false},
		{"Basic not base64", pw, "Basic %%%", 401, "invalid_client", true},
		{"Bearer instead of Basic", pw, "Bearer abc", 401, "invalid_client", true},
		{"Basic and client_secret", with("client_secret", e.app.secret), basic(e.app.id, e.app.secret), 400, "invalid_request", false},
		{"Basic and another client_id", with("client_id", e.web.id), basic(e.app.id, e.app.secret), 400, "invalid_request", false},
		{"public client with a secret", with("client_id", e.spa.id, "client_secret", "racs_anything"), "", 401, "invalid_client", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.authz != "" {
				h = []string{"Authorization", c.authz}
			}
			b, resp := e.mustToken(t, c.status, c.form, h...)
			mustError(t, b, c.code)
			got := resp.Header.Get("WWW-Authenticate")
			if c.challenge != strings.HasPrefix(got, "Basic realm=") {
				t.Fatalf("WWW-Authenticate = %q, want a Basic challenge: %v", got, c.challenge)
			}
			for _, s := range []string{e.app.secret, e.web.secret} {
				if strings.Contains(b.Description, s) {
					t.Fatalf("error description %q echoes a secret", b.Description)
				}
			}
		})
	}
	// x/oauth2 with a wrong secret, in either style.
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
		cfg := e.config(testClient{id: e.app.id, secret: "racs_WRONG"}, style)
		_, err := cfg.PasswordCredentialsToken(e.ctx(t), "ada@example.com", ownerPassword)
		mustRetrieveError(t, err, 401, "invalid_client")
	}
}

// testRequestErrors: what is wrong with the request itself, before any
// grant.
func testRequestErrors(t *testing.T, e *env) {
	ok := url.Values{"grant_type": {"password"}, "username": {"ada@example.com"}, "password": {ownerPassword},
		"client_id": {e.app.id}, "client_secret": {e.app.secret}}
	do := func(method, target, ctype, body string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), method, target, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, c := range []struct {
		name  string
		resp  func() *http.Response
		code  string
		check func(t *testing.T, b tokenBody)
	}{
		{"JSON body", func() *http.Response {
			return do("POST", e.base+"/oauth/token", "application/json", `{"grant_type":"password"}`)
		}, "invalid_request", nil},
		{"no content type", func() *http.Response { return do("POST", e.base+"/oauth/token", "", ok.Encode()) }, "invalid_request", nil},
		{"parameters in the URL", func() *http.Response {
			return do("POST", e.base+"/oauth/token?client_secret="+e.app.secret, "application/x-www-form-urlencoded", ok.Encode())
		}, "invalid_request", nil},
		{"repeated parameter", func() *http.Response {
			return do("POST", e.base+"/oauth/token", "application/x-www-form-urlencoded", ok.Encode()+"&grant_type=password")
		}, "invalid_request", func(t *testing.T, b tokenBody) {
			if !strings.Contains(b.Description, "grant_type") {
				t.Errorf("description %q does not name grant_type", b.Description)
			}
		}},
		{"body too large", func() *http.Response {
			return do("POST", e.base+"/oauth/token", "application/x-www-form-urlencoded", ok.Encode()+"&pad="+strings.Repeat("a", 20<<10))
		}, "invalid_request", nil},
		{"value too long", func() *http.Response {
			return do("POST", e.base+"/oauth/token", "application/x-www-form-urlencoded", ok.Encode()+"&pad="+strings.Repeat("a", 5000))
		}, "invalid_request", nil},
		{"no grant_type", func() *http.Response {
			f := url.Values{"client_id": {e.app.id}, "client_secret": {e.app.secret}}
			return e.post(t, "/oauth/token", f)
		}, "invalid_request", nil},
		{"unknown grant_type", func() *http.Response {
			f := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}}
			return e.post(t, "/oauth/token", f)
		}, "unsupported_grant_type", nil},
		{"implicit is no grant", func() *http.Response {
			f := url.Values{"grant_type": {"implicit"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}}
			return e.post(t, "/oauth/token", f)
		}, "unsupported_grant_type", nil},
		{"grant not registered", func() *http.Response {
			f := url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}}
			return e.post(t, "/oauth/token", f)
		}, "unauthorized_client", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mustTokenResponse(t, c.resp(), 400)
			mustError(t, b, c.code)
			if c.check != nil {
				c.check(t, b)
			}
		})
	}
	// Another method: 405 with Allow, still not stored.
	resp := do("GET", e.base+"/oauth/token", "", "")
	resp.Body.Close()
	if allow := resp.Header.Get("Allow"); resp.StatusCode != 405 || !strings.HasPrefix(allow, "POST") {
		t.Fatalf("GET /oauth/token = %d, Allow %q; want 405, POST", resp.StatusCode, allow)
	}
	mustNoStore(t, resp)
}

func testClientCredentials(t *testing.T, e *env) {
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
		cfg := clientcredentials.Config{ClientID: e.app.id, ClientSecret: e.app.secret, TokenURL: e.base + "/oauth/token",
			Scopes: []string{"api"}, AuthStyle: style}
		tok, err := cfg.Token(e.ctx(t))
		if err != nil {
			t.Fatalf("client credentials (style %d): %v", style, err)
		}
		e.mustVerify(t, tok.AccessToken, e.app.userID, "Backend App (OAuth client)")
		e.mustCallAPI(t, tok.AccessToken, e.app.userID) // a service user reads its own record
		if tok.RefreshToken != "" {
			t.Fatalf("client_credentials returned a refresh token")
		}
	}
	b, _ := e.mustToken(t, 200, url.Values{"grant_type": {"client_credentials"}, "client_id": {e.ccOnly.id}, "client_secret": {e.ccOnly.secret}})
	if b.RefreshToken != "" {
		t.Fatalf("client_credentials returned a refresh token")
	}
	// A public client may not; a client not registered for it may not.
	b, _ = e.mustToken(t, 400, url.Values{"grant_type": {"client_credentials"}, "client_id": {e.spa.id}})
	mustError(t, b, "unauthorized_client")
	b, _ = e.mustToken(t, 400, url.Values{"grant_type": {"client_credentials"}, "client_id": {e.web.id}, "client_secret": {e.web.secret}})
	mustError(t, b, "unauthorized_client")
	b, _ = e.mustToken(t, 400, url.Values{"grant_type": {"client_credentials"}, "scope": {"write"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}})
	mustError(t, b, "invalid_scope")
	// A client whose service user is soft-deleted gets nothing.
	c := e.mustClient(t, resourceapi.Record{"name": "Disabled", "grants": []string{resourceapi.GrantClientCredentials}})
	e.setDeleted(t, c.userID, true)
	b, _ = e.mustToken(t, 400, url.Values{"grant_type": {"client_credentials"}, "client_id": {c.id}, "client_secret": {c.secret}})
	mustError(t, b, "unauthorized_client")
}

// passwordToken signs the owner in through the app client.
func (e *env) passwordToken(t *testing.T) tokenBody {
	t.Helper()
	b, _ := e.mustToken(t, 200, url.Values{"grant_type": {"password"}, "username": {"ada@example.com"},
		"password": {ownerPassword}, "client_id": {e.app.id}, "client_secret": {e.app.secret}})
	return b
}

func (e *env) refreshForm(c testClient, rt string) url.Values {
	f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.id}}
	if c.secret != "" {
		f.Set("client_secret", c.secret)
	}
	return f
}

func testRefresh(t *testing.T, e *env) {
	first := e.passwordToken(t)
	// x/oauth2 refreshes a token it holds as expired.
	cfg := e.config(e.app, oauth2.AuthStyleInHeader)
	e.clock.Advance(time.Minute)
	old := &oauth2.Token{AccessToken: first.AccessToken, RefreshToken: first.RefreshToken, Expiry: time.Now().Add(-time.Second)}
	tok, err := cfg.TokenSource(e.ctx(t), old).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if tok.RefreshToken == first.RefreshToken || tok.AccessToken == first.AccessToken {
		t.Fatalf("refresh returned the same tokens")
	}
	e.mustVerify(t, tok.AccessToken, e.owner.ID(), "Ada Lovelace")
	// The new refresh token works, with the form's client authentication
	// and a scope within the grant.
	f := e.refreshForm(e.app, tok.RefreshToken)
	f.Set("scope", "api")
	next, _ := e.mustToken(t, 200, f)
	if next.RefreshToken == "" || next.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh returned refresh token %q", next.RefreshToken)
	}
	// A scope beyond the grant is refused.
	f = e.refreshForm(e.app, next.RefreshToken)
	f.Set("scope", "api admin")
	b, _ := e.mustToken(t, 400, f)
	mustError(t, b, "invalid_scope")
	for _, bad := range []string{"", "rar_NOSUCHTOKEN", strings.Repeat("x", 300)} {
		f := e.refreshForm(e.app, bad)
		want := "invalid_grant"
		if bad == "" {
			f.Del("refresh_token")
			want = "invalid_request"
		}
		b, _ := e.mustToken(t, 400, f)
		mustError(t, b, want)
	}
}

// testRefreshReuse: without a grace (the default), any second use of a
// refresh token, even at once, revokes the whole family, the newest token
// included; other families are untouched.
func testRefreshReuse(t *testing.T, e *env) {
	t0 := e.passwordToken(t).RefreshToken
	t1b, _ := e.mustToken(t, 200, e.refreshForm(e.app, t0))
	t1 := t1b.RefreshToken

	b, _ := e.mustToken(t, 400, e.refreshForm(e.app, t0))
	mustError(t, b, "invalid_grant")
	// The family is revoked: the newest token is dead too.
	b, _ = e.mustToken(t, 400, e.refreshForm(e.app, t1))
	mustError(t, b, "invalid_grant")
	// Another family of the same user is untouched.
	other := e.passwordToken(t).RefreshToken
	e.mustToken(t, 200, e.refreshForm(e.app, other))
}

// testRefreshReuseThiefFirst: a thief who copied the client's refresh token
// rotates it first; when the legitimate client (an x/oauth2 token source)
// then refreshes with the token it holds, at once, its refresh fails and
// the thief's tokens are revoked with the family: the thief cannot keep the
// session the client lost.
func testRefreshReuseThiefFirst(t *testing.T, e *env) {
	first := e.passwordToken(t)
	thief, _ := e.mustToken(t, 200, e.refreshForm(e.app, first.RefreshToken))
	cfg := e.config(e.app, oauth2.AuthStyleInHeader)
	held := &oauth2.Token{AccessToken: first.AccessToken, RefreshToken: first.RefreshToken, Expiry: time.Now().Add(-time.Second)}
	if tok, err := cfg.TokenSource(e.ctx(t), held).Token(); err == nil {
		t.Fatalf("the client's refresh with a token the thief rotated = %+v, want invalid_grant", tok)
	} else if re, ok := err.(*oauth2.RetrieveError); !ok || re.ErrorCode != "invalid_grant" {
		t.Fatalf("the client's refresh: %v, want invalid_grant", err)
	}
	held = &oauth2.Token{AccessToken: thief.AccessToken, RefreshToken: thief.RefreshToken, Expiry: time.Now().Add(-time.Second)}
	if tok, err := cfg.TokenSource(e.ctx(t), held).Token(); err == nil {
		t.Fatalf("the thief's refresh after the client's reuse = %+v, want invalid_grant", tok)
	} else if re, ok := err.(*oauth2.RetrieveError); !ok || re.ErrorCode != "invalid_grant" {
		t.Fatalf("the thief's refresh: %v, want invalid_grant", err)
	}
}

// testRefreshConcurrent: two uses of one token at once are a reuse like any
// other: exactly one wins, and the loser's revokes the family, the
// winner's new token with it.
func testRefreshConcurrent(t *testing.T, e *env) {
	for round := range 3 {
		rt := e.passwordToken(t).RefreshToken
		bodies, statuses := e.refreshTwice(t, rt)
		if statuses[0] != 200 || statuses[1] != 400 {
			t.Fatalf("round %d: statuses = %v, want one 200 and one 400", round, statuses)
		}
		winner, loser := bodies[0], bodies[1]
		mustError(t, loser, "invalid_grant")
		b, _ := e.mustToken(t, 400, e.refreshForm(e.app, winner.RefreshToken))
		mustError(t, b, "invalid_grant")
	}
}

// refreshTwice sends two refreshes of rt at once and returns their bodies
// and statuses, the success (if any) first.
func (e *env) refreshTwice(t *testing.T, rt string) ([]tokenBody, []int) {
	t.Helper()
	var wg sync.WaitGroup
	bodies := make([]tokenBody, 2)
	statuses := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			resp := e.post(t, "/oauth/token", e.refreshForm(e.app, rt))
			defer resp.Body.Close()
			statuses[i] = resp.StatusCode
			json.NewDecoder(resp.Body).Decode(&bodies[i])
		})
	}
	wg.Wait()
	if statuses[0] > statuses[1] {
		bodies[0], bodies[1] = bodies[1], bodies[0]
		statuses[0], statuses[1] = statuses[1], statuses[0]
	}
	return bodies, statuses
}

// TestRefreshReuseGrace: with RefreshReuseGrace set, a second use within it
// is taken for the client's own race: refused, nothing revoked, so the
// winner's token of two concurrent refreshes keeps working. A reuse after
// it revokes the family.
func TestRefreshReuseGrace(t *testing.T) {
	const grace = 10 * time.Second
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			if b.name == "PostgreSQL" {
				pgtest.URL(t)
			}
			e := newEnv(t, b.open, func(cfg *oauth.Config) { cfg.RefreshReuseGrace = grace })
			t0 := e.passwordToken(t).RefreshToken
			t1b, _ := e.mustToken(t, 200, e.refreshForm(e.app, t0))
			t1 := t1b.RefreshToken

			e.clock.Advance(grace - time.Second)
			b, _ := e.mustToken(t, 400, e.refreshForm(e.app, t0))
			mustError(t, b, "invalid_grant")
			t2b, _ := e.mustToken(t, 200, e.refreshForm(e.app, t1))
			t2 := t2b.RefreshToken

			e.clock.Advance(grace + time.Second)
			b, _ = e.mustToken(t, 400, e.refreshForm(e.app, t0))
			mustError(t, b, "invalid_grant")
			b, _ = e.mustToken(t, 400, e.refreshForm(e.app, t2))
			mustError(t, b, "invalid_grant")

			bodies, statuses := e.refreshTwice(t, e.passwordToken(t).RefreshToken)
			if statuses[0] != 200 || statuses[1] != 400 {
				t.Fatalf("statuses = %v, want one 200 and one 400", statuses)
			}
			e.mustToken(t, 200, e.refreshForm(e.app, bodies[0].RefreshToken))
		})
	}
}

// testRefreshOtherClientOrUser: a token presented by a client it was not
// issued to is refused and its family revoked; a soft-deleted user's token
// gives nothing.
func testRefreshOtherClientOrUser(t *testing.T, e *env) {
	rt := e.passwordToken(t).RefreshToken
	thief := e.mustClient(t, resourceapi.Record{"name": "Thief", "grants": []string{resourceapi.GrantRefreshToken}})
	b, _ := e.mustToken(t, 400, e.refreshForm(thief, rt))
	mustError(t, b, "invalid_grant")
	e.clock.Advance(time.Minute)
	b, _ = e.mustToken(t, 400, e.refreshForm(e.app, rt))
	mustError(t, b, "invalid_grant")

	u := e.mustUser(t, "Leaving", "leaving@example.com", "leaving password")
	b, _ = e.mustToken(t, 200, url.Values{"grant_type": {"password"}, "username": {"leaving@example.com"},
		"password": {"leaving password"}, "client_id": {e.app.id}, "client_secret": {e.app.secret}})
	e.setDeleted(t, u.ID(), true)
	b, _ = e.mustToken(t, 400, e.refreshForm(e.app, b.RefreshToken))
	mustError(t, b, "invalid_grant")
}

// authorize runs the authorization page for cfg as a browser: GET the
// page, sign in as the owner and press decision. It returns the redirect's
// query.
func (e *env) authorize(t *testing.T, cfg *oauth2.Config, state, verifier, decision string) url.Values {
	t.Helper()
	c := e.browser(t)
	p := getPage(t, c, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	if p.resp.StatusCode != 200 {
		t.Fatalf("authorize page: %d %s", p.resp.StatusCode, p.text())
	}
	resp := p.submit(t, c, e, url.Values{"email": {"ada@example.com"}, "password": {ownerPassword}, "decision": {decision}})
	return mustRedirect(t, resp, cfg.RedirectURL)
}

// mustRedirect checks that resp sends the browser to redirectURI and
// returns the parameters it adds.
func mustRedirect(t *testing.T, resp *http.Response, redirectURI string) url.Values {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status = %d, want 303; body %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	target, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	if target.Scheme+"://"+target.Host+target.Path != strings.Split(redirectURI, "?")[0] {
		t.Fatalf("redirect to %s, want %s", loc, redirectURI)
	}
	return target.Query()
}

func testAuthorizationCode(t *testing.T, e *env) {
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cfg := e.config(e.web, style)
		verifier := oauth2.GenerateVerifier()
		q := e.authorize(t, cfg, "xyz state/+=", verifier, "allow")
		if q.Get("state") != "xyz state/+=" || q.Get("iss") != e.base || q.Get("code") == "" || q.Has("error") {
			t.Fatalf("redirect query = %v, want code, state and iss", q)
		}
		tok, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		e.mustVerify(t, tok.AccessToken, e.owner.ID(), "Ada Lovelace")
		if tok.RefreshToken == "" || tok.Extra("scope") != "api" {
			t.Fatalf("token = %+v, want a refresh token and scope api", tok)
		}
		// Its refresh token rotates.
		e.mustToken(t, 200, e.refreshForm(e.web, tok.RefreshToken))
	}
	// A registered redirect URI with its own query keeps it.
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	cfg.RedirectURL = "https://app.example/cb?tenant=7"
	q := e.authorize(t, cfg, "s", oauth2.GenerateVerifier(), "allow")
	if q.Get("tenant") != "7" || q.Get("code") == "" {
		t.Fatalf("redirect query = %v, want tenant=7 kept and a code", q)
	}
}

func testPublicClient(t *testing.T, e *env) {
	cfg := e.config(e.spa, oauth2.AuthStyleInParams)
	verifier := oauth2.GenerateVerifier()
	q := e.authorize(t, cfg, "st", verifier, "allow")
	tok, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange (public client): %v", err)
	}
	e.mustVerify(t, tok.AccessToken, e.owner.ID(), "Ada Lovelace")
	// Its refresh token rotates with client_id alone, or Basic with an
	// empty password.
	b, _ := e.mustToken(t, 200, e.refreshForm(e.spa, tok.RefreshToken))
	e.mustToken(t, 200, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {b.RefreshToken}},
		"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(e.spa.id+":")))
	// Without PKCE a public client would be no safer than implicit: the
	// verifier is required for everyone, as below in testPKCE.
}

func testPKCE(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	verifier := oauth2.GenerateVerifier()
	// The authorization request must carry an S256 challenge.
	for _, c := range []struct {
		name string
		opts []oauth2.AuthCodeOption
	}{
		{"no challenge", nil},
		{"plain", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain")}},
		{"no method", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))}},
		{"malformed challenge", []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("code_challenge", "short"), oauth2.SetAuthURLParam("code_challenge_method", "S256")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := e.browser(t).Get(cfg.AuthCodeURL("st8", c.opts...))
			if err != nil {
				t.Fatal(err)
			}
			q := mustRedirect(t, resp, e.callback)
			if q.Get("error") != "invalid_request" || q.Get("state") != "st8" || q.Has("code") {
				t.Fatalf("redirect query = %v, want invalid_request with the state", q)
			}
		})
	}
	// The token request must carry the verifier that matches.
	for _, c := range []struct {
		name, verifier string
		status         int
		code           string
	}{
		{"wrong verifier", oauth2.GenerateVerifier(), 400, "invalid_grant"},
		{"short verifier", "abc", 400, "invalid_request"},
		{"verifier with bad characters", strings.Repeat("a", 42) + "!", 400, "invalid_request"},
		{"no verifier", "", 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := e.authorize(t, cfg, "s", verifier, "allow")
			f := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {e.callback},
				"code_verifier": {c.verifier}, "client_id": {e.web.id}, "client_secret": {e.web.secret}}
			if c.verifier == "" {
				f.Del("code_verifier")
			}
			b, _ := e.mustToken(t, c.status, f)
			mustError(t, b, c.code)
		})
	}
	// Through x/oauth2: a wrong verifier.
	q := e.authorize(t, cfg, "s", verifier, "allow")
	_, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	mustRetrieveError(t, err, 400, "invalid_grant")
}

// testAuthorizeRedirectErrors: with a known client and a registered
// redirect URI, errors go back to the client with the state.
func testAuthorizeRedirectErrors(t *testing.T, e *env) {
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	good := url.Values{"response_type": {"code"}, "client_id": {e.web.id}, "redirect_uri": {e.callback},
		"state": {"abc"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	for _, c := range []struct {
		name   string
		change func(url.Values)
		code   string
	}{
		{"implicit", func(v url.Values) { v.Set("response_type", "token") }, "unsupported_response_type"},
		{"unknown response type", func(v url.Values) { v.Set("response_type", "id_token") }, "unsupported_response_type"},
		{"no response type", func(v url.Values) { v.Del("response_type") }, "invalid_request"},
		{"other scope", func(v url.Values) { v.Set("scope", "admin") }, "invalid_scope"},
		{"repeated parameter", func(v url.Values) { v.Add("code_challenge", challenge) }, "invalid_request"},
		{"client not registered for the code grant", func(v url.Values) { v.Set("client_id", e.ccOnly.id) }, "unauthorized_client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = slices.Clone(vs)
			}
			c.change(v)
			resp, err := e.browser(t).Get(e.base + "/oauth/authorize?" + v.Encode())
			if err != nil {
				t.Fatal(err)
			}
			q := mustRedirect(t, resp, e.callback)
			if q.Get("error") != c.code || q.Get("state") != "abc" || q.Get("error_description") == "" || q.Get("iss") != e.base {
				t.Fatalf("redirect query = %v, want error %s with the state and issuer", q, c.code)
			}
		})
	}
}

// testRedirectURIMismatch: an unknown client or a redirect URI that is not
// registered exactly shows an error page and never redirects; a token
// request must repeat the authorization request's URI.
func testRedirectURIMismatch(t *testing.T, e *env) {
	challenge := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())
	base := url.Values{"response_type": {"code"}, "client_id": {e.web.id}, "redirect_uri": {e.callback},
		"state": {"abc"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	for _, c := range []struct{ name, key, value string }{
		{"other host", "redirect_uri", "https://evil.example/callback"},
		{"prefix of a registered URI", "redirect_uri", e.callback + "/more"},
		{"registered URI with a query added", "redirect_uri", e.callback + "?x=1"},
		{"registered URI in another case", "redirect_uri", strings.ToUpper(e.callback)},
		{"no redirect URI", "redirect_uri", ""},
		{"other client's URI", "client_id", e.app.id},
		{"unknown client", "client_id", "rac_unknown"},
		{"no client", "client_id", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range base {
				v[k] = slices.Clone(vs)
			}
			if c.value == "" {
				v.Del(c.key)
			} else {
				v.Set(c.key, c.value)
			}
			v.Set("response_type", "token") // would redirect with an error, were the URI trusted
			p := getPage(t, e.browser(t), e.base+"/oauth/authorize?"+v.Encode())
			if p.resp.StatusCode != 400 || p.resp.Header.Get("Location") != "" {
				t.Fatalf("status = %d, Location %q; want 400 and no redirect", p.resp.StatusCode, p.resp.Header.Get("Location"))
			}
			if !strings.Contains(p.text(), "Authorization request failed") || len(p.all("form")) != 0 {
				t.Fatalf("page = %q, want the error page", p.text())
			}
			mustPageHeaders(t, p.resp)
		})
	}
	// The token request's redirect_uri must be the authorization request's.
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	verifier := oauth2.GenerateVerifier()
	q := e.authorize(t, cfg, "s", verifier, "allow")
	cfg.RedirectURL = "https://app.example/cb?tenant=7"
	_, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	mustRetrieveError(t, err, 400, "invalid_grant")
	// ... and is required.
	q = e.authorize(t, e.config(e.web, oauth2.AuthStyleInHeader), "s", verifier, "allow")
	b, _ := e.mustToken(t, 400, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"code_verifier": {verifier}, "client_id": {e.web.id}, "client_secret": {e.web.secret}})
	mustError(t, b, "invalid_request")
}

// testCodeReuse: a code works once; its second use fails and revokes what
// the first issued. A code is bound to its client.
func testCodeReuse(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	verifier := oauth2.GenerateVerifier()
	q := e.authorize(t, cfg, "s", verifier, "allow")
	tok, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	// Rotate once, so that what is revoked is a token descended from the
	// code's.
	b, _ := e.mustToken(t, 200, e.refreshForm(e.web, tok.RefreshToken))
	_, err = cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	mustRetrieveError(t, err, 400, "invalid_grant")
	b, _ = e.mustToken(t, 400, e.refreshForm(e.web, b.RefreshToken))
	mustError(t, b, "invalid_grant")

	// Another client cannot exchange a code issued to this one.
	q = e.authorize(t, cfg, "s", verifier, "allow")
	spa := e.config(e.spa, oauth2.AuthStyleInParams)
	_, err = spa.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	mustRetrieveError(t, err, 400, "invalid_grant")
}

// testSessionsEnded: when the user's sessions end (their security stamp is
// renewed, as by a password change), a code issued before is not
// exchanged, a refresh token issued before is not rotated, and an access
// token issued before is refused by the API; a new sign-in works.
func testSessionsEnded(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	verifier := oauth2.GenerateVerifier()
	code := e.authorize(t, cfg, "s", verifier, "allow").Get("code")
	before := e.passwordToken(t)
	e.mustCallAPI(t, before.AccessToken, e.owner.ID())
	if err := e.svc.EndSessions(t.Context(), resourceapi.SystemCaller(), e.owner.ID()); err != nil {
		t.Fatal(err)
	}
	_, err := cfg.Exchange(e.ctx(t), code, oauth2.VerifierOption(verifier))
	mustRetrieveError(t, err, 400, "invalid_grant")
	b, _ := e.mustToken(t, 400, e.refreshForm(e.app, before.RefreshToken))
	mustError(t, b, "invalid_grant")
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/api/users/"+itoa(e.owner.ID()), nil)
	req.Header.Set("Authorization", "Bearer "+before.AccessToken)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("API call with an access token issued before the sessions ended = %d, want 403", resp.StatusCode)
	}
	after := e.passwordToken(t)
	e.mustCallAPI(t, after.AccessToken, e.owner.ID())
	e.mustToken(t, 200, e.refreshForm(e.app, after.RefreshToken))
}

func testCodeExpiry(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	verifier := oauth2.GenerateVerifier()
	q := e.authorize(t, cfg, "s", verifier, "allow")
	e.clock.Advance(resourceapi.CodeTTL + time.Second)
	_, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	mustRetrieveError(t, err, 400, "invalid_grant")
	// Just before expiry it works.
	q = e.authorize(t, cfg, "s", verifier, "allow")
	e.clock.Advance(resourceapi.CodeTTL - time.Second)
	if _, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("Exchange a second before expiry: %v", err)
	}
}

// mustPageHeaders checks the headers that keep a page to itself.
func mustPageHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	h := resp.Header
	csp := h.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "form-action 'self'", "frame-ancestors 'none'", "style-src 'sha256-"} {
		if !strings.Contains(csp, d) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, d)
		}
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
		"Cache-Control": "no-store", "Content-Type": "text/html; charset=utf-8", "X-Content-Type-Options": "nosniff"} {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
}

func testAuthorizePage(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	c := e.browser(t)
	p := getPage(t, c, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if p.resp.StatusCode != 200 {
		t.Fatalf("status = %d", p.resp.StatusCode)
	}
	mustPageHeaders(t, p.resp)
	if csp := p.resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+e.base+";") {
		t.Errorf("CSP %q does not let the form's redirect reach the client's origin", csp)
	}
	// The client's name, escaped, and where the user returns to.
	if txt := p.text(); !strings.Contains(txt, "Web <App> & Co") || !strings.Contains(txt, e.base) {
		t.Errorf("page text %q lacks the client's name or the return address", txt)
	}
	// Every visible field has a label that names it.
	labels := map[string]string{}
	for _, l := range p.all("label") {
		labels[attr(l, "for")] = strings.TrimSpace(l.FirstChild.Data)
	}
	for _, in := range p.all("input") {
		if attr(in, "type") == "hidden" {
			continue
		}
		if labels[attr(in, "id")] == "" {
			t.Errorf("input %s has no label", attr(in, "name"))
		}
	}
	if labels["email"] != "Email" || labels["password"] != "Password" {
		t.Errorf("labels = %v, want Email and Password", labels)
	}
	var buttons []string
	for _, b := range p.all("button") {
		buttons = append(buttons, attr(b, "value")+"="+strings.TrimSpace(b.FirstChild.Data))
	}
	if !slices.Equal(buttons, []string{"allow=Allow", "deny=Deny"}) {
		t.Errorf("buttons = %v, want Allow and Deny", buttons)
	}
	if len(p.all("script")) != 0 || len(p.all("link")) != 0 || len(p.all("img")) != 0 {
		t.Errorf("page loads scripts or external assets")
	}
	// The CSRF cookie.
	var cookie *http.Cookie
	for _, ck := range p.resp.Cookies() {
		if ck.Name == "oauth_csrf" {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/oauth" {
		t.Fatalf("CSRF cookie = %+v, want HttpOnly, SameSite=Lax, Path=/oauth", cookie)
	}
	// A second page in the same browser keeps the cookie, so two tabs both
	// work.
	p2 := getPage(t, c, cfg.AuthCodeURL("t", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if len(p2.resp.Cookies()) != 0 {
		t.Errorf("second page set cookies again: %v", p2.resp.Cookies())
	}
	q := mustRedirect(t, p.submit(t, c, e, url.Values{"email": {"ada@example.com"}, "password": {ownerPassword}, "decision": {"allow"}}), e.callback)
	if q.Get("code") == "" || q.Get("state") != "s" {
		t.Fatalf("first tab: redirect query = %v", q)
	}
	// The form's redirect may reach the client's origin, whatever its
	// kind of redirect URI, and nothing else.
	for uri, want := range map[string]string{
		"https://app.example/cb?x=1":  "form-action 'self' https://app.example;",
		"http://[::1]:8000/cb":        "form-action 'self' http:;",
		"com.example.app:/oauth/done": "form-action 'self' com.example.app:;",
	} {
		cl := e.mustClient(t, resourceapi.Record{"name": "Redirects", "public": true,
			"grants": []string{resourceapi.GrantAuthorizationCode}, "redirect_uris": []string{uri}})
		cc := e.config(cl, oauth2.AuthStyleInParams)
		cc.RedirectURL = uri
		resp, err := e.browser(t).Get(cc.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.Contains(csp, want) {
			t.Errorf("redirect URI %s: status %d, CSP %q, want %q", uri, resp.StatusCode, csp, want)
		}
	}
	// HEAD is GET without a body.
	resp, err := c.Head(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD = %v, %v", resp, err)
	}
}

func testCSRF(t *testing.T, e *env) {
	guesses := e.guess.total()
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	signIn := url.Values{"email": {"ada@example.com"}, "password": {ownerPassword}, "decision": {"allow"}}
	load := func() (*http.Client, page) {
		c := e.browser(t)
		return c, getPage(t, c, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	}
	refused := func(t *testing.T, resp *http.Response) {
		t.Helper()
		p := readPage(t, resp)
		if resp.StatusCode != 403 || resp.Header.Get("Location") != "" || !strings.Contains(p.text(), "expired") {
			t.Fatalf("status = %d, Location %q, page %q; want 403, no redirect", resp.StatusCode, resp.Header.Get("Location"), p.text())
		}
		mustPageHeaders(t, resp)
	}
	t.Run("no cookie", func(t *testing.T) {
		_, p := load()
		refused(t, p.submit(t, e.browser(t), e, signIn))
	})
	t.Run("another browser's cookie", func(t *testing.T) {
		_, p := load()
		other, _ := load()
		refused(t, p.submit(t, other, e, signIn))
	})
	t.Run("tampered token", func(t *testing.T) {
		c, p := load()
		f := url.Values{"csrf_token": {p.form(t).Get("csrf_token") + "A"}}
		for k, v := range signIn {
			f[k] = v
		}
		refused(t, p.submit(t, c, e, f))
	})
	t.Run("changed hidden field", func(t *testing.T) {
		c, p := load()
		f := url.Values{"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}}
		for k, v := range signIn {
			f[k] = v
		}
		refused(t, p.submit(t, c, e, f))
	})
	t.Run("expired form", func(t *testing.T) {
		c, p := load()
		e.clock.Advance(31 * time.Minute)
		refused(t, p.submit(t, c, e, signIn))
	})
	t.Run("no token", func(t *testing.T) {
		c, p := load()
		f := url.Values{"csrf_token": {""}}
		for k, v := range signIn {
			f[k] = v
		}
		refused(t, p.submit(t, c, e, f))
	})
	// Nothing was counted as a guess, and no code issued.
	if n := e.guess.total() - guesses; n != 0 {
		t.Errorf("CSRF failures counted %d password failures", n)
	}
}

func testDeny(t *testing.T, e *env) {
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	c := e.browser(t)
	p := getPage(t, c, cfg.AuthCodeURL("deny-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	// Deny needs no password (the button skips the form's validation).
	q := mustRedirect(t, p.submit(t, c, e, url.Values{"decision": {"deny"}}), e.callback)
	if q.Get("error") != "access_denied" || q.Get("state") != "deny-state" || q.Has("code") {
		t.Fatalf("redirect query = %v, want access_denied with the state", q)
	}
}

func testWrongPassword(t *testing.T, e *env) {
	before := e.guess.total()
	cfg := e.config(e.web, oauth2.AuthStyleInHeader)
	c := e.browser(t)
	verifier := oauth2.GenerateVerifier()
	p := getPage(t, c, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	resp := p.submit(t, c, e, url.Values{"email": {"ada@example.com"}, "password": {"not it"}, "decision": {"allow"}})
	again := readPage(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Location") != "" {
		t.Fatalf("status = %d, Location %q; want the form again", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !strings.Contains(again.text(), "The email or password is incorrect.") {
		t.Fatalf("page %q lacks the message", again.text())
	}
	if got := again.form(t); got.Get("email") != "ada@example.com" || got.Get("password") != "" {
		t.Fatalf("form after a failure = %v, want the email kept and the password empty", got)
	}
	if e.guess.total() != before+1 {
		t.Fatalf("failed guesses = %d, want %d", e.guess.total(), before+1)
	}
	// The form shown again works.
	q := mustRedirect(t, again.submit(t, c, e, url.Values{"password": {ownerPassword}, "decision": {"allow"}}), e.callback)
	if _, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier)); err != nil {
		t.Fatalf("Exchange after a corrected password: %v", err)
	}
	// Empty fields: the form again, no guess counted.
	resp = again.submit(t, c, e, url.Values{"password": {""}, "decision": {"allow"}})
	if p := readPage(t, resp); resp.StatusCode != 200 || !strings.Contains(p.text(), "Enter your email and password.") {
		t.Fatalf("empty password: %d %q", resp.StatusCode, p.text())
	}
	if e.guess.total() != before+1 {
		t.Fatalf("an empty password counted as a guess")
	}
}

func testRevoke(t *testing.T, e *env) {
	revoke := func(t *testing.T, c testClient, tok string, status int) {
		t.Helper()
		f := url.Values{"token": {tok}, "client_id": {c.id}}
		if c.secret != "" {
			f.Set("client_secret", c.secret)
		}
		resp := e.post(t, "/oauth/revoke", f)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("revoke = %d %s, want %d", resp.StatusCode, body, status)
		}
		mustNoStore(t, resp)
	}
	b := e.passwordToken(t)
	// Another client's revocation does nothing (and says nothing).
	revoke(t, e.web, b.RefreshToken, 200)
	next, _ := e.mustToken(t, 200, e.refreshForm(e.app, b.RefreshToken))
	// Revoking an earlier token of the family revokes the newest.
	revoke(t, e.app, b.RefreshToken, 200)
	got, _ := e.mustToken(t, 400, e.refreshForm(e.app, next.RefreshToken))
	mustError(t, got, "invalid_grant")
	// Unknown tokens and access tokens: 200.
	revoke(t, e.app, "rar_UNKNOWN", 200)
	revoke(t, e.app, next.AccessToken, 200)
	revoke(t, e.app, strings.Repeat("x", 1000), 200)
	// A public client revokes its own with its client_id.
	cfg := e.config(e.spa, oauth2.AuthStyleInParams)
	verifier := oauth2.GenerateVerifier()
	q := e.authorize(t, cfg, "s", verifier, "allow")
	tok, err := cfg.Exchange(e.ctx(t), q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	revoke(t, e.spa, tok.RefreshToken, 200)
	got, _ = e.mustToken(t, 400, e.refreshForm(e.spa, tok.RefreshToken))
	mustError(t, got, "invalid_grant")

	// Errors: no token, no client, wrong secret.
	resp := e.post(t, "/oauth/revoke", url.Values{"client_id": {e.app.id}, "client_secret": {e.app.secret}})
	mustError(t, mustTokenResponse(t, resp, 400), "invalid_request")
	resp = e.post(t, "/oauth/revoke", url.Values{"token": {"x"}})
	mustError(t, mustTokenResponse(t, resp, 401), "invalid_client")
	resp = e.post(t, "/oauth/revoke", url.Values{"token": {"x"}},
		"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(e.app.id+":wrong")))
	mustError(t, mustTokenResponse(t, resp, 401), "invalid_client")
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
	}
}
