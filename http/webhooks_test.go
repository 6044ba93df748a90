package http_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/webhook"
)

// withWebhooks gives the rule layer the production URL check.
func withWebhooks(cfg *rhttp.Config) {
	cfg.Service.SetWebhookPolicy(resourceapi.WebhookPolicy{CheckURL: func(u string) error { return webhook.CheckURL(u, webhook.Options{}) }})
}

// TestWebhooksREST goes over /api/webhooks: admins register, list, read,
// change, rotate and delete endpoints; the secret is shown on create and
// rotation only; bad input is a 4xx; anyone else is refused.
func TestWebhooksREST(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		r := c.post("/api/webhooks", `{"url": "https://hooks.example.com/in", "types": ["users.*", "orders.created", "users.*"]}`)
		r.mustStatus(t, 201)
		hook := r.object(t)
		id := idOf(t, hook)
		secret, _ := hook["secret"].(string)
		if !strings.HasPrefix(secret, "whsec_") || hook["enabled"] != true || r.Header.Get("Location") != "/api/webhooks/"+strconv.FormatInt(id, 10) {
			t.Fatalf("create: %v, Location %q", hook, r.Header.Get("Location"))
		}
		if types := hook["types"].([]any); len(types) != 2 {
			t.Fatalf("types %v, want the two patterns without the repeat", types)
		}
		path := "/api/webhooks/" + strconv.FormatInt(id, 10)
		got := c.get(path)
		got.mustStatus(t, 200)
		if _, shown := got.object(t)["secret"]; shown || strings.Contains(string(got.body), secret) {
			t.Fatalf("GET shows the secret: %s", got.body)
		}
		list := c.get("/api/webhooks")
		list.mustStatus(t, 200)
		if strings.Contains(string(list.body), secret) {
			t.Fatal("the list shows the secret")
		}
		p := c.do("PATCH", path, `{"enabled": false, "types": ["*"]}`)
		p.mustStatus(t, 200)
		if o := p.object(t); o["enabled"] != false || o["types"].([]any)[0] != "*" {
			t.Fatalf("patch: %v", o)
		}
		rot := c.post(path+"/rotate", "")
		rot.mustStatus(t, 200)
		if o := rot.object(t); o["secret"] == secret || !strings.HasPrefix(o["secret"].(string), "whsec_") || o["previous_secret_expires_at"] == nil {
			t.Fatalf("rotate: %v", o)
		}
		d := c.get(path + "/deliveries?limit=10")
		d.mustStatus(t, 200)
		if data := d.object(t)["data"].([]any); len(data) != 0 {
			t.Fatalf("deliveries of a new endpoint: %v", data)
		}
		c.post(path+"/replay", `{"from": "2026-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z"}`).mustStatus(t, 202)
		c.post(path+"/deliveries/12345/replay", "").mustError(t, 404, resourceapi.CodeNotFound)

		// Bad input.
		for _, body := range []string{
			`{"url": "http://hooks.example.com/in", "types": ["*"]}`,
			`{"url": "https://127.0.0.1/in", "types": ["*"]}`,
			`{"url": "https://169.254.169.254/latest", "types": ["*"]}`,
			`{"url": "https://hooks.example.com/in", "types": ["nothing.*"]}`,
			`{"url": "https://hooks.example.com/in", "types": []}`,
			`{"url": "https://hooks.example.com/in"}`,
		} {
			c.post("/api/webhooks", body).mustError(t, 400, resourceapi.CodeValidation)
		}
		c.lenient().post("/api/webhooks", `{"url": "https://hooks.example.com/in", "types": ["*"], "secret": "mine"}`).mustError(t, 400, resourceapi.CodeBadRequest)
		c.lenient().post("/api/webhooks", `[1]`).mustError(t, 400, resourceapi.CodeBadRequest)
		c.lenient().get(path+"/deliveries?limit=0").mustError(t, 400, resourceapi.CodeValidation)
		c.lenient().post(path+"/replay", `{"from": "2027-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}`).mustError(t, 400, resourceapi.CodeValidation)
		c.get("/api/webhooks/999999").mustError(t, 404, resourceapi.CodeNotFound)
		c.lenient().get("/api/webhooks/abc").mustError(t, 404, resourceapi.CodeNotFound)

		// Admins only.
		user := c.as(c.mustAccount("Uma", "uma@example.com", resourceapi.RoleUser))
		user.get("/api/webhooks").mustError(t, 403, resourceapi.CodeForbidden)
		user.post("/api/webhooks", `{"url": "https://hooks.example.com/in", "types": ["*"]}`).mustError(t, 403, resourceapi.CodeForbidden)
		user.post(path+"/rotate", "").mustError(t, 403, resourceapi.CodeForbidden)
		c.anonymous().get("/api/webhooks").mustError(t, 401, resourceapi.CodeUnauthenticated)

		c.do("DELETE", path, "").mustStatus(t, 204)
		c.get(path).mustError(t, 404, resourceapi.CodeNotFound)
	}, withWebhooks)
}
