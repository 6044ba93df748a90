package resourceapi

import (
	"context"
	"slices"
	"strings"
)

// Action is what a permission allows on a resource.
type Action string

// Actions. GET needs read, POST/PUT/PATCH write, DELETE delete.
const (
	ActionRead   Action = "read"
	ActionWrite  Action = "write"
	ActionDelete Action = "delete"
)

// Actions lists every action, in the order permissions are shown.
var Actions = []Action{ActionRead, ActionWrite, ActionDelete}

// Permission is "<resource>:<action>", such as "articles:write".
type Permission string

// PermissionFor returns the permission for action on the named resource.
func PermissionFor(resource string, action Action) Permission {
	return Permission(resource + ":" + string(action))
}

// MetricsRead is the permission to read the server's metrics (GET /metrics
// on the main listener), which names no resource.
const MetricsRead Permission = "metrics:read"

// operational are the permissions that name no resource.
var operational = []Permission{MetricsRead}

// Valid reports whether p names a declared resource and an action, either of
// which may be the wildcard "*" ("*:read" reads everything, "*:*" is
// everything), or is one of the permissions that name no resource
// (MetricsRead).
func (p Permission) Valid() bool {
	if slices.Contains(operational, p) {
		return true
	}
	res, act, ok := strings.Cut(string(p), ":")
	return ok && (res == "*" || slices.Contains(ResourceNames(), res)) &&
		(act == "*" || slices.Contains(Actions, Action(act)))
}

// Roles. What a role grants by default is declared with each resource
// (Access.Grants); an editor has every grant of a user, and an admin every
// permission.
const (
	RoleUser   = "user"
	RoleEditor = "editor"
	RoleAdmin  = "admin"
)

// roleIncludes lists, for each role, the roles whose default grants it has
// too.
var roleIncludes = map[string][]string{RoleEditor: {RoleUser}}

// RoleNames returns the defined roles, sorted.
func RoleNames() []string { return []string{RoleAdmin, RoleEditor, RoleUser} }

// DefaultRoles returns the permissions each role grants when the database is
// created: admin every permission ("*:*"), user and editor what the declared
// resources grant them (Resource.DefaultGrants), in declaration order. The
// database keeps them (the roles table), and authentication reads them from
// there; this is the seed, and what tests expect.
func DefaultRoles() map[string][]Permission {
	roles := map[string][]Permission{RoleAdmin: {"*:*"}, RoleUser: nil, RoleEditor: nil}
	for _, r := range declared {
		for role, perms := range r.DefaultGrants() {
			roles[role] = append(roles[role], perms...)
		}
	}
	return roles
}

// Caller is who is making a request: resolved once per request by
// authentication and passed to the rule layer (Service) with every call.
// A Caller is read-only once made.
type Caller struct {
	// UserID is the user the caller acts as; 0 for the service itself (the
	// command line), which acts as an admin of no user.
	UserID int64
	// Name is the user's name, for tokens issued to the caller.
	Name        string
	Roles       []string
	Permissions map[Permission]bool

	// provisional is set on a caller authenticated from a cached account
	// (Service.Authenticate), which the Service confirms before it answers.
	provisional *provisional
	// limitKey is UserKey's answer, made once with the caller of an account
	// (Account.Caller), which a cached account serves every request with.
	limitKey string
}

// Can reports whether the caller holds permission p, itself or through a
// wildcard ("orders:*", "*:read", "*:*").
func (c *Caller) Can(p Permission) bool {
	if c == nil {
		return false
	}
	if c.Permissions[p] || c.Permissions["*:*"] {
		return true
	}
	res, act, _ := strings.Cut(string(p), ":")
	return c.Permissions[Permission(res+":*")] || c.Permissions[Permission("*:"+act)]
}

// IsAdmin reports whether the caller has the admin role.
func (c *Caller) IsAdmin() bool { return c != nil && slices.Contains(c.Roles, RoleAdmin) }

// NewCaller returns a caller acting as user userID with the permissions that
// roles grant (looked up in rolePerms, the roles as the database defines
// them) plus those granted to the user directly.
func NewCaller(userID int64, name string, roles []string, rolePerms map[string][]Permission, granted ...Permission) *Caller {
	c := &Caller{UserID: userID, Name: name, Roles: slices.Clone(roles), Permissions: make(map[Permission]bool)}
	for _, r := range roles {
		for _, p := range rolePerms[r] {
			c.Permissions[p] = true
		}
	}
	for _, p := range granted {
		c.Permissions[p] = true
	}
	return c
}

// SystemCaller is the caller of the command line and of the server's own
// start-up work (the first admin): an admin with every permission, acting as
// no user, so records it creates must name their owner.
func SystemCaller() *Caller {
	return NewCaller(0, "", []string{RoleAdmin}, DefaultRoles())
}

// CallerKey is the key of the context value that carries a request's
// caller (WithCaller, CallerFrom). A transport's own context type may answer
// Value(CallerKey{}) with the *Caller itself, so that a request carries its
// caller without a context value of its own (package http does).
type CallerKey struct{}

type credentialErrorKey struct{}

// WithCredentialError returns a context that carries why the request's
// credential was refused (a transport that serves some fields without a
// credential, GraphQL, lets each field decide).
func WithCredentialError(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, credentialErrorKey{}, err)
}

// CredentialErrorFrom returns the error WithCredentialError put in ctx, or
// nil.
func CredentialErrorFrom(ctx context.Context) error {
	err, _ := ctx.Value(credentialErrorKey{}).(error)
	return err
}

// WithCaller returns a context that carries c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, CallerKey{}, c)
}

// CallerFrom returns the caller carried by ctx, or nil when there is none.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(CallerKey{}).(*Caller)
	return c
}

// PasswordHasher hashes and verifies secrets (passwords). Hash returns an
// encoded hash that carries its own parameters; Verify compares in constant
// time.
type PasswordHasher interface {
	Hash(secret string) (string, error)
	Verify(encoded, secret string) (bool, error)
}
