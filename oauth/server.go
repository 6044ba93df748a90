// Package oauth is the service's OAuth 2.0 authorization server (RFC 6749):
// the token endpoint with the password, client_credentials, refresh_token and
// authorization_code (PKCE S256 only) grants, the sign-in and consent page of
// the code flow, token revocation (RFC 7009) and the server's metadata
// document (RFC 8414).
//
// It translates HTTP to the domain and back. Who a user is, how a password
// is checked and when guessing is throttled are the resourceapi.Authenticator's
// rules; this package holds the rules of the protocol (which client may use
// which grant, PKCE, redirect URIs, single-use codes, rotating refresh
// tokens), each in one place.
//
// Scope model: the server knows one scope, "api", meaning "act as the user,
// with the user's own roles and permissions, read from the store on every
// request". It is the default when a request names none; any other scope is
// invalid_scope. Tokens carry no permissions of their own, so a narrower
// scope could not be enforced without changing the access token, and is not
// offered.
//
// Lifetimes: access tokens (stateless JWTs) last resourceapi.AccessTokenTTL
// and cannot be revoked before they expire; codes resourceapi.CodeTTL;
// refresh tokens resourceapi.RefreshTokenTTL from their issue, each use
// returning a new one (rotation).
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// ScopeAPI is the one scope the server grants: acting as the user with the
// user's own permissions.
const ScopeAPI = "api"

// Limits on what a request may carry. Every value the server reads is
// bounded before it is used.
const (
	maxForm        = 16 << 10 // bytes of a form body
	maxQuery       = 8 << 10  // bytes of an authorization request's query
	maxParams      = 32       // parameters in one request
	maxValue       = 4096     // bytes of any one parameter
	maxClientID    = 128
	maxSecret      = 256
	maxToken       = 256 // a code, a refresh token, a token to revoke
	maxState       = 2048
	maxRedirectURI = 2000
	maxScope       = 256
)

// Config is what a Server is made from.
type Config struct {
	// Store keeps clients, codes and refresh tokens.
	Store resourceapi.OAuthStore
	// Auth checks passwords (with its throttling) and reads accounts.
	Auth resourceapi.Authenticator
	// Tokens issues the access tokens.
	Tokens resourceapi.Tokens
	// Issuer is the server's issuer identifier (RFC 8414), an absolute
	// https URL without query or fragment, e.g. https://api.example.com.
	// Set it in production: when empty, it is derived from each request's
	// scheme and Host header, which is right only when clients reach the
	// server directly.
	Issuer string
	// Now is the clock; nil is time.Now.
	Now resourceapi.Clock
	// Logger receives server errors and security events (a reused code or
	// refresh token); never a secret, a code or a token. Nil discards.
	Logger *slog.Logger
	// CSRFKey keys the sign-in form's CSRF tokens. Nil draws a random key,
	// which is right for one instance; instances behind one address need
	// the same key (at least 32 bytes), or a form served by one is refused
	// by another.
	CSRFKey []byte
	// ClientIP returns the address a request comes from, for throttling
	// password guesses; nil uses the connection's remote address. The HTTP
	// server passes its own, which knows the trusted proxies.
	ClientIP func(*http.Request) string
	// RefreshReuseGrace is how long after a refresh token's rotation a
	// second use of it is refused without revoking its family (taken for a
	// client that sent two refreshes at once), at most
	// resourceapi.MaxRefreshReuseGrace. The default, 0, revokes the family,
	// the newest token included, on any reuse, as RFC 9700 section 4.14.2
	// asks: if a thief rotated first, the legitimate client's reuse ends
	// the thief's tokens too.
	RefreshReuseGrace time.Duration
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	store    resourceapi.OAuthStore
	auth     resourceapi.Authenticator
	tokens   resourceapi.Tokens
	issuer   string
	now      resourceapi.Clock
	log      *slog.Logger
	csrfKey  []byte
	clientIP func(*http.Request) string
	pages    *template.Template
	// reuseGrace is Config.RefreshReuseGrace, within its bounds.
	reuseGrace time.Duration
}

