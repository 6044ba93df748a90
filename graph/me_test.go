package graph_test

import (
	"testing"

	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
)

// TestMe checks the query me: the caller's own user, whoever they are;
// UNAUTHENTICATED without a credential.
func TestMe(t *testing.T) {
	s := mustServer(t, mustSQLite(t, sqlitetest.Migrated(t), nil))
	key := s.mustAccount("Ann", "ann@example.com", "user")
	var got struct {
		Me struct{ Email, Name string }
	}
	s.mustData(key, `{ me { email name } }`, nil, &got)
	if got.Me.Email != "ann@example.com" || got.Me.Name != "Ann" {
		t.Errorf("me = %+v, want Ann", got.Me)
	}
	if r := s.post("", `{ me { email } }`, nil); r.code() != "UNAUTHENTICATED" {
		t.Errorf("me without a credential: code %q, want UNAUTHENTICATED", r.code())
	}
}
