package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/resourceapi/resourceapi"
)

// refreshTokenPrefix starts every refresh token, so that a leaked one is
// recognisable in a log or a secret scanner's report.
const refreshTokenPrefix = "rar_"

// tokenResponse is a successful token response (RFC 6749 section 5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// token is the token endpoint: form in, tokens or an RFC 6749 section 5.2
// error out. The client is authenticated before anything else is said
// about the request; then the grant must be one the server knows and the
// client is registered for.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	resp, e := s.grant(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) grant(w http.ResponseWriter, r *http.Request) (tokenResponse, *oauthError) {
	form, e := readForm(w, r)
	if e != nil {
		return tokenResponse{}, e
	}
	grant := form.Get("grant_type")
	if grant == "" {
		return tokenResponse{}, badRequest(errInvalidRequest, "grant_type is required")
	}
	client, e := s.authenticateClient(r, form)
	if e != nil {
		return tokenResponse{}, e
	}
	if !slices.Contains(resourceapi.GrantTypes(), grant) {
		return tokenResponse{}, badRequest(errUnsupportedGrantType,
			"grant_type must be authorization_code, client_credentials, password or refresh_token")
	}
	// A public client cannot keep a secret, so it may not use the grants
	// that rest on one, whatever its registration says.
	if !client.Allows(grant) || client.Public() && (grant == resourceapi.GrantPassword || grant == resourceapi.GrantClientCredentials) {
		return tokenResponse{}, badRequest(errUnauthorizedClient, "This client is not registered for the "+grant+" grant")
	}
	now := s.now()
	switch grant {
	case resourceapi.GrantPassword:
		return s.passwordGrant(r, form, client, now)
	case resourceapi.GrantClientCredentials:
		return s.clientCredentialsGrant(r.Context(), form, client, now)
	case resourceapi.GrantAuthorizationCode:
		return s.codeGrant(r.Context(), form, client, now)
	default:
		return s.refreshGrant(r.Context(), form, client, now)
	}
}

// passwordGrant signs the user in with email and password (RFC 6749
// section 4.3). A throttled account is answered 429 with Retry-After: the
// error is still invalid_grant, the code a client's OAuth library
// understands, and the status and header tell it when to come back rather
// than let it treat the failure as a wrong password. The throttle is keyed
// on the email given, existing or not, so it reveals nothing about
// accounts.
func (s *Server) passwordGrant(r *http.Request, form url.Values, client resourceapi.OAuthClient, now time.Time) (tokenResponse, *oauthError) {
	email, password := form.Get("username"), form.Get("password")
	if email == "" || password == "" {
		return tokenResponse{}, badRequest(errInvalidRequest, "username and password are required")
	}
	scope, ok := parseScope(form.Get("scope"))
	if !ok {
		return tokenResponse{}, errBadScope
	}
	acct, err := s.auth.Login(r.Context(), email, password, s.clientIP(r))
	if err != nil {
		return tokenResponse{}, s.loginError(r.Context(), err)
	}
	return s.issue(r.Context(), acct, client, scope, "", now)
}

// loginError translates the Authenticator's answer to a failed sign-in.
func (s *Server) loginError(ctx context.Context, err error) *oauthError {
	switch resourceapi.ErrorCode(err) {
	case resourceapi.CodeInvalidToken:
		return badRequest(errInvalidGrant, "The email or password is not valid")
	case resourceapi.CodeRateLimited:
		return &oauthError{status: http.StatusTooManyRequests, code: errInvalidGrant,
			desc:       "Too many failed sign-in attempts for this account; retry later",
			retryAfter: max(resourceapi.ErrorOf(err).RetryAfter, time.Second)}
	}
	return s.fail(ctx, "sign in", err)
}

// clientCredentialsGrant issues a token for the client's own service user
// (RFC 6749 section 4.4), without a refresh token (section 4.4.3): the
// client can always ask again.
func (s *Server) clientCredentialsGrant(ctx context.Context, form url.Values, client resourceapi.OAuthClient, now time.Time) (tokenResponse, *oauthError) {
	scope, ok := parseScope(form.Get("scope"))
	if !ok {
		return tokenResponse{}, errBadScope
	}
	acct, err := s.auth.AccountByID(ctx, client.UserID())
	if err != nil {
		if resourceapi.ErrorCode(err) == resourceapi.CodeInvalidToken {
			return tokenResponse{}, badRequest(errUnauthorizedClient, "The client's service user is deactivated")
		}
		return tokenResponse{}, s.fail(ctx, "read service user", err)
	}
	return s.accessToken(ctx, acct, scope, now)
}

