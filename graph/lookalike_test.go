package graph_test

import "testing"

// TestLookAlikeAccounts creates over GraphQL a user whose email is another's
// in NFD, or in other case: CONFLICT; and users whose name or email hides an
// invisible character: BAD_USER_INPUT.
func TestLookAlikeAccounts(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := mustServer(t, b.open(t, nil))
			const create = `mutation($n: String!, $e: String!) { createUser(name: $n, email: $e) { id email } }`
			var data struct{ CreateUser struct{ Email string } }
			s.mustData(s.admin, create, map[string]any{"n": "Jos\u00e9", "e": "jose\u0301@example.com"}, &data)
			if got, want := data.CreateUser.Email, "jos\u00e9@example.com"; got != want {
				t.Errorf("email = %q, want %q (NFC)", got, want)
			}
			for _, e := range []string{"jos\u00e9@example.com", "JOSE\u0301@EXAMPLE.COM"} {
				wantError(t, s.post(s.admin, create, map[string]any{"n": "Other", "e": e}), "CONFLICT", "")
			}
			for _, v := range []map[string]any{
				{"n": "Admin\u200bistrator", "e": "m@example.com"},
				{"n": "Mallory", "e": "admin@localhost\u200b"},
				{"n": "Mallory", "e": "admin\u2060@localhost"},
			} {
				wantError(t, s.post(s.admin, create, v), "BAD_USER_INPUT", "")
			}
		})
	}
}
