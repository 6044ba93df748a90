// Package token implements resourceapi.Tokens with HS256 JSON Web Tokens
// (RFC 7519) through github.com/golang-jwt/jwt/v5.
//
// A token is exactly what interface.md describes:
//
//	header  {"alg":"HS256","typ":"JWT"}
//	payload {"sub":"42","name":"Ada","iat":1700000000,"exp":1700000900,"stamp":"Q2HV…"}
//
// with one claim beyond those: stamp, the user's security stamp when the
// token was issued (resourceapi.Claims.Stamp), which binds the token to the
// user as they were then (see resourceapi.Authenticator).
//
// Verify accepts only tokens of that shape signed with the secret, and fails
// with one error, identical whatever the cause, so a caller (or a client
// probing the API) cannot learn which part of a token was wrong.
//
// Tokens are stateless: any instance holding the same secret verifies what
// another issued. They are short-lived (resourceapi.AccessTokenTTL) and
// carry no roles or permissions: those are read from the store on every
// request, with the user's security stamp, which ends every token issued
// before it changed.
package token

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.Tokens = (*HS256)(nil)

const (
	// MinSecretLen is the shortest secret New accepts: 256 bits, the size of
	// the HMAC-SHA256 output (RFC 7518 §3.2 requires a key at least that
	// long). The secret should come from a CSPRNG.
	MinSecretLen = 32

	// MaxLen bounds the length of a token. Verify refuses a longer one
	// before decoding anything, so a hostile header costs no base64 or JSON
	// work; Issue refuses to make one (only an absurd name could). Tokens
	// this package issues are about 200 bytes.
	MaxLen = 8 << 10

	// IssuedAtLeeway is how far in the future a token's iat, and its nbf
	// when it has one, may lie. Several instances share a secret, and a
	// token issued by one whose clock runs a little ahead must still verify
	// on the others; a minute covers any NTP-synchronised fleet (RFC 7519
	// §4.1.5 allows "some small leeway" for nbf for this reason). It widens
	// nothing else: exp is checked exactly (RFC 7519 §4.1.4: expired "on or
	// after" exp), since a leeway there would lengthen every token's life.
	IssuedAtLeeway = time.Minute
)

// message is the one message of every Verify failure. It names no part of
// the token and never includes any of it.
const message = "The credential is not valid"

// invalid returns Verify's only error. Each call returns a new *Error with
// the same code and message, so a caller that decorates the error (adding
// Details, say) cannot change what another request sees.
func invalid() error {
	return resourceapi.Errorf(resourceapi.CodeInvalidToken, message)
}

// Options configure New. The zero value is the production setting.
type Options struct {
	// Now is the clock for iat, exp and the defaults of Issue; nil is
	// time.Now. Verify reads it once per call.
	Now resourceapi.Clock
}

// HS256 issues and verifies HS256 access tokens with one secret. It is safe
// for concurrent use.
type HS256 struct {
	secret []byte
	now    resourceapi.Clock
}

// New returns an HS256 that signs with secret, which must be at least
// MinSecretLen bytes. New copies secret, so the caller may reuse its slice.
func New(secret []byte, opts Options) (*HS256, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("token: secret is %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &HS256{secret: append([]byte(nil), secret...), now: now}, nil
}

// Issue signs c into a token. A zero IssuedAt means now and a zero ExpiresAt
// means IssuedAt + resourceapi.AccessTokenTTL. Times are truncated to whole
// seconds (the JWT NumericDate). Issue returns an error, never a token that
// Verify would refuse on its content: Subject must be a decimal id in
// 1..resourceapi.MaxID, Name valid UTF-8, Stamp a security stamp
// (validStamp), and ExpiresAt at least a second after IssuedAt. Issue does
// not refuse a token that is already expired.
//
// The payload is sub, name, iat, exp and stamp and nothing else: no jti,
// because nothing looks tokens up (they are ended by their user's stamp,
// see the package doc); no iss or aud, because only this service verifies
// them, with a secret no one else holds.
func (h *HS256) Issue(c resourceapi.Claims) (string, error) {
	if _, ok := parseID(c.Subject); !ok {
		return "", errors.New("issue token: subject is not a user id")
	}
	if !validStamp(c.Stamp) {
		return "", errors.New("issue token: no security stamp")
	}
	if !utf8.ValidString(c.Name) {
		return "", errors.New("issue token: name is not valid UTF-8")
	}
	iat := c.IssuedAt
	if iat.IsZero() {
		iat = h.now()
	}
	exp := c.ExpiresAt
	if exp.IsZero() {
		exp = iat.Add(resourceapi.AccessTokenTTL)
	}
	p := &payload{Sub: c.Subject, Name: c.Name, IAT: iat.Unix(), EXP: exp.Unix(), Stamp: c.Stamp}
	if p.EXP <= p.IAT {
		return "", errors.New("issue token: expiry is not after issue time")
	}
	// NewWithClaims writes the header {"alg":"HS256","typ":"JWT"}.
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, p).SignedString(h.secret)
	if err != nil {
		return "", fmt.Errorf("issue token: %w", err)
	}
	if len(s) > MaxLen {
		return "", fmt.Errorf("issue token: token is %d bytes, more than %d", len(s), MaxLen)
	}
	return s, nil
}

