package graph_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestInvalidUTF8Body sends a request body with bytes that are not UTF-8
// inside the document's string literal and inside a variable: both are
// refused with 400 BAD_REQUEST, and no user is created. encoding/json used
// to read them as U+FFFD, so createUser stored a name the client never sent.
func TestInvalidUTF8Body(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			s := mustServer(t, b.open(t, nil))
			for what, raw := range map[string]string{
				"literal":  "{\"query\":\"mutation { createUser(name: \\\"a\xffb\\\", email: \\\"lit@example.com\\\") { id } }\"}",
				"variable": "{\"query\":\"mutation($n: String!) { createUser(name: $n, email: \\\"var@example.com\\\") { id } }\",\"variables\":{\"n\":\"a\xffb\"}}",
			} {
				r := s.send(http.MethodPost, "/graphql", s.admin, strings.NewReader(raw), "Content-Type", "application/json")
				if r.status != http.StatusBadRequest || r.code() != "BAD_REQUEST" {
					t.Errorf("%s: status %d, code %q, want 400 BAD_REQUEST; body %s", what, r.status, r.code(), r.raw)
				}
			}
			var data struct{ Users []struct{ Email string } }
			s.mustData(s.admin, `{ users { email } }`, nil, &data)
			if len(data.Users) != 1 {
				t.Errorf("users = %+v, want only the admin", data.Users)
			}
		})
	}
}
