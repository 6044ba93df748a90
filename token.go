package resourceapi

import "time"

// AccessTokenTTL is how long an access token (a JWT) is valid.
const AccessTokenTTL = 15 * time.Minute

// Claims are what an access token says: who it was issued to and when it
// expires. Roles and permissions are never taken from a token: they are read
// from the store on every request, so a change takes effect at once.
type Claims struct {
	// Subject is the user id, in decimal.
	Subject   string
	Name      string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Stamp is the user's security stamp when the token was issued
	// (Account.Stamp): the token is valid only while it is still the
	// user's, so a password or email change, the end of the user's
	// sessions, or the user's deletion (a user created again at the same
	// id has another stamp) ends it.
	Stamp string
}

// Tokens issues and verifies access tokens. Package token implements it with
// HS256 JSON Web Tokens. Verify checks the token alone; the Authenticator
// then checks its Stamp against the user's.
type Tokens interface {
	// Issue signs claims into a token.
	Issue(c Claims) (string, error)
	// Verify returns the claims of a token this service issued and that has
	// not expired. Any other token (bad signature, another algorithm, no or
	// past expiry, malformed) returns an error, the same whatever the cause.
	Verify(token string) (Claims, error)
}
