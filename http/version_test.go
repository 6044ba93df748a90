package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

func TestVersions(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		tests := []struct {
			path, accept string
			version      string
			status       int
		}{
			{"/api/users", "", "1", 200},
			{"/api/users", "application/json", "1", 200},
			{"/api/v1/users", "", "1", 200},
			{"/api/v2/users", "", "2", 200},
			{"/api/users", "application/vnd.example.v2+json", "2", 200},
			{"/api/users", "application/vnd.example.v1+json", "1", 200},
			{"/api/users", "Application/VND.Example.V2+JSON", "2", 200},
			{"/api/users", "application/vnd.example+json", "1", 200},
			{"/api/users", "application/vnd.example.v1+json;q=0.5, application/vnd.example.v2+json", "2", 200},
			{"/api/users", "application/vnd.example.v2+json;q=0.5, application/vnd.example.v1+json", "1", 200},
			{"/api/users", "application/vnd.example.v2+json;q=0, application/json", "1", 200},
			{"/api/users", "application/vnd.example.v3+json, application/vnd.example.v2+json;q=0.1", "2", 200},
			{"/api/users", "application/vnd.other.v2+json", "1", 200}, // not our vendor
			{"/api/users", "application/vnd.example.v3+json, */*;q=0.1", "1", 200},
			// The path wins over the header, even one that would be 406.
			{"/api/v1/users", "application/vnd.example.v2+json", "1", 200},
			{"/api/v2/users", "application/vnd.example.v1+json", "2", 200},
			{"/api/v2/users", "application/vnd.example.v9+json", "2", 200},
			{fmt.Sprintf("/api/v2/users/%d", id), "application/vnd.example.v9+json", "2", 200},
			// Unknown versions: 404 in the path, 406 in the header.
			{"/api/v3/users", "", "1", 404},
			{"/api/v0/users", "", "1", 404},
			{"/api/v12345678901234567890/users", "", "1", 404},
			{"/api/users", "application/vnd.example.v3+json", "1", 406},
			{"/api/users", "application/vnd.example.v0+json", "1", 406},
			{"/api/users", "application/vnd.example.vx+json", "1", 406},
			{"/api/users", "application/vnd.example.v02+json", "1", 406},
			{fmt.Sprintf("/api/users/%d", id), "application/vnd.example.v3+json", "1", 406},
		}
		for _, tt := range tests {
			r := c.get(tt.path, "Accept", tt.accept)
			if r.StatusCode != tt.status || r.Header.Get("API-Version") != tt.version {
				t.Errorf("GET %s Accept %q: status %d, API-Version %q; want %d, %q; body %s",
					tt.path, tt.accept, r.StatusCode, r.Header.Get("API-Version"), tt.status, tt.version, r.body)
			}
			switch tt.status {
			case 404:
				r.mustError(t, 404, resourceapi.CodeNotFound)
			case 406:
				r.mustError(t, 406, resourceapi.CodeNotAcceptable)
			}
		}
		// Unversioned paths vary by Accept; versioned ones do not.
		if !hasVary(c.get("/api/users"), "Accept") || hasVary(c.get("/api/v2/users"), "Accept") {
			t.Error("Vary: Accept should be on /api/users and not on /api/v2/users")
		}
		// Only /api has versions.
		if v := c.get("/healthz", "Accept", "application/vnd.example.v9+json"); v.StatusCode != 200 || v.Header.Get("API-Version") != "" {
			t.Errorf("/healthz: status %d, API-Version %q", v.StatusCode, v.Header.Get("API-Version"))
		}
		if v := c.get("/apiusers"); v.Header.Get("API-Version") != "" {
			t.Errorf("/apiusers: API-Version %q", v.Header.Get("API-Version"))
		}
		// Every /api response has API-Version, errors and OPTIONS included.
		for _, r := range []*reply{c.do("OPTIONS", "/api/users", ""), c.do("DELETE", "/api/users", ""), c.get("/api/nothing"), c.post("/api/users", "{")} {
			if r.Header.Get("API-Version") != "1" {
				t.Errorf("%s %s: API-Version %q", r.Request.Method, r.Request.URL.Path, r.Header.Get("API-Version"))
			}
		}
	})
}

func TestVendorIsConfigurable(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		if v := c.get("/api/users", "Accept", "application/vnd.acme.v2+json").Header.Get("API-Version"); v != "2" {
			t.Errorf("vendor acme: API-Version %q, want 2", v)
		}
		if v := c.get("/api/users", "Accept", "application/vnd.example.v2+json").Header.Get("API-Version"); v != "1" {
			t.Errorf("vendor example on an acme server: API-Version %q, want 1", v)
		}
	}, func(cfg *rhttp.Config) { cfg.Vendor = "Acme" })
}

