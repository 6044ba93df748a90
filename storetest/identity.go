package storetest

import (
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// testIdentity checks resourceapi.IdentityStore, which every store of the
// service implements: lookups by id, email and API key hash return the user,
// its password hash and its effective permissions (role permissions from the
// database, plus direct grants), and unknown ones CodeNotFound.
func testIdentity(t *testing.T, open opener) {
	s := open(t)
	ids, ok := s.(resourceapi.IdentityStore)
	if !ok {
		t.Skipf("%T does not implement resourceapi.IdentityStore", s)
	}
	in := user("Ed Itor", "Ed@Example.com")
	in["password"] = hash
	in["roles"] = []string{resourceapi.RoleEditor, resourceapi.RoleUser}
	in["permissions"] = []string{"orders:write"}
	ed := mustCreate(t, s, in)
	plain := mustCreate(t, s, user("No Password", "nopass@example.com"))

	keyRec := resourceapi.Record{"user_id": ed.ID(), "name": "ci",
		"key": resourceapi.HashToken("rak_TESTKEY"), "prefix": "rak_TESTKEY"[:11]}
	if err := resourceapi.Validate(resourceapi.APIKeys, keyRec, resourceapi.ModeCreate); err != nil {
		t.Fatalf("Validate(api key) = %v", err)
	}
	keyRec["key"] = resourceapi.HashToken("rak_TESTKEY") // generated fields are the service's to set
	keyRec["prefix"] = "rak_TESTKEY"[:11]
	if _, err := s.Create(timeout(t), resourceapi.APIKeys, keyRec); err != nil {
		t.Fatalf("Create(api key) = %v", err)
	}

	want := map[resourceapi.Permission]bool{"orders:write": true}
	for _, role := range []string{resourceapi.RoleEditor, resourceapi.RoleUser} {
		for _, p := range resourceapi.DefaultRoles()[role] {
			want[p] = true
		}
	}
	check := func(what string, acct resourceapi.Account, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		mustSame(t, acct.User, ed, what)
		if acct.PasswordHash != hash {
			t.Errorf("%s: password hash = %q, want the stored one", what, acct.PasswordHash)
		}
		got := map[resourceapi.Permission]bool{}
		for _, p := range acct.Permissions {
			if got[p] {
				t.Errorf("%s: permission %s listed twice", what, p)
			}
			got[p] = true
		}
		if len(got) != len(want) {
			t.Errorf("%s: permissions = %v, want %d of them", what, acct.Permissions, len(want))
		}
		for p := range want {
			if !got[p] {
				t.Errorf("%s: permissions lack %s", what, p)
			}
		}
	}
	acct, err := ids.AccountByID(timeout(t), ed.ID())
	check("AccountByID", acct, err)
	acct, err = ids.AccountByEmail(timeout(t), "ed@EXAMPLE.com")
	check("AccountByEmail (other case)", acct, err)
	acct, err = ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_TESTKEY"))
	check("AccountByAPIKey", acct, err)

	acct, err = ids.AccountByID(timeout(t), plain.ID())
	if err != nil || acct.PasswordHash != "" {
		t.Errorf("AccountByID(user without password) = %q, %v; want no hash", acct.PasswordHash, err)
	}
	if !slices.Equal(sortedPerms(acct.Permissions), sortedPerms(resourceapi.DefaultRoles()[resourceapi.RoleUser])) {
		t.Errorf("a plain user's permissions = %v, want the user role's", acct.Permissions)
	}

	_, err = ids.AccountByID(timeout(t), ed.ID()+1000)
	mustCode(t, err, resourceapi.CodeNotFound, "AccountByID(unknown)")
	_, err = ids.AccountByEmail(timeout(t), "nobody@example.com")
	mustCode(t, err, resourceapi.CodeNotFound, "AccountByEmail(unknown)")
	_, err = ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_OTHER"))
	mustCode(t, err, resourceapi.CodeNotFound, "AccountByAPIKey(unknown)")

	// Deleting the user deletes its keys.
	mustDelete(t, s, ed.ID())
	_, err = ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_TESTKEY"))
	mustCode(t, err, resourceapi.CodeNotFound, "AccountByAPIKey after the user's delete")
}

func sortedPerms(ps []resourceapi.Permission) []resourceapi.Permission {
	out := slices.Clone(ps)
	slices.Sort(out)
	return out
}
