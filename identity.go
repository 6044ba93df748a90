package resourceapi

import (
	"context"
	"time"
)

// IdentityStore is what authentication reads. Package sqlstore implements it
// on both databases.
type IdentityStore interface {
	// AccountByEmail returns the user with this email (compared as stored:
	// case-insensitively), or an error with CodeNotFound.
	AccountByEmail(ctx context.Context, email string) (Account, error)
	// AccountByID returns the user with this id, or CodeNotFound.
	AccountByID(ctx context.Context, id int64) (Account, error)
	// AccountByAPIKey returns the user that owns the API key whose hash
	// (HashTokenBytes: the SHA-256 whose hex HashToken is) is keyHash, with the key's
	// expiry in ExpiresAt, or CodeNotFound when no key has it.
	AccountByAPIKey(ctx context.Context, keyHash TokenHash) (Account, error)
}

// Account is a user as authentication sees it.
type Account struct {
	// User is the user's record, as Store.Get returns it.
	User Record
	// PasswordHash is the stored hash of the user's password; "" when the
	// user has none (they sign in with API keys only).
	PasswordHash string
	// Permissions are the user's effective permissions: those their roles
	// grant, as the database defines the roles, and those granted directly.
	Permissions []Permission
	// Stamp is the user's security stamp (the users field
	// security_stamp): every token issued to the user carries it, and is
	// valid only while it is the user's.
	Stamp string
	// ExpiresAt, for an account found by an API key (AccountByAPIKey), is
	// when that key stops working (its expires_at); zero when it does not,
	// and for other lookups.
	ExpiresAt time.Time
	// Cached says the account comes from a cache that other processes'
	// writes do not reach (see IdentityVersioner), as it was at identity
	// Version; a store returns such an account only when
	// CachedAccountsAllowed.
	Cached  bool
	Version int64

	caller *Caller // built once by NewAccount; read-only
}

// NewAccount returns the account of user, with its password hash and
// effective permissions, and the caller that acts as it built once: an
// account cached by a store serves every request with the same caller.
func NewAccount(user Record, passwordHash string, permissions []Permission) Account {
	a := Account{User: user, PasswordHash: passwordHash, Permissions: permissions}
	a.caller = a.newCaller()
	return a
}

// Caller returns the caller that acts as the account's user.
func (a Account) Caller() *Caller {
	if a.caller != nil {
		return a.caller
	}
	return a.newCaller()
}

func (a Account) newCaller() *Caller {
	name, _ := a.User["name"].(string)
	c := &Caller{UserID: a.User.ID(), Name: name, Roles: a.User.Strings("roles"),
		Permissions: make(map[Permission]bool, len(a.Permissions))}
	for _, p := range a.Permissions {
		c.Permissions[p] = true
	}
	if c.UserID != 0 {
		c.limitKey = userKey(c.UserID)
	}
	return c
}

// Scheme is how a request presents its credential.
type Scheme int

// Credential schemes.
const (
	SchemeNone   Scheme = iota
	SchemeAPIKey        // X-API-Key: <key>
	SchemeBearer        // Authorization: Bearer <JWT>
	SchemeBasic         // Authorization: Basic base64(email:password)
)

// Credential is what a request presents to prove who makes it.
type Credential struct {
	Scheme Scheme
	// Secret is the API key or the bearer token.
	Secret string
	// Email and Password are HTTP Basic's.
	Email, Password string
	// Client identifies where the request comes from (its IP address), for
	// throttling password guesses; "" when unknown. The HTTP server sets it
	// for SchemeBasic only, the one scheme that reads it.
	Client string
}

var (
	// errInvalidCredential is the one answer to every credential that is
	// present but not valid, whatever part of it failed.
	errInvalidCredential = Errorf(CodeInvalidToken, "The credential is not valid")
)

// ErrInvalidCredential returns the error of every credential that is present
// but not valid, so transports can recognise it.
func ErrInvalidCredential() error { return errInvalidCredential }

// Authenticator resolves credentials to accounts: package auth implements
// it over an IdentityStore, with its caches and the throttling of password
// guesses. Transports never call it: they hand a credential to
// Service.Authenticate (a request) or Service.Session (a stream), which
// decide whether an account from a cache must be confirmed.
type Authenticator interface {
	// Authenticate returns the account cred proves. No credential is
	// CodeUnauthenticated; any credential that is not valid (unknown or
	// expired key, bad or expired token, a token of an earlier security
	// stamp, wrong password, unknown email, soft-deleted user) is the one
	// invalid-credential error; too many failed passwords for an account,
	// or a client address over its budget (ClientBudget), is
	// CodeRateLimited. The account may come from a cache that other
	// processes' writes do not reach only when the context allows it
	// (CachedAccountsAllowed); it is then marked Cached. A bearer token's
	// account carries the token's expiry in ExpiresAt.
	Authenticate(ctx context.Context, cred Credential) (Account, error)
	// Login checks an email and password (the OAuth password grant, the
	// sign-in page) with the rules of HTTP Basic, and returns the account.
	Login(ctx context.Context, email, password, client string) (Account, error)
	// AccountByID returns the account of a user id, as a token's subject
	// names it; an unknown or soft-deleted user is the invalid-credential
	// error.
	AccountByID(ctx context.Context, id int64) (Account, error)
	// ConfirmPassword checks that password is the current password of user
	// id, as a sign-in checks one (throttled, paid for by the request's
	// ClientBudget). The Service calls it for Resource.Confirm.
	ConfirmPassword(ctx context.Context, id int64, password string) error
}
