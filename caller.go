package resourceapi

import (
	"context"
	"slices"
)

// Action is what a permission allows on a resource.
type Action string

// Actions. GET needs read, POST/PUT/PATCH write, DELETE delete.
const (
	ActionRead   Action = "read"
	ActionWrite  Action = "write"
	ActionDelete Action = "delete"
)

// Permission is "<resource>:<action>", such as "articles:write".
type Permission string

// PermissionFor returns the permission for action on the named resource.
func PermissionFor(resource string, action Action) Permission {
	return Permission(resource + ":" + string(action))
}

// Roles.
const (
	RoleUser   = "user"
	RoleEditor = "editor"
	RoleAdmin  = "admin"
)

// Resources names every resource that permissions speak of.
var Resources = []string{"users", "posts", "products", "reviews", "orders", "articles", "comments"}

var userPermissions = []Permission{
	"users:read", "posts:read", "posts:write", "articles:read", "comments:read",
	"comments:write", "products:read", "reviews:read", "reviews:write", "orders:read",
}

var rolePermissions = map[string][]Permission{
	RoleUser: userPermissions,
	RoleEditor: append(slices.Clone(userPermissions),
		"articles:write", "articles:delete", "comments:delete", "posts:delete", "products:write"),
	RoleAdmin: allPermissions(),
}

func allPermissions() []Permission {
	var all []Permission
	for _, r := range Resources {
		for _, a := range []Action{ActionRead, ActionWrite, ActionDelete} {
			all = append(all, PermissionFor(r, a))
		}
	}
	return all
}

// RoleNames returns the defined roles, sorted.
func RoleNames() []string { return []string{RoleAdmin, RoleEditor, RoleUser} }

// RolePermissions returns the permissions a role grants.
func RolePermissions(role string) []Permission { return slices.Clone(rolePermissions[role]) }

// Caller is who is making a request: resolved once per request by the
// transport's authentication and asked for permissions by handlers.
type Caller struct {
	// UserID is the user the caller acts as; 0 for a caller that is not a
	// user.
	UserID      int64
	Roles       []string
	Permissions map[Permission]bool
}

// Can reports whether the caller holds permission p.
func (c *Caller) Can(p Permission) bool { return c != nil && c.Permissions[p] }

// IsAdmin reports whether the caller has the admin role.
func (c *Caller) IsAdmin() bool { return c != nil && slices.Contains(c.Roles, RoleAdmin) }

// NewCaller returns a caller acting as userID with the permissions of roles
// plus those granted directly.
func NewCaller(userID int64, roles []string, granted ...Permission) *Caller {
	c := &Caller{UserID: userID, Roles: slices.Clone(roles), Permissions: make(map[Permission]bool)}
	for _, r := range roles {
		for _, p := range rolePermissions[r] {
			c.Permissions[p] = true
		}
	}
	for _, p := range granted {
		c.Permissions[p] = true
	}
	return c
}

type callerKey struct{}

// WithCaller returns a context that carries c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller carried by ctx, or nil when there is none.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// PasswordHasher hashes and verifies secrets (passwords). Hash returns an
// encoded hash that carries its own parameters; Verify compares in constant
// time.
type PasswordHasher interface {
	Hash(secret string) (string, error)
	Verify(encoded, secret string) (bool, error)
}

// HashSecrets replaces every non-null secret field of rec with its hash, so
// that no store ever sees a plain secret.
func HashSecrets(res *Resource, rec Record, h PasswordHasher) error {
	for _, f := range res.Fields {
		v, ok := rec[f.Name].(string)
		if !f.Secret || !ok {
			continue
		}
		hash, err := h.Hash(v)
		if err != nil {
			return err
		}
		rec[f.Name] = hash
	}
	return nil
}
