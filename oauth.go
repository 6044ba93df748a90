package resourceapi

import (
	"context"
	"crypto/rand"
	"net/url"
	"slices"
	"strings"
	"time"
)

// OAuth 2.0 grant types a client may be registered for.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantPassword          = "password"
	GrantClientCredentials = "client_credentials"
)

// GrantTypes lists the grant types the authorization server supports.
func GrantTypes() []string {
	return []string{GrantAuthorizationCode, GrantClientCredentials, GrantPassword, GrantRefreshToken}
}

// Lifetimes of OAuth credentials.
const (
	// CodeTTL is how long an authorization code may be exchanged, once.
	CodeTTL = 60 * time.Second
	// RefreshTokenTTL is how long a refresh token is valid if not used.
	RefreshTokenTTL = 30 * 24 * time.Hour
	// MaxRefreshReuseGrace bounds the grace an authorization server may
	// give a refresh token's second use (see OAuthStore.RotateRefreshToken):
	// a longer one would give whoever stole a token that long to rotate it
	// unchallenged. The default grace is none: any reuse revokes the family
	// (RFC 9700 section 4.14.2).
	MaxRefreshReuseGrace = time.Minute
)

// Prefixes of the secrets the authorization server generates.
const (
	ClientIDPrefix     = "rac_"
	ClientSecretPrefix = "racs_"
)

// OAuthClients is the declaration of OAuth 2.0 clients, registered by admins
// (over the API or with `resourceapi client create`). A client acts for the
// users who sign in through it; with the client_credentials grant it acts as
// its own service user, created with it (role user; an admin may grant it
// more). Confidential clients get a secret, shown once; public clients
// (browser and native apps) have none and may use only the authorization
// code grant with PKCE (and refresh tokens).
var OAuthClients = NewResource(Resource{
	Name:     "oauth_clients",
	Path:     "oauth-clients",
	Singular: "OAuth client",
	Fields: []Field{
		{Name: "id", Type: TypeInt, ReadOnly: true, Sortable: true},
		{Name: "client_id", Type: TypeString, Unique: true, Sortable: true, Generate: newClientID},
		{Name: "name", Type: TypeString, Required: true, Sortable: true, Searchable: true, Normalize: trimSpace, Length: &Range{1, 100}, Check: oneLine},
		{Name: "secret", Type: TypeString, WriteOnly: true, Nullable: true, Secret: SecretToken, Generate: newClientSecret}, // none for a public client
		{Name: "public", Type: TypeBool, Keep: true, Default: func() any { return false }},
		{Name: "grants", Type: TypeStrings, Required: true, Normalize: normalizeSet, Enum: GrantTypes(), Check: checkGrants},
		{Name: "redirect_uris", Type: TypeStrings, Default: func() any { return []string{} }, Keep: true, Check: checkRedirectURIs},
		{Name: "user_id", Type: TypeInt, ReadOnly: true, Computed: true, References: "users"},
		{Name: "created_at", Type: TypeTime, ReadOnly: true, Sortable: true},
		{Name: "updated_at", Type: TypeTime, ReadOnly: true, Sortable: true},
	},
	Check:     checkClient,
	Companion: serviceUser,
	Example: func(n int) Record {
		return Record{"name": "Reporting " + itoa(n), "grants": []string{GrantAuthorizationCode, GrantRefreshToken},
			"redirect_uris": []string{"https://app.example.com/callback"}}
	},
})

func newClientID(Record) (string, error) {
	return ClientIDPrefix + strings.ToLower(rand.Text()[:20]), nil
}

// newClientSecret generates the secret of a confidential client; a public
// client gets none.
func newClientSecret(rec Record) (string, error) {
	if rec.Bool("public") {
		return "", nil
	}
	return ClientSecretPrefix + rand.Text(), nil
}

func checkGrants(v any) string {
	if len(v.([]string)) == 0 {
		return "must name at least one grant type"
	}
	return ""
}

// maxRedirectURIs bounds a client's registered redirect URIs.
const maxRedirectURIs = 16

// checkRedirectURIs accepts absolute https URIs, http URIs of the loopback
// interface (native apps and development, RFC 8252 section 7.3), and private
// schemes of native apps (com.example.app:/callback), without fragments.
func checkRedirectURIs(v any) string {
	list := v.([]string)
	if len(list) > maxRedirectURIs {
		return "must hold at most 16 URIs"
	}
	for _, s := range list {
		if why := checkRedirectURI(s); why != "" {
			return why
		}
	}
	return ""
}

func checkRedirectURI(s string) string {
	const msg = "must be absolute https URIs (http only for localhost, 127.0.0.1 or [::1]) without a fragment"
	if len(s) > 2000 {
		return msg
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(s, "#") {
		return msg
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return msg
		}
	case "http":
		switch u.Hostname() {
		case "localhost", "127.0.0.1", "::1":
		default:
			return msg
		}
	default:
		// A private-use scheme must look like a reverse domain name.
		if !strings.Contains(u.Scheme, ".") {
			return msg
		}
	}
	return ""
}

