package main_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOAuthServed: the server answers the OAuth endpoints, a client created
// with the command line gets tokens, and the generated signing secret is
// kept in the database, so a token issued before a restart is accepted
// after it.
func TestOAuthServed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	dbEnv := "RESOURCEAPI_DATABASE_URL=" + filepath.Join(t.TempDir(), "oauth.db")
	issuer := "RESOURCEAPI_OAUTH_ISSUER=https://auth.example.com/"
	srv := mustStart(t, dbEnv, issuer)

	cmd := exec.Command(bin, "client", "create", "--name", "Reports", "--grant", "client_credentials", "--grant", "password")
	cmd.Env = []string{dbEnv}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client create: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`(?m)^client_id: (\S+)$`).FindStringSubmatch(string(out))
	secret := regexp.MustCompile(`(?m)^client_secret: (\S+)$`).FindStringSubmatch(string(out))
	if id == nil || secret == nil {
		t.Fatalf("client create printed %q", out)
	}

	token := func(form url.Values) (string, int) {
		t.Helper()
		form.Set("client_id", id[1])
		form.Set("client_secret", secret[1])
		resp, err := http.PostForm(srv.URL+"/oauth/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b struct {
			AccessToken string `json:"access_token"`
			Error       string `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("token response %d: %v, Cache-Control %q", resp.StatusCode, err, resp.Header.Get("Cache-Control"))
		}
		return b.AccessToken, resp.StatusCode
	}
	me := func(p *process, tok string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", p.URL+"/api/users/1", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The admin (user 1) signs in with the password grant.
	tok, status := token(url.Values{"grant_type": {"password"}, "username": {"admin@localhost"}, "password": {"correct horse battery"}})
	if status != http.StatusOK || me(srv, tok) != http.StatusOK {
		t.Fatalf("password grant: %d, then GET /api/users/1 with the token", status)
	}
	if _, status := token(url.Values{"grant_type": {"client_credentials"}}); status != http.StatusOK {
		t.Fatalf("client credentials: %d", status)
	}

	resp, err := http.Get(srv.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if !strings.HasPrefix(meta.TokenEndpoint, "https://auth.example.com/oauth/token") {
		t.Errorf("metadata token_endpoint = %q, want it under RESOURCEAPI_OAUTH_ISSUER", meta.TokenEndpoint)
	}

	srv.kill()
	again := mustStart(t, dbEnv)
	if got := me(again, tok); got != http.StatusOK {
		t.Fatalf("a token issued before the restart: GET /api/users/1 = %d, want 200", got)
	}
}