// codeGrant exchanges an authorization code (RFC 6749 section 4.1.3, RFC
// 7636 section 4.6). The parameters' form is checked before the code is
// touched; after that, the code is consumed whatever follows, so a code
// presented with a wrong verifier, redirect URI or client is spent: whoever
// holds it has no second try, and the legitimate client starts again.
func (s *Server) codeGrant(ctx context.Context, form url.Values, client resourceapi.OAuthClient, now time.Time) (tokenResponse, *oauthError) {
	code, verifier, redirectURI := form.Get("code"), form.Get("code_verifier"), form.Get("redirect_uri")
	switch {
	case code == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "code is required")
	case verifier == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "code_verifier is required: this server requires PKCE")
	case !validVerifier(verifier):
		return tokenResponse{}, badRequest(errInvalidRequest,
			"code_verifier must be 43 to 128 characters from A-Z, a-z, 0-9 and -._~ (RFC 7636)")
	case redirectURI == "":
		return tokenResponse{}, badRequest(errInvalidRequest, "redirect_uri is required, as sent in the authorization request")
	}
	invalid := badRequest(errInvalidGrant, "The authorization code is invalid, expired or already used")
	if len(code) > maxToken {
		return tokenResponse{}, invalid
	}
	hash := resourceapi.HashToken(code)
	c, err := s.store.ConsumeCode(ctx, hash, now)
	switch resourceapi.ErrorCode(err) {
	case "":
	case resourceapi.CodeNotFound:
		return tokenResponse{}, invalid
	case resourceapi.CodeConflict:
		s.log.WarnContext(ctx, "oauth: authorization code reused; the tokens issued for it are revoked",
			"client_id", client.ClientID())
		return tokenResponse{}, invalid
	default:
		return tokenResponse{}, s.fail(ctx, "consume code", err)
	}
	switch {
	case c.ClientID != client.ClientID():
		return tokenResponse{}, invalid
	case c.RedirectURI != redirectURI:
		return tokenResponse{}, badRequest(errInvalidGrant, "redirect_uri differs from the authorization request's")
	case !pkceMatches(verifier, c.CodeChallenge):
		return tokenResponse{}, badRequest(errInvalidGrant, "code_verifier does not match the code_challenge")
	}
	acct, e := s.account(ctx, c.UserID)
	if e != nil {
		return tokenResponse{}, e
	}
	if acct.Stamp != c.Stamp {
		// The user's password or email changed, or their sessions were
		// ended, since they signed in for this code.
		return tokenResponse{}, invalid
	}
	// The tokens of a code form the family named by the code's hash, so a
	// reuse of the code revokes them (see resourceapi.OAuthStore).
	return s.issue(ctx, acct, client, c.Scope, hash, now)
}

// refreshGrant rotates a refresh token (RFC 6749 section 6): the old one is
// spent, a new one returned with a new access token. The store decides
// which of concurrent uses wins and revokes the family on a reuse.
func (s *Server) refreshGrant(ctx context.Context, form url.Values, client resourceapi.OAuthClient, now time.Time) (tokenResponse, *oauthError) {
	old := form.Get("refresh_token")
	if old == "" {
		return tokenResponse{}, badRequest(errInvalidRequest, "refresh_token is required")
	}
	// Every token carries ScopeAPI, so any scope that parses is within the
	// original grant (section 6).
	if _, ok := parseScope(form.Get("scope")); !ok {
		return tokenResponse{}, errBadScope
	}
	invalid := badRequest(errInvalidGrant, "The refresh token is invalid, expired or revoked")
	if len(old) > maxToken {
		return tokenResponse{}, invalid
	}
	oldHash := resourceapi.HashToken(old)
	plain := refreshTokenPrefix + rand.Text()
	next := resourceapi.RefreshToken{Hash: resourceapi.HashToken(plain), ExpiresAt: now.Add(resourceapi.RefreshTokenTTL)}
	prev, err := s.store.RotateRefreshToken(ctx, oldHash, next, now, s.reuseGrace)
	switch resourceapi.ErrorCode(err) {
	case "":
	case resourceapi.CodeNotFound:
		return tokenResponse{}, invalid
	case resourceapi.CodeConflict:
		s.log.WarnContext(ctx, "oauth: refresh token reused; its family is revoked", "client_id", client.ClientID())
		return tokenResponse{}, invalid
	default:
		return tokenResponse{}, s.fail(ctx, "rotate refresh token", err)
	}
	// The store rotates before the client can be compared (its interface
	// has no lookup), so a token presented by another client has been
	// spent: it was stolen or leaked, and its family is revoked.
	if prev.ClientID != client.ClientID() {
		s.log.WarnContext(ctx, "oauth: refresh token presented by another client; its family is revoked",
			"client_id", client.ClientID())
		s.revokeFamily(ctx, oldHash, prev.ClientID, now)
		return tokenResponse{}, invalid
	}
	acct, e := s.account(ctx, prev.UserID)
	if e != nil {
		if e.code == errInvalidGrant {
			s.revokeFamily(ctx, oldHash, prev.ClientID, now)
		}
		return tokenResponse{}, e
	}
	if acct.Stamp != prev.Stamp {
		// The stamp changed between the rotation and now: the family ended
		// with it.
		return tokenResponse{}, invalid
	}
	resp, e := s.accessToken(ctx, acct, prev.Scope, now)
	if e != nil {
		return tokenResponse{}, e
	}
	resp.RefreshToken = plain
	return resp, nil
}

