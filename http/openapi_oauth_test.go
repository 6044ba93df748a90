package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/token"
)

// TestOpenAPIOAuth mounts the real authorization server (package oauth), as
// cmd/resourceapi does, and sends its endpoints requests through the
// contract-checked client: the document's description of /oauth/..., written
// in this package from the OAuth RFCs, is held to what the server answers.
func TestOpenAPIOAuth(t *testing.T) {
	store := mustSQLite(t, newClock().Now)
	c := mustServer(t, store, func(cfg *rhttp.Config) {
		tokens := tokenIssuer(t)
		cfg.OAuth = oauth.NewServer(oauth.Config{Store: store.(resourceapi.OAuthStore), Auth: cfg.Service.Authenticator(), Tokens: tokens,
			Logger: testLogger(t)}).Handler()
	})
	anon := c.anonymous()
	ctx := context.Background()
	c.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser) // password "correct horse battery"
	app, err := c.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, resourceapi.Record{
		"name": "Backend", "grants": []string{resourceapi.GrantPassword, resourceapi.GrantRefreshToken},
	})
	if err != nil {
		t.Fatal(err)
	}
	web, err := c.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, resourceapi.Record{
		"name": "Web", "grants": []string{resourceapi.GrantAuthorizationCode}, "redirect_uris": []string{"https://app.example/cb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	const formType = "application/x-www-form-urlencoded"
	id, secret := app["client_id"].(string), app["secret"].(string)

	r := anon.post("/oauth/token", form("grant_type", "password", "username", "ann@example.com", "password", "correct horse battery",
		"client_id", id, "client_secret", secret), "Content-Type", formType)
	r.mustStatus(t, http.StatusOK)
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(r.body, &tok); err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token response %s: %v", r.body, err)
	}
	// The access token is a bearer credential of the API.
	anon.get("/api/users", "Authorization", "Bearer "+tok.AccessToken).mustStatus(t, http.StatusOK)
	anon.post("/oauth/token", form("grant_type", "refresh_token", "refresh_token", tok.RefreshToken,
		"client_id", id, "client_secret", secret), "Content-Type", formType).mustStatus(t, http.StatusOK)
	anon.post("/oauth/token", form("grant_type", "password", "username", "ann@example.com", "password", "wrong password",
		"client_id", id, "client_secret", secret), "Content-Type", formType).mustStatus(t, http.StatusBadRequest)
	anon.post("/oauth/token", form("grant_type", "password", "client_id", id, "client_secret", "nope"),
		"Content-Type", formType).mustStatus(t, http.StatusUnauthorized)
	anon.post("/oauth/revoke", form("token", tok.RefreshToken, "client_id", id, "client_secret", secret),
		"Content-Type", formType).mustStatus(t, http.StatusOK)

	q := url.Values{"response_type": {"code"}, "client_id": {web["client_id"].(string)}, "redirect_uri": {"https://app.example/cb"},
		"code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}, "state": {"xyz"}}
	page := anon.get("/oauth/authorize?" + q.Encode())
	page.mustStatus(t, http.StatusOK)
	q.Set("client_id", "rac_unknown")
	anon.get("/oauth/authorize?"+q.Encode()).mustStatus(t, http.StatusBadRequest)
	anon.get("/.well-known/oauth-authorization-server").mustStatus(t, http.StatusOK)
	anon.do("HEAD", "/.well-known/oauth-authorization-server", "").mustStatus(t, http.StatusOK)
	anon.do("OPTIONS", "/oauth/token", "").mustStatus(t, http.StatusOK)
	anon.get("/oauth/nothing").mustStatus(t, http.StatusNotFound)
	anon.get("/oauth/token").mustStatus(t, http.StatusMethodNotAllowed)
}

// tokenIssuer signs access tokens as the test servers' Authenticator
// verifies them (testSecret).
func tokenIssuer(t *testing.T) *token.HS256 {
	t.Helper()
	tokens, err := token.New(testSecret, token.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}
