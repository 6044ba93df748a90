package http_test

import (
	"encoding/json"
	"strings"
	"testing"

	rhttp "github.com/resourceapi/resourceapi/http"
)

// TestFrontPage checks GET /: a page for a browser naming the service and
// its version and linking to the docs, GraphQL, the OAuth metadata and the
// probes, loading nothing (its CSP allows no script and nothing from
// elsewhere); the same links as JSON for an API client; the favicon; and
// that / alone is the front page (anything under it without a route is
// still 404).
func TestFrontPage(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now), func(cfg *rhttp.Config) { cfg.Version = "v9.8.7-test" })
	r := c.anonymous().get("/", "Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / as a browser = %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	page := string(r.body)
	for _, want := range []string{"resourceapi", "v9.8.7-test", `href="/docs"`, `href="/healthz"`, `href="/readyz"`, `href="/api/openapi.json"`, `href="/favicon.ico"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the front page lacks %s:\n%s", want, page)
		}
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("front page CSP = %q", csp)
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, "<script") {
		t.Errorf("the front page refers outside the server or runs a script:\n%s", page)
	}

	j := c.anonymous().get("/")
	var doc struct {
		Name, Version string
		Links         []struct{ Rel, Href string }
	}
	if err := json.Unmarshal(j.body, &doc); err != nil || j.StatusCode != 200 {
		t.Fatalf("GET / as a client = %d %s (%v)", j.StatusCode, j.body, err)
	}
	if doc.Name != "resourceapi" || doc.Version != "v9.8.7-test" || len(doc.Links) < 5 {
		t.Errorf("GET / JSON = %+v", doc)
	}
	for _, l := range doc.Links {
		if !strings.Contains(page, `href="`+l.Href+`"`) {
			t.Errorf("the JSON link %s is not on the page", l.Href)
		}
	}

	if f := c.anonymous().get("/favicon.ico"); f.StatusCode != 200 || f.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("GET /favicon.ico = %d %s", f.StatusCode, f.Header.Get("Content-Type"))
	}
	if n := c.anonymous().lenient().get("/elsewhere"); n.StatusCode != 404 {
		t.Errorf("GET /elsewhere = %d, want 404", n.StatusCode)
	}
}

// TestMe checks GET /api/users/me: the caller's own user, whoever they are,
// under every prefix; 401 without a credential.
func TestMe(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now))
	key := c.mustAccount("Ann", "ann@example.com", "user")
	for _, path := range []string{"/api/users/me", "/api/v1/users/me", "/api/v2/users/me"} {
		r := c.as(key).get(path)
		var u struct {
			ID    int64
			Email string
		}
		if err := json.Unmarshal(r.body, &u); err != nil || r.StatusCode != 200 || u.Email != "ann@example.com" {
			t.Errorf("GET %s as Ann = %d %s", path, r.StatusCode, r.body)
		}
	}
	if r := c.get("/api/users/me?fields=email"); r.StatusCode != 200 || !strings.Contains(string(r.body), "admin@test.example") {
		t.Errorf("GET /api/users/me as the admin = %d %s", r.StatusCode, r.body)
	}
	if r := c.anonymous().get("/api/users/me"); r.StatusCode != 401 {
		t.Errorf("GET /api/users/me without a credential = %d, want 401", r.StatusCode)
	}
}