// problem is an RFC 9457 problem details body with our extension members.
type problem struct {
	Type      string                   `json:"type"`
	Title     string                   `json:"title"`
	Status    int                      `json:"status"`
	Detail    string                   `json:"detail"`
	Code      string                   `json:"code"`
	RequestID string                   `json:"request_id"`
	Errors    []resourceapi.FieldError `json:"errors"`
}

func TestProblemDetails(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		c.mustUser("Ann", "ann@example.com")
		tests := []struct {
			method, path, body, accept string
			status                     int
			code                       resourceapi.Code
			errors                     []string
		}{
			{"GET", "/api/v2/users/999", "", "", 404, resourceapi.CodeNotFound, nil},
			{"GET", "/api/users/999", "", "application/vnd.example.v2+json", 404, resourceapi.CodeNotFound, nil},
			{"POST", "/api/v2/users", `{"name":"","email":"x"}`, "", 400, resourceapi.CodeValidation, []string{"name", "email"}},
			{"POST", "/api/v2/users", `{`, "", 400, resourceapi.CodeBadRequest, nil},
			{"POST", "/api/v2/users", `{"name":"A","email":"ANN@example.com"}`, "", 409, resourceapi.CodeConflict, []string{"email"}},
			{"GET", "/api/v2/users?limit=1000", "", "", 400, resourceapi.CodeValidation, []string{"limit"}},
			{"DELETE", "/api/v2/users", "", "", 405, resourceapi.CodeMethodNotAllowed, nil},
			{"GET", "/api/v2/nothing", "", "", 404, resourceapi.CodeNotFound, nil},
		}
		for _, tt := range tests {
			r := c.do(tt.method, tt.path, tt.body, "Accept", tt.accept)
			r.mustStatus(t, tt.status)
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("%s %s: Content-Type %q", tt.method, tt.path, ct)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &raw); err != nil {
				t.Fatalf("%s %s: %v", tt.method, tt.path, err)
			}
			if got := objectKeys(t, r.body); !slices.Equal(got, []string{"type", "title", "status", "detail", "code", "request_id", "errors"}) {
				t.Errorf("%s %s: members %v", tt.method, tt.path, got)
			}
			var p problem
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Type != "about:blank" || p.Title != http.StatusText(tt.status) || p.Status != tt.status || p.Detail == "" ||
				p.Code != string(tt.code) || p.RequestID != r.Header.Get("X-Request-ID") || p.Errors == nil {
				t.Errorf("%s %s: problem = %+v", tt.method, tt.path, p)
			}
			var fields []string
			for _, e := range p.Errors {
				fields = append(fields, e.Field)
			}
			if !slices.Equal(fields, tt.errors) {
				t.Errorf("%s %s: errors for %v, want %v", tt.method, tt.path, fields, tt.errors)
			}
		}
		if r := c.get("/api/v2/users"); r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("v2 success Content-Type = %q", r.Header.Get("Content-Type"))
		}
	})
}

func TestAcceptVersion(t *testing.T) {
	const prefix = "application/vnd.example.v"
	tests := []struct {
		accept []string
		want   int
		fails  bool
	}{
		{nil, 1, false},
		{[]string{"text/html"}, 1, false},
		{[]string{"application/vnd.example.v2+json"}, 2, false},
		{[]string{"text/html", "application/vnd.example.v2+json; charset=utf-8"}, 2, false},
		{[]string{"application/vnd.example.v2+json;q=0"}, 1, false},
		{[]string{"application/vnd.example.v2+json;q=x"}, 1, false},
		{[]string{"application/vnd.example.v3+json"}, 0, true},
		{[]string{"application/vnd.example.v3+json, application/*"}, 1, false},
		{[]string{"application/vnd.example.v-1+json"}, 0, true},
		{[]string{"application/vnd.example.v+json"}, 0, true},
	}
	for _, tt := range tests {
		got, err := rhttp.AcceptVersion(tt.accept, prefix)
		if (err != nil) != tt.fails || (!tt.fails && got != tt.want) {
			t.Errorf("AcceptVersion(%q) = %d, %v; want %d, fails %v", tt.accept, got, err, tt.want, tt.fails)
		}
		if err != nil && resourceapi.ErrorCode(err) != resourceapi.CodeNotAcceptable {
			t.Errorf("AcceptVersion(%q): code %s", tt.accept, resourceapi.ErrorCode(err))
		}
	}
}
