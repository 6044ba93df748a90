package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestServiceUsersHidden registers an OAuth client (whose service user has
// the client id in its email): users and user(id) leave the service user
// out for anyone but an admin, adminData (admins only) counts it as the
// admin's users list does, and a non-admin's adminData stays FORBIDDEN.
func TestServiceUsersHidden(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := mustServer(t, b.open(t, nil))
			plain := s.mustAccount("Plain", "plain@example.com", resourceapi.RoleUser)
			client, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.OAuthClients, 0,
				resourceapi.Record{"name": "Reporting", "grants": []string{resourceapi.GrantClientCredentials}})
			if err != nil {
				t.Fatal(err)
			}
			svc := client["user_id"].(int64)
			var list struct{ Users []struct{ ID, Email string } }
			var one struct{ User *struct{ ID string } }
			var admin struct{ AdminData struct{ UserCount int } }

			s.mustData(plain, `{ users { id email } }`, nil, &list)
			for _, u := range list.Users {
				if strings.HasSuffix(u.Email, "@clients.invalid") {
					t.Errorf("plain user: users lists the service user %s", u.Email)
				}
			}
			if len(list.Users) != 2 {
				t.Errorf("plain user: %d users, want 2 (the admin and themself)", len(list.Users))
			}
			s.mustData(plain, `query($id: ID!) { user(id: $id) { id } }`, map[string]any{"id": itoa(svc)}, &one)
			if one.User != nil {
				t.Errorf("plain user: user(%d) = %+v, want null", svc, one.User)
			}
			wantError(t, s.post(plain, `{ adminData { userCount } }`, nil), "FORBIDDEN", "Admin access required")

			s.mustData(s.admin, `{ users { id email } }`, nil, &list)
			if len(list.Users) != 3 {
				t.Errorf("admin: %d users, want 3 (with the service user)", len(list.Users))
			}
			s.mustData(s.admin, `query($id: ID!) { user(id: $id) { id } }`, map[string]any{"id": itoa(svc)}, &one)
			if one.User == nil {
				t.Errorf("admin: user(%d) = null, want the service user", svc)
			}
			s.mustData(s.admin, `{ adminData { userCount } }`, nil, &admin)
			if admin.AdminData.UserCount != len(list.Users) {
				t.Errorf("admin: userCount %d, want %d, the users the admin lists", admin.AdminData.UserCount, len(list.Users))
			}
		})
	}
}
