package resourceapi_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestDefaultRoles checks the roles the declarations' grants make against
// the permissions the roles have granted since the first release (what
// migration 00003 seeds), as sets.
func TestDefaultRoles(t *testing.T) {
	user := []resourceapi.Permission{
		"users:read", "posts:read", "posts:write", "articles:read", "comments:read",
		"comments:write", "products:read", "reviews:read", "reviews:write", "orders:read",
	}
	editor := append(slices.Clone(user),
		"articles:write", "articles:delete", "comments:delete", "posts:delete", "products:write")
	want := map[string][]resourceapi.Permission{
		resourceapi.RoleUser: user, resourceapi.RoleEditor: editor, resourceapi.RoleAdmin: {"*:*"},
	}
	got := resourceapi.DefaultRoles()
	if g, w := slices.Sorted(maps.Keys(got)), resourceapi.RoleNames(); !slices.Equal(g, w) {
		t.Fatalf("roles = %v, want %v", g, w)
	}
	for role, perms := range want {
		g, w := slices.Sorted(slices.Values(got[role])), slices.Sorted(slices.Values(perms))
		if !slices.Equal(g, w) {
			t.Errorf("DefaultRoles()[%s] = %v, want %v", role, g, w)
		}
	}
}

// TestDefaultGrants checks that an editor has every default grant of a user
// besides its own, and that a resource without grants grants nothing.
func TestDefaultGrants(t *testing.T) {
	res := resourceapi.NewResource(resourceapi.Resource{
		Name: "gadgets",
		Fields: []resourceapi.Field{
			{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true},
			{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true},
			{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true},
		},
		Access: resourceapi.Access{Grants: map[string][]resourceapi.Action{
			resourceapi.RoleUser:   {resourceapi.ActionRead},
			resourceapi.RoleEditor: {resourceapi.ActionDelete},
		}},
	})
	got := res.DefaultGrants()
	want := map[string][]resourceapi.Permission{
		resourceapi.RoleUser:   {"gadgets:read"},
		resourceapi.RoleEditor: {"gadgets:read", "gadgets:delete"},
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("DefaultGrants() = %v, want %v", got, want)
	}
	if got := resourceapi.APIKeys.DefaultGrants(); len(got) != 0 {
		t.Errorf("APIKeys.DefaultGrants() = %v, want none", got)
	}
}

// TestGrantsOfUnknownRole checks that a declaration that grants to admin (or
// to a role that does not exist) is refused.
func TestGrantsOfUnknownRole(t *testing.T) {
	for _, role := range []string{resourceapi.RoleAdmin, "owner"} {
		t.Run(role, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewResource with grants of %s did not panic", role)
				}
			}()
			resourceapi.NewResource(resourceapi.Resource{
				Name: "gadgets",
				Fields: []resourceapi.Field{
					{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true},
					{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true},
					{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true},
				},
				Access: resourceapi.Access{Grants: map[string][]resourceapi.Action{role: {resourceapi.ActionRead}}},
			})
		})
	}
}