// checkClient checks what a client's fields must agree on, for the fields a
// write sets: a public client has no use for client_credentials or password
// (it cannot keep a secret), and the authorization code grant needs a
// redirect URI.
func checkClient(rec Record, mode WriteMode) []FieldError {
	var out []FieldError
	grants, hasGrants := rec["grants"].([]string)
	if hasGrants && rec.Bool("public") {
		for _, g := range grants {
			if g == GrantClientCredentials || g == GrantPassword {
				out = append(out, FieldError{Field: "grants", Message: "a public client may use only authorization_code and refresh_token"})
				break
			}
		}
	}
	if uris, ok := rec["redirect_uris"].([]string); mode != ModePatch && hasGrants && slices.Contains(grants, GrantAuthorizationCode) && (!ok || len(uris) == 0) {
		out = append(out, FieldError{Field: "redirect_uris", Message: "must hold at least one URI for the authorization_code grant"})
	}
	return out
}

// serviceUser declares the user a new client acts as with the
// client_credentials grant (and that owns nothing else), created with the
// client in one transaction; its id becomes the client's user_id. It is an
// internal service user: hidden from everyone but admins.
func serviceUser(rec Record) (Prerequisite, Record) {
	id, _ := rec["client_id"].(string)
	name, _ := rec["name"].(string)
	user := Record{
		"name":  truncateRunes(name+" (OAuth client)", 100),
		"email": id + "@clients.invalid",
	}
	return Prerequisite{Resource: Users, Record: user, Link: "user_id"}, Record{"service": true}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// OAuthClient is a registered client as the authorization server reads it.
type OAuthClient struct {
	// Record is the client's record (visible fields).
	Record Record
	// SecretHash is HashToken of its secret; "" for a public client.
	SecretHash string
}

// ClientID returns the client's public identifier.
func (c OAuthClient) ClientID() string { s, _ := c.Record["client_id"].(string); return s }

// Public reports whether the client has no secret.
func (c OAuthClient) Public() bool { return c.Record.Bool("public") }

// Allows reports whether the client is registered for grant.
func (c OAuthClient) Allows(grant string) bool {
	return slices.Contains(c.Record.Strings("grants"), grant)
}

// RedirectURIs returns the client's registered redirect URIs.
func (c OAuthClient) RedirectURIs() []string { return c.Record.Strings("redirect_uris") }

// UserID returns the client's service user.
func (c OAuthClient) UserID() int64 { id, _ := c.Record["user_id"].(int64); return id }

// AuthorizationCode is an issued authorization code, stored only by its
// hash.
type AuthorizationCode struct {
	Hash          string
	ClientID      string
	UserID        int64
	RedirectURI   string
	CodeChallenge string // PKCE S256 challenge
	Scope         string
	ExpiresAt     time.Time
	// Stamp is the user's security stamp at the sign-in: the code is
	// exchanged only while it is still the user's.
	Stamp string
}

// RefreshToken is an issued refresh token, stored only by its hash. Tokens
// that descend from one grant (each use returns the next) share a Family.
type RefreshToken struct {
	Hash      string
	Family    string
	ClientID  string
	UserID    int64
	Scope     string
	ExpiresAt time.Time
	// Stamp is the user's security stamp when the family began (the
	// sign-in); a family is rotated only while it is still the user's.
	Stamp string
}

// OAuthStore keeps the authorization server's state: clients, codes and
// refresh tokens. Each method is one transaction. Package sqlstore
// implements it on both databases.
type OAuthStore interface {
	// Client returns the client with this client_id, or CodeNotFound.
	Client(ctx context.Context, clientID string) (OAuthClient, error)

	// SaveCode stores a new authorization code.
	SaveCode(ctx context.Context, code AuthorizationCode) error
	// ConsumeCode marks the code with this hash used and returns it, if it
	// exists, is unused and has not expired at now. A code that was already
	// used returns CodeConflict, and the refresh-token family issued for it
	// (Family = the code's hash) is revoked; any other failure CodeNotFound.
	ConsumeCode(ctx context.Context, hash string, now time.Time) (AuthorizationCode, error)

	// SaveRefreshToken stores a new refresh token. A token that starts a
	// family gives the family its Stamp. Returns CodeConflict when the
	// family is revoked, or its stamp is no longer its user's security
	// stamp (the password changed since the sign-in).
	SaveRefreshToken(ctx context.Context, t RefreshToken) error
	// RotateRefreshToken exchanges the token with hash old for next (which
	// inherits its family, client, user and scope) in one transaction, and
	// returns the old token, with its family's Stamp. Exactly one of any
	// number of concurrent calls with the same old token succeeds. Returns
	// CodeNotFound when old is unknown, expired or revoked, when its
	// family's stamp is no longer its user's security stamp, or when old
	// was used less than grace ago (taken for a client's own race, two
	// requests sent at once: nothing is revoked); CodeConflict when old was
	// used before, at least grace ago, after revoking the whole family, its
	// newest token included. With grace 0 every reuse revokes the family.
	RotateRefreshToken(ctx context.Context, old string, next RefreshToken, now time.Time, grace time.Duration) (RefreshToken, error)
	// RevokeRefreshToken revokes the family of the token with this hash, if
	// the token belongs to clientID. Unknown tokens are not an error (RFC
	// 7009 section 2.2).
	RevokeRefreshToken(ctx context.Context, hash, clientID string, now time.Time) error
}

// SettingStore keeps the service's own settings in the database.
type SettingStore interface {
	// Setting returns the value of setting name, storing value first when
	// the setting is absent, so that concurrent first calls on any number of
	// instances all return the same value (the first stored).
	Setting(ctx context.Context, name, value string) (string, error)
}
