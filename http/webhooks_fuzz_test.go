package http_test

import (
	"testing"
)

// FuzzWebhookBodies sends arbitrary bodies to the webhook endpoints that
// read one (create, patch, replay of a range), as an admin: every answer is
// a 2xx or a clear 4xx, never a 5xx, and every exchange follows the OpenAPI
// document's responses.
func FuzzWebhookBodies(f *testing.F) {
	for _, s := range []string{
		`{"url": "https://hooks.example.com/in", "types": ["users.*"]}`,
		`{"url": "https://hooks.example.com/in", "types": ["*"], "enabled": false}`,
		`{"url": "http://127.0.0.1/", "types": ["users.created"]}`,
		`{"url": "https://[::1]:8443/x", "types": ["orders.*"]}`,
		`{"url": "https://u:p@example.com/", "types": ["x"]}`,
		`{"url": 1, "types": "users.*"}`,
		`{"types": ["users.*", "users.*", "posts.deleted"]}`,
		`{"enabled": null}`,
		`{"from": "2026-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z"}`,
		`{"from": "yesterday"}`,
		`{}`, `[]`, `null`, `"x"`, `{"url": "` + "\xff" + `"}`, `{} {}`, `{"url": "https://a.example/` + string(make([]byte, 3000)) + `"}`,
	} {
		f.Add(s)
	}
	c := mustServer(f, mustSQLite(f, newClock().Now), withWebhooks).lenient()
	hook := c.post("/api/webhooks", `{"url": "https://hooks.example.com/in", "types": ["*"]}`)
	hook.mustStatus(f, 201)
	f.Fuzz(func(t *testing.T, body string) {
		c := *c
		c.tb = t
		for _, r := range []*reply{
			c.post("/api/webhooks", body),
			c.do("PATCH", "/api/webhooks/1", body),
			c.post("/api/webhooks/1/replay", body),
		} {
			if r.StatusCode >= 500 || r.StatusCode < 200 {
				t.Fatalf("%s %s with %q: %d %s", r.Request.Method, r.Request.URL.Path, body, r.StatusCode, r.body)
			}
		}
	})
}