// NewServer returns a Server for cfg.
func NewServer(cfg Config) *Server {
	s := &Server{store: cfg.Store, auth: cfg.Auth, tokens: cfg.Tokens,
		issuer: strings.TrimSuffix(cfg.Issuer, "/"), now: cfg.Now, log: cfg.Logger,
		csrfKey: cfg.CSRFKey, clientIP: cfg.ClientIP, pages: pages,
		reuseGrace: min(max(cfg.RefreshReuseGrace, 0), resourceapi.MaxRefreshReuseGrace)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if len(s.csrfKey) == 0 {
		s.csrfKey = make([]byte, 32)
		rand.Read(s.csrfKey)
	}
	if s.clientIP == nil {
		s.clientIP = remoteIP
	}
	return s
}

// Handler returns the handler of the server's endpoints, at their full
// paths: mount it for /oauth/ and /.well-known/oauth-authorization-server.
//
//	POST /oauth/token                              token endpoint (RFC 6749 section 3.2)
//	GET  /oauth/authorize, POST /oauth/authorize   sign-in and consent page (section 3.1)
//	POST /oauth/revoke                             revocation (RFC 7009)
//	GET  /.well-known/oauth-authorization-server   metadata (RFC 8414)
//
// Every response carries Cache-Control: no-store and Pragma: no-cache, but
// the metadata, which may be cached for an hour.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", s.token)
	mux.HandleFunc("POST /oauth/revoke", s.revoke)
	mux.HandleFunc("GET /oauth/authorize", s.authorizeGet)
	mux.HandleFunc("POST /oauth/authorize", s.authorizePost)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Pragma", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// Error is an OAuth error response (RFC 6749 section 5.2): a status, an
// error code and a description safe to show. It never holds a secret, a
// code or a token.
type oauthError struct {
	status int
	code   string
	desc   string
	// basic asks the client for HTTP Basic credentials (WWW-Authenticate),
	// for invalid_client when the client tried Basic (section 5.2).
	basic      bool
	retryAfter time.Duration
}

// RFC 6749 error codes.
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errInvalidGrant            = "invalid_grant"
	errUnauthorizedClient      = "unauthorized_client"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errInvalidScope            = "invalid_scope"
	errAccessDenied            = "access_denied"
	errUnsupportedResponseType = "unsupported_response_type"
	errServerError             = "server_error"
)

func badRequest(code, desc string) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: code, desc: desc}
}

var errServer = &oauthError{status: http.StatusInternalServerError, code: errServerError,
	desc: "The server could not complete the request; try again later"}

// fail logs err, which must not reach the client, and returns the generic
// server error.
func (s *Server) fail(ctx context.Context, what string, err error) *oauthError {
	s.log.ErrorContext(ctx, "oauth: "+what, "err", err)
	return errServer
}

// writeError writes e as JSON.
func writeError(w http.ResponseWriter, e *oauthError) {
	if e.basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauth", charset="UTF-8"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, e.status, struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{e.code, e.desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the server's own fixed types reach here.
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// knownParams are the parameters the server reads; only these names are
// ever echoed in an error description.
var knownParams = map[string]bool{
	"grant_type": true, "client_id": true, "client_secret": true, "username": true, "password": true,
	"scope": true, "code": true, "code_verifier": true, "redirect_uri": true, "refresh_token": true,
	"token": true, "token_type_hint": true, "response_type": true, "state": true, "code_challenge": true,
	"code_challenge_method": true, "email": true, "decision": true, "csrf_token": true,
}

// readForm reads the form-encoded body of a POST: at most maxForm bytes,
// nothing in the URL (credentials never travel there), no parameter twice
// (section 3.2), each value at most maxValue bytes.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, badRequest(errInvalidRequest, "The request body must be application/x-www-form-urlencoded")
	}
	if r.URL.RawQuery != "" {
		return nil, badRequest(errInvalidRequest, "Parameters must be sent in the request body, not in the URL")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, badRequest(errInvalidRequest, "The request body is too large")
		}
		return nil, badRequest(errInvalidRequest, "The request body is not a valid form")
	}
	if e := checkParams(r.PostForm); e != nil {
		return nil, e
	}
	return r.PostForm, nil
}

// checkParams refuses repeated and oversized parameters.
func checkParams(v url.Values) *oauthError {
	if len(v) > maxParams {
		return badRequest(errInvalidRequest, "The request has too many parameters")
	}
	for name, vals := range v {
		shown := "A parameter"
		if knownParams[name] {
			shown = name
		}
		if len(vals) > 1 {
			return badRequest(errInvalidRequest, shown+" is repeated")
		}
		if len(name) > maxValue || len(vals) == 1 && len(vals[0]) > maxValue {
			return badRequest(errInvalidRequest, shown+" is too long")
		}
	}
	return nil
}

