package http_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestServiceUsersHidden registers an OAuth client, which creates the user
// it acts as with client_credentials (its email carries the client id):
// that service user is left out of every list and total for anyone but an
// admin, reading it by id is 404 for them, and admins see it as any user.
// The service user itself still reads its own record. Every user's
// /api/users used to list the clients' service users.
func TestServiceUsersHidden(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		plain := c.as(c.mustAccount("Plain", "plain@example.com", resourceapi.RoleUser))
		r := c.post("/api/oauth-clients", `{"name":"Reporting","grants":["client_credentials"]}`)
		r.mustStatus(t, http.StatusCreated)
		svc := idOf(t, map[string]any{"id": r.object(t)["user_id"]})
		svcPath := "/api/users/" + itoa(svc)

		emails := func(cl *client, query string) ([]string, int) {
			t.Helper()
			recs, pag := cl.get("/api/users" + query).list(t)
			var out []string
			for _, rec := range recs {
				out = append(out, rec["email"].(string))
			}
			total, _ := pag["total"].(json.Number).Int64()
			return out, int(total)
		}
		hasService := func(list []string) bool {
			for _, e := range list {
				if strings.HasSuffix(e, "@clients.invalid") {
					return true
				}
			}
			return false
		}
		for _, query := range []string{"", "?status=all", "?q=clients.invalid", "?q=Reporting", "?sort=email&order=desc", "?role=user", "?limit=1&page=2"} {
			list, total := emails(plain, query)
			if hasService(list) {
				t.Errorf("plain user: /api/users%s lists a service user: %v", query, list)
			}
			if query == "" && (total != 2 || len(list) != 2) {
				t.Errorf("plain user: /api/users: %d users, total %d; want the admin and themself, 2", len(list), total)
			}
			adminList, adminTotal := emails(c, query)
			if query == "" && (!hasService(adminList) || adminTotal != 3) {
				t.Errorf("admin: /api/users = %v, total %d; want the service user too, 3", adminList, adminTotal)
			}
		}
		plain.get(svcPath).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		plain.get(svcPath+"?fields=email").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.get(svcPath).mustStatus(t, http.StatusOK)
		if keys := objectKeys(t, c.get(svcPath).body); strings.Contains(strings.Join(keys, ","), "service") {
			t.Errorf("a user shows %v: the internal field leaks", keys)
		}
		c.get("/api/users?fields=service").mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		c.do("PATCH", svcPath, `{"service":false}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)

		// The service user reads its own record, not the others'.
		k := c.post("/api/api-keys", `{"user_id":`+itoa(svc)+`}`)
		k.mustStatus(t, http.StatusCreated)
		self := c.as(k.object(t)["key"].(string))
		self.get(svcPath).mustStatus(t, http.StatusOK)

		// A second client's service user is hidden from the first's.
		r = c.post("/api/oauth-clients", `{"name":"Other","grants":["client_credentials"]}`)
		r.mustStatus(t, http.StatusCreated)
		other := idOf(t, map[string]any{"id": r.object(t)["user_id"]})
		self.get("/api/users/"+itoa(other)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	})
}

// TestServiceUsersHiddenFromWriters gives a non-admin users:write and
// users:delete: a service user is still 404 to them, for PATCH and DELETE
// as for GET.
func TestServiceUsersHiddenFromWriters(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		writer := c.as(c.mustAccount("Writer", "writer@example.com", resourceapi.RoleUser))
		c.do("PATCH", "/api/users/2", `{"permissions":["users:write","users:delete"]}`).mustStatus(t, http.StatusOK)
		r := c.post("/api/oauth-clients", `{"name":"Reporting","grants":["client_credentials"]}`)
		r.mustStatus(t, http.StatusCreated)
		svcPath := "/api/users/" + itoa(idOf(t, map[string]any{"id": r.object(t)["user_id"]}))
		writer.do("PATCH", svcPath, `{"name":"Renamed"}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		writer.do("DELETE", svcPath, "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.get(svcPath).mustStatus(t, http.StatusOK)
	})
}