func (s *Server) revokeFamily(ctx context.Context, hash, clientID string, now time.Time) {
	if err := s.store.RevokeRefreshToken(context.WithoutCancel(ctx), hash, clientID, now); err != nil {
		s.log.ErrorContext(ctx, "oauth: revoke refresh token family", "err", err)
	}
}

// account reads the user a code or refresh token was issued to: a user
// deleted or soft-deleted since gets nothing.
func (s *Server) account(ctx context.Context, id int64) (resourceapi.Account, *oauthError) {
	acct, err := s.auth.AccountByID(ctx, id)
	if err != nil {
		if resourceapi.ErrorCode(err) == resourceapi.CodeInvalidToken {
			return resourceapi.Account{}, badRequest(errInvalidGrant, "The user of this grant cannot sign in")
		}
		return resourceapi.Account{}, s.fail(ctx, "read account", err)
	}
	return acct, nil
}

// issue returns an access token for acct and, when the client is registered
// for the refresh_token grant, a refresh token in family ("" starts a new
// family, named by the token's own hash).
func (s *Server) issue(ctx context.Context, acct resourceapi.Account, client resourceapi.OAuthClient, scope, family string, now time.Time) (tokenResponse, *oauthError) {
	resp, e := s.accessToken(ctx, acct, scope, now)
	if e != nil || !client.Allows(resourceapi.GrantRefreshToken) {
		return resp, e
	}
	plain := refreshTokenPrefix + rand.Text()
	hash := resourceapi.HashToken(plain)
	if family == "" {
		family = hash
	}
	err := s.store.SaveRefreshToken(ctx, resourceapi.RefreshToken{Hash: hash, Family: family,
		ClientID: client.ClientID(), UserID: acct.User.ID(), Scope: scope, ExpiresAt: now.Add(resourceapi.RefreshTokenTTL),
		Stamp: acct.Stamp})
	switch resourceapi.ErrorCode(err) {
	case "":
	case resourceapi.CodeConflict:
		// The code was reused while this exchange was under way, or the
		// user's security stamp changed since the sign-in.
		return tokenResponse{}, badRequest(errInvalidGrant, "The grant is invalid, expired or revoked; sign in again")
	default:
		return tokenResponse{}, s.fail(ctx, "save refresh token", err)
	}
	resp.RefreshToken = plain
	return resp, nil
}

// accessToken signs an access token for acct: claims sub, name, iat, exp,
// and the user's security stamp, which ends the token when it changes.
func (s *Server) accessToken(ctx context.Context, acct resourceapi.Account, scope string, now time.Time) (tokenResponse, *oauthError) {
	name, _ := acct.User["name"].(string)
	tok, err := s.tokens.Issue(resourceapi.Claims{Subject: strconv.FormatInt(acct.User.ID(), 10), Name: name,
		IssuedAt: now, ExpiresAt: now.Add(resourceapi.AccessTokenTTL), Stamp: acct.Stamp})
	if err != nil {
		return tokenResponse{}, s.fail(ctx, "issue access token", err)
	}
	return tokenResponse{AccessToken: tok, TokenType: "Bearer",
		ExpiresIn: int(resourceapi.AccessTokenTTL / time.Second), Scope: scope}, nil
}

// revoke is the revocation endpoint (RFC 7009). Revoking a refresh token
// revokes its family. Any other token, unknown or an access token, is
// answered 200 as the RFC asks (section 2.2): an access token is a stateless
// JWT, valid until it expires (at most resourceapi.AccessTokenTTL) or its
// user's security stamp changes (DELETE /api/users/{id}/sessions ends them
// all). token_type_hint is accepted and not needed.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	form, e := readForm(w, r)
	if e == nil {
		var client resourceapi.OAuthClient
		client, e = s.authenticateClient(r, form)
		if e == nil {
			e = s.revokeToken(r.Context(), form, client)
		}
	}
	if e != nil {
		writeError(w, e)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revokeToken(ctx context.Context, form url.Values, client resourceapi.OAuthClient) *oauthError {
	tok := form.Get("token")
	if tok == "" {
		return badRequest(errInvalidRequest, "token is required")
	}
	if len(tok) > maxToken {
		return nil // no token of this server is that long
	}
	if err := s.store.RevokeRefreshToken(ctx, resourceapi.HashToken(tok), client.ClientID(), s.now()); err != nil {
		return s.fail(ctx, "revoke refresh token", err)
	}
	return nil
}

// validVerifier checks a PKCE code_verifier's form (RFC 7636 section 4.1).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// validChallenge checks an S256 code_challenge's form: the base64url
// encoding, unpadded, of a SHA-256, which is 43 characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// pkceMatches reports whether verifier hashes to challenge (S256).
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