// authenticateClient identifies and authenticates the client of a token or
// revocation request (RFC 6749 section 2.3.1): HTTP Basic with the
// form-urlencoded client_id and secret, or the client_id and client_secret
// form fields, not both. A public client presents its client_id alone (or
// Basic with an empty password). Secrets are compared as hashes, in
// constant time.
func (s *Server) authenticateClient(r *http.Request, form url.Values) (resourceapi.OAuthClient, *oauthError) {
	var id, secret string
	basic := false
	switch authz := r.Header.Values("Authorization"); len(authz) {
	case 0:
		id, secret = form.Get("client_id"), form.Get("client_secret")
	case 1:
		basic = true
		var ok bool
		id, secret, ok = parseBasic(authz[0])
		if !ok {
			return resourceapi.OAuthClient{}, &oauthError{status: http.StatusUnauthorized, code: errInvalidClient,
				desc: "Client authentication failed: send HTTP Basic with the client_id and client_secret", basic: true}
		}
		if form.Has("client_secret") {
			return resourceapi.OAuthClient{}, badRequest(errInvalidRequest,
				"The request authenticates the client twice (HTTP Basic and client_secret); use one")
		}
		if v := form.Get("client_id"); v != "" && v != id {
			return resourceapi.OAuthClient{}, badRequest(errInvalidRequest, "client_id differs from the HTTP Basic user name")
		}
	default:
		return resourceapi.OAuthClient{}, badRequest(errInvalidRequest, "The request has more than one Authorization header")
	}
	failed := &oauthError{status: http.StatusUnauthorized, code: errInvalidClient, desc: "Client authentication failed", basic: basic}
	if id == "" {
		failed.desc = "Client authentication is required: send client_id (and client_secret) or HTTP Basic"
		return resourceapi.OAuthClient{}, failed
	}
	if len(id) > maxClientID || len(secret) > maxSecret {
		return resourceapi.OAuthClient{}, failed
	}
	client, err := s.store.Client(r.Context(), id)
	if err != nil {
		if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
			return resourceapi.OAuthClient{}, failed
		}
		return resourceapi.OAuthClient{}, s.fail(r.Context(), "read client", err)
	}
	if client.Public() {
		if secret != "" {
			failed.desc = "Client authentication failed: a public client has no secret"
			return resourceapi.OAuthClient{}, failed
		}
		return client, nil
	}
	// Hashing first makes the comparison's length and time independent of
	// the secret sent; a client without a stored hash never matches.
	sent := resourceapi.HashToken(secret)
	if secret == "" || client.SecretHash == "" ||
		subtle.ConstantTimeCompare([]byte(sent), []byte(client.SecretHash)) != 1 {
		return resourceapi.OAuthClient{}, failed
	}
	return client, nil
}

// parseBasic reads an HTTP Basic header whose user name and password are
// form-urlencoded (RFC 6749 section 2.3.1).
func parseBasic(h string) (id, secret string, ok bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "Basic") || len(rest) > 4*(maxClientID+maxSecret) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false
	}
	user, pass, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false
	}
	if id, err = url.QueryUnescape(user); err != nil {
		return "", "", false
	}
	if secret, err = url.QueryUnescape(pass); err != nil {
		return "", "", false
	}
	return id, secret, true
}

// parseScope returns the scope a request asks for: ScopeAPI when it names
// none, and false when it names any other.
func parseScope(s string) (string, bool) {
	if len(s) > maxScope {
		return "", false
	}
	for _, tok := range strings.Fields(s) {
		if tok != ScopeAPI {
			return "", false
		}
	}
	return ScopeAPI, true
}

var errBadScope = badRequest(errInvalidScope, `The only scope is "api" (act as the user, with the user's permissions)`)

// issuerFor returns the issuer identifier: the configured one, or this
// request's scheme and host.
func (s *Server) issuerFor(r *http.Request) string {
	if s.issuer != "" {
		return s.issuer
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// validHost accepts host[:port] made of the characters a DNS name, an IPv4
// or a bracketed IPv6 address uses, so that a hostile Host header cannot
// shape the URLs the server writes.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return false
		}
	}
	return true
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// metadata serves the authorization server metadata (RFC 8414).
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	iss := s.issuerFor(r)
	auth := []string{"client_secret_basic", "client_secret_post", "none"}
	h := w.Header()
	h.Del("Pragma")
	if s.issuer != "" {
		h.Set("Cache-Control", "public, max-age=3600")
	} else {
		// The issuer comes from this request's Host (and scheme): a shared
		// cache must not hand one host's document to a client of another,
		// whatever it keys by. Only the client itself may keep it.
		h.Set("Cache-Control", "private, max-age=3600")
		h.Add("Vary", "Host")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/oauth/authorize",
		"token_endpoint":                                 iss + "/oauth/token",
		"revocation_endpoint":                            iss + "/oauth/revoke",
		"grant_types_supported":                          resourceapi.GrantTypes(),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          auth,
		"revocation_endpoint_auth_methods_supported":     auth,
		"scopes_supported":                               []string{ScopeAPI},
		"authorization_response_iss_parameter_supported": true,
	})
}