// Verify returns the claims of token if this service (or another instance
// with the same secret) issued it and it has not expired. It returns an
// error with code resourceapi.CodeInvalidToken and one fixed message for
// every other input.
//
// Besides the signature (HS256 only, whatever alg says), a token must have a
// header typ of exactly "JWT" (RFC 8725 §3.11: a JWT of another kind signed
// with the same key is not an access token) and no crit (RFC 7515 §4.1.11:
// this package understands no extensions), and claims sub (a decimal id in
// 1..resourceapi.MaxID, no sign or leading zero), name (a string), stamp
// (a security stamp: validStamp), iat and
// exp (integers, not 1e9 or 1.0) with iat at most IssuedAtLeeway ahead of
// now, exp after iat, and now before exp. nbf is never issued, but a token
// that has one (an integer, like iat) is refused until nbf, less the same
// leeway as iat: a token is never used before the time it names. Other
// claims are ignored.
//
// The token must be the bare compact serialization: any byte outside the
// base64url alphabet and the two dots is invalid, whitespace at either end
// too (the HTTP layer trims the header value before calling Verify). This
// is stricter than the library, whose base64 decoder skips CR and LF and so
// would verify a signature with a line break in it.
func (h *HS256) Verify(token string) (resourceapi.Claims, error) {
	if len(token) > MaxLen || !compact(token) {
		return resourceapi.Claims{}, invalid()
	}
	now := h.now()
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
		// Strict decoding refuses non-zero padding bits, so each signature
		// has one encoding and a verified token one spelling.
		jwt.WithStrictDecoding(),
	)
	var c payload
	// ParseWithClaims checks the signature with hmac.Equal, which takes
	// time independent of where the bytes differ. Its error says which
	// check failed; it is dropped here and never logged.
	if _, err := p.ParseWithClaims(token, &c, h.key); err != nil {
		return resourceapi.Claims{}, invalid()
	}
	// The library checked alg, the signature and exp (now < exp). The rest
	// is ours; payload.UnmarshalJSON already checked the types.
	if _, ok := parseID(c.Sub); !ok || !validStamp(c.Stamp) {
		return resourceapi.Claims{}, invalid()
	}
	iat, exp := time.Unix(c.IAT, 0), time.Unix(c.EXP, 0)
	if iat.After(now.Add(IssuedAtLeeway)) || c.EXP <= c.IAT {
		return resourceapi.Claims{}, invalid()
	}
	if c.NBF != nil && time.Unix(*c.NBF, 0).After(now.Add(IssuedAtLeeway)) {
		return resourceapi.Claims{}, invalid()
	}
	return resourceapi.Claims{Subject: c.Sub, Name: c.Name, IssuedAt: iat.UTC(), ExpiresAt: exp.UTC(), Stamp: c.Stamp}, nil
}

// key is the parser's Keyfunc. It runs after the claims are decoded and
// before the signature is checked.
func (h *HS256) key(t *jwt.Token) (any, error) {
	// WithValidMethods already refused any other alg; checking the method
	// itself as well costs nothing and does not depend on that option.
	if t.Method != jwt.SigningMethodHS256 {
		return nil, errors.New("alg")
	}
	if typ, _ := t.Header["typ"].(string); typ != "JWT" {
		return nil, errors.New("typ")
	}
	if _, ok := t.Header["crit"]; ok {
		return nil, errors.New("crit")
	}
	return h.secret, nil
}

// compact reports whether s could be a JWS compact serialization: three
// segments of the unpadded base64url alphabet joined by exactly two dots.
func compact(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case 'A' <= b && b <= 'Z', 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '-', b == '_':
		case b == '.':
			dots++
		default:
			return false
		}
	}
	return dots == 2
}

// maxStampLen bounds a security stamp: the service's are 26 characters.
const maxStampLen = 64

// validStamp reports whether s can be a security stamp: 1 to maxStampLen
// characters of the base32 alphabet (resourceapi.NewStamp's) and
// hexadecimal digits (stamps a database migration drew).
func validStamp(s string) bool {
	if s == "" || len(s) > maxStampLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// parseID returns the id that s spells in canonical decimal: digits only,
// no leading zero, 1..resourceapi.MaxID.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 16 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > resourceapi.MaxID {
		return 0, false
	}
	return n, true
}

// payload is the claims set of a token. It implements jwt.Claims so the
// library can check exp, and decodes strictly, which the library's
// RegisteredClaims does not: there, "exp":"9999999999" (a string) and
// "exp":1.5 both pass, and encoding/json would match "SUB" to sub.
type payload struct {
	Sub   string `json:"sub"`
	Name  string `json:"name"`
	IAT   int64  `json:"iat"`
	EXP   int64  `json:"exp"`
	Stamp string `json:"stamp"`
	// NBF is never issued; a token that carries one is checked against it.
	NBF *int64 `json:"nbf,omitempty"`
}

// UnmarshalJSON requires sub, name and stamp as JSON strings and iat and exp as
// JSON integers (optional minus sign and digits only), and nbf, when
// present, as an integer too, matched by exact key. A later duplicate key
// wins, as in encoding/json.
func (p *payload) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var err error
	if p.Sub, err = stringClaim(m["sub"]); err != nil {
		return err
	}
	if p.Name, err = stringClaim(m["name"]); err != nil {
		return err
	}
	if p.IAT, err = intClaim(m["iat"]); err != nil {
		return err
	}
	if p.EXP, err = intClaim(m["exp"]); err != nil {
		return err
	}
	if p.Stamp, err = stringClaim(m["stamp"]); err != nil {
		return err
	}
	if raw, ok := m["nbf"]; ok {
		nbf, err := intClaim(raw)
		if err != nil {
			return err
		}
		p.NBF = &nbf
	}
	return nil
}

var errClaim = errors.New("missing claim or wrong type")

func stringClaim(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", errClaim
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errClaim
	}
	return s, nil
}

func intClaim(raw json.RawMessage) (int64, error) {
	// raw is a valid JSON value (or nil when the claim is missing), so
	// ParseInt's extras, a leading '+' or zeros, cannot occur, while the
	// JSON numbers that are not integers in plain digits (1.0, 1e9) and
	// every non-number fail.
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, errClaim
	}
	return n, nil
}

// GetExpirationTime is for the library's exp check.
func (p *payload) GetExpirationTime() (*jwt.NumericDate, error) {
	// UnmarshalJSON refused a token without exp, so this is never a
	// missing claim; WithExpirationRequired stays on regardless.
	return &jwt.NumericDate{Time: time.Unix(p.EXP, 0)}, nil
}

// GetIssuedAt returns iat. The library checks it only with WithIssuedAt,
// which would apply the same leeway to exp; Verify checks iat itself.
func (p *payload) GetIssuedAt() (*jwt.NumericDate, error) {
	return &jwt.NumericDate{Time: time.Unix(p.IAT, 0)}, nil
}

// GetNotBefore returns nil, so that the library, which would check nbf
// without iat's leeway, leaves it to Verify.
func (p *payload) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer returns "": tokens carry no iss.
func (p *payload) GetIssuer() (string, error) { return "", nil }

// GetSubject returns sub.
func (p *payload) GetSubject() (string, error) { return p.Sub, nil }

// GetAudience returns nil: tokens carry no aud.
func (p *payload) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }
