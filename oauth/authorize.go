package oauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

//go:embed page.html page.css
var pageFiles embed.FS

// pages holds the sign-in page ("signin") and the error page ("error").
var pages = template.Must(template.ParseFS(pageFiles, "page.html"))

// pageCSS is the pages' only style sheet, inlined in a <style> element and
// allowed by its hash in the Content-Security-Policy, so that no other style
// (and no script at all) can run in the page.
var pageCSS, pageCSSHash = func() (template.CSS, string) {
	b, err := pageFiles.ReadFile("page.css")
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return template.CSS(b), "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// authRequest is a validated authorization request (RFC 6749 section
// 4.1.1 with RFC 7636's PKCE parameters).
type authRequest struct {
	client        resourceapi.OAuthClient
	clientID      string
	redirectURI   string
	state         string
	scope         string
	codeChallenge string
}

// pageError is a failure shown on the server's own error page, never sent
// to the redirect URI: the client or its redirect URI is unknown, so the
// server cannot tell where the user could safely be sent (RFC 6749 section
// 4.1.2.1).
type pageError struct {
	status int
	msg    string
}

// parseAuthRequest validates an authorization request: first client_id and
// redirect_uri, whose failures are shown on an error page; then the rest,
// whose failures go back to the client's redirect URI. redirect_uri is
// required, and must equal one of the client's registered URIs exactly
// (no prefix or pattern matching); the token request must repeat it.
func (s *Server) parseAuthRequest(ctx context.Context, p url.Values) (authRequest, *pageError, *oauthError) {
	one := func(name string) (string, bool) {
		v := p[name]
		if len(v) > 1 {
			return "", false
		}
		if len(v) == 0 {
			return "", true
		}
		return v[0], true
	}
	var req authRequest
	id, ok := one("client_id")
	if !ok || id == "" || len(id) > maxClientID {
		return req, &pageError{http.StatusBadRequest, "The application's request does not name it properly (client_id is missing or invalid)."}, nil
	}
	client, err := s.store.Client(ctx, id)
	if err != nil {
		if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
			return req, &pageError{http.StatusBadRequest, "The application that sent you here is not registered with this service."}, nil
		}
		s.log.ErrorContext(ctx, "oauth: read client", "err", err)
		return req, &pageError{http.StatusInternalServerError, "The service could not handle the request. Try again later."}, nil
	}
	uri, ok := one("redirect_uri")
	if !ok || uri == "" || len(uri) > maxRedirectURI || !registered(client, uri) {
		return req, &pageError{http.StatusBadRequest, "The application's request names a return address (redirect_uri) that is missing or not registered for it."}, nil
	}
	req = authRequest{client: client, clientID: id, redirectURI: uri}

	// From here on, errors go back to the application, with its state.
	state, ok := one("state")
	if !ok || len(state) > maxState {
		return req, nil, badRequest(errInvalidRequest, "state is repeated or too long")
	}
	req.state = state
	if e := checkParams(p); e != nil {
		return req, nil, e
	}
	switch rt := p.Get("response_type"); {
	case rt == "":
		return req, nil, badRequest(errInvalidRequest, "response_type is required")
	case rt != "code":
		// The implicit grant (token) is refused: RFC 9700 deprecates it.
		return req, nil, badRequest(errUnsupportedResponseType, "Only response_type=code is supported (the implicit grant is not offered)")
	}
	if !client.Allows(resourceapi.GrantAuthorizationCode) {
		return req, nil, badRequest(errUnauthorizedClient, "This client is not registered for the authorization_code grant")
	}
	challenge, method := p.Get("code_challenge"), p.Get("code_challenge_method")
	switch {
	case challenge == "":
		return req, nil, badRequest(errInvalidRequest, "code_challenge is required: this server requires PKCE with S256")
	case method != "S256":
		return req, nil, badRequest(errInvalidRequest, "code_challenge_method must be S256")
	case !validChallenge(challenge):
		return req, nil, badRequest(errInvalidRequest, "code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)")
	}
	req.codeChallenge = challenge
	scope, ok := parseScope(p.Get("scope"))
	if !ok {
		return req, nil, errBadScope
	}
	req.scope = scope
	return req, nil, nil
}

func registered(c resourceapi.OAuthClient, uri string) bool {
	for _, r := range c.RedirectURIs() {
		if r == uri {
			return true
		}
	}
	return false
}

// authorizeGet shows the sign-in and consent page for a valid request.
func (s *Server) authorizeGet(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQuery {
		s.errorPage(w, &pageError{http.StatusRequestURITooLong, "The application's request is too long."})
		return
	}
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.errorPage(w, &pageError{http.StatusBadRequest, "The application's request is malformed."})
		return
	}
	req, pe, oe := s.parseAuthRequest(r.Context(), params)
	switch {
	case pe != nil:
		s.errorPage(w, pe)
	case oe != nil:
		s.redirectError(w, r, req, oe)
	default:
		s.signInPage(w, r, req, http.StatusOK, "", "")
	}
}

// authorizePost receives the sign-in form: Deny sends the user back with
// access_denied; Allow checks the password and sends the user back with a
// code. A wrong password shows the form again.
func (s *Server) authorizePost(w http.ResponseWriter, r *http.Request) {
	form, fe := readForm(w, r)
	if fe != nil {
		s.errorPage(w, &pageError{http.StatusBadRequest, "The form was not sent properly: " + fe.desc + "."})
		return
	}
	req, pe, oe := s.parseAuthRequest(r.Context(), form)
	if pe != nil {
		s.errorPage(w, pe)
		return
	}
	// The request's own errors cannot occur from the page this server
	// rendered; they are answered as on GET, but only to a form that
	// passes the CSRF check, like everything that follows.
	now := s.now()
	if !s.checkCSRF(r, form, req, now) {
		s.errorPage(w, &pageError{http.StatusForbidden,
			"This sign-in form has expired or was not sent from this service's page. Go back to the application and start again."})
		return
	}
	if oe != nil {
		s.redirectError(w, r, req, oe)
		return
	}
	switch form.Get("decision") {
	case "deny":
		s.redirectError(w, r, req, badRequest(errAccessDenied, "The user denied the request"))
		return
	case "allow":
	default:
		s.redirectError(w, r, req, badRequest(errInvalidRequest, "decision must be allow or deny"))
		return
	}
	email, password := strings.TrimSpace(form.Get("email")), form.Get("password")
	if email == "" || password == "" {
		s.signInPage(w, r, req, http.StatusOK, email, "Enter your email and password.")
		return
	}
	acct, err := s.auth.Login(r.Context(), email, password, s.clientIP(r))
	if err != nil {
		switch e := resourceapi.ErrorOf(err); e.Code {
		case resourceapi.CodeInvalidToken:
			s.signInPage(w, r, req, http.StatusOK, email, "The email or password is incorrect.")
		case resourceapi.CodeRateLimited:
			wait := max(e.RetryAfter, time.Second)
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			s.signInPage(w, r, req, http.StatusTooManyRequests, email,
				"Too many failed sign-in attempts for this account. Try again in "+humanDuration(wait)+".")
		default:
			s.log.ErrorContext(r.Context(), "oauth: sign in", "err", err)
			s.errorPage(w, &pageError{http.StatusInternalServerError, "The service could not handle the request. Try again later."})
		}
		return
	}
	code := rand.Text()
	err = s.store.SaveCode(r.Context(), resourceapi.AuthorizationCode{
		Hash: resourceapi.HashToken(code), ClientID: req.client.ClientID(), UserID: acct.User.ID(),
		RedirectURI: req.redirectURI, CodeChallenge: req.codeChallenge, Scope: req.scope,
		ExpiresAt: now.Add(resourceapi.CodeTTL), Stamp: acct.Stamp,
	})
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth: save code", "err", err)
		s.errorPage(w, &pageError{http.StatusInternalServerError, "The service could not handle the request. Try again later."})
		return
	}
	s.redirect(w, r, req, url.Values{"code": {code}})
}

// redirectError sends the user back to the client with an error (RFC 6749
// section 4.1.2.1).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, req authRequest, e *oauthError) {
	s.redirect(w, r, req, url.Values{"error": {e.code}, "error_description": {e.desc}})
}

// redirect sends the user back to the request's registered redirect URI
// with params, the state and the issuer (RFC 9207, so that a client talking
// to several servers can tell which answered). The URI's own query is kept
// as registered.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, req authRequest, params url.Values) {
	if req.state != "" {
		params.Set("state", req.state)
	}
	params.Set("iss", s.issuerFor(r))
	target := req.redirectURI
	if strings.Contains(target, "?") {
		target += "&" + params.Encode()
	} else {
		target += "?" + params.Encode()
	}
	w.Header().Set("Location", target)
	w.Header().Set("Referrer-Policy", "no-referrer")
	// 303: the browser follows with a GET, also after the form's POST.
	w.WriteHeader(http.StatusSeeOther)
}

// CSRF protection of the sign-in form.
//
// A GET of the page sets a random nonce in a cookie (HttpOnly,
// SameSite=Lax, Path=/oauth, Secure over https) unless the browser already
// has one, and puts in the form a token: the time it was made and an
// HMAC-SHA256, under the server's key, of that time, the nonce and every
// parameter of the authorization request. The POST is accepted only when
// the token is at most csrfTTL old and its HMAC matches the cookie's nonce
// and the parameters posted.
//
// The cookie is what stops a cross-site POST (login CSRF: signing the
// victim's browser in as the attacker): SameSite=Lax keeps it off requests
// that other sites start, and no other site can read or set it, so a token
// the attacker fetched for their own browser does not match the victim's
// nonce. The HMAC ties the token to this one request, so hidden fields
// cannot be changed (another client, redirect URI or challenge) without the
// key, and to a time, so an old page cannot be replayed. Nothing is stored
// on the server, so any instance with the same key accepts the form.
const (
	csrfCookie = "oauth_csrf"
	csrfTTL    = 30 * time.Minute
)

// csrfNonce returns the browser's nonce, setting a new cookie when it has
// none (or a malformed one).
func (s *Server) csrfNonce(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && validNonce(c.Value) {
		return c.Value
	}
	nonce := rand.Text()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: nonce, Path: "/oauth", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil || strings.HasPrefix(s.issuer, "https:")})
	return nonce
}

func validNonce(v string) bool {
	if len(v) != 26 {
		return false
	}
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// csrfMAC is the HMAC of a form made at t for req, under nonce. Each part
// is length-prefixed, so no two different requests hash the same input.
func (s *Server) csrfMAC(nonce string, t int64, req authRequest) []byte {
	m := hmac.New(sha256.New, s.csrfKey)
	var n [binary.MaxVarintLen64]byte
	for _, part := range []string{"oauth-authorize-v1", nonce, strconv.FormatInt(t, 10), req.clientID,
		req.redirectURI, req.state, req.scope, req.codeChallenge} {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))])
		m.Write([]byte(part))
	}
	return m.Sum(nil)
}

func (s *Server) csrfToken(nonce string, now time.Time, req authRequest) string {
	t := now.Unix()
	return strconv.FormatInt(t, 10) + "." + base64.RawURLEncoding.EncodeToString(s.csrfMAC(nonce, t, req))
}

func (s *Server) checkCSRF(r *http.Request, form url.Values, req authRequest, now time.Time) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validNonce(c.Value) {
		return false
	}
	ts, mac, ok := strings.Cut(form.Get("csrf_token"), ".")
	if !ok {
		return false
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	made := time.Unix(t, 0)
	if now.Sub(made) > csrfTTL || made.Sub(now) > time.Minute {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	return err == nil && hmac.Equal(got, s.csrfMAC(c.Value, t, req))
}

// signInData is what the sign-in page shows.
type signInData struct {
	CSS        template.CSS
	ClientName string
	ReturnTo   string
	Email      string
	Error      string
	Hidden     []hiddenField
}

type hiddenField struct{ Name, Value string }

// signInPage renders the sign-in form for req. The authorization request
// travels in hidden fields, checked again on POST and bound to the CSRF
// token.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, req authRequest, status int, email, msg string) {
	nonce := s.csrfNonce(w, r)
	name, _ := req.client.Record["name"].(string)
	returnTo := req.redirectURI
	if u, err := url.Parse(req.redirectURI); err == nil && u.Host != "" {
		returnTo = u.Scheme + "://" + u.Host
	}
	data := signInData{CSS: pageCSS, ClientName: name, ReturnTo: returnTo, Email: email, Error: msg,
		Hidden: []hiddenField{
			{"response_type", "code"},
			{"client_id", req.clientID},
			{"redirect_uri", req.redirectURI},
			{"scope", req.scope},
			{"state", req.state},
			{"code_challenge", req.codeChallenge},
			{"code_challenge_method", "S256"},
			{"csrf_token", s.csrfToken(nonce, s.now(), req)},
		}}
	s.render(w, "signin", status, data, formTarget(req.redirectURI))
}

// errorPage renders an error that is not sent to the client.
func (s *Server) errorPage(w http.ResponseWriter, e *pageError) {
	s.render(w, "error", e.status, struct {
		CSS     template.CSS
		Message string
	}{pageCSS, e.msg}, "")
}

// render writes a page with the headers that keep it to itself: no
// framing, no referrer, no caching, no script, no style but its own, and
// forms that post only here. The browser follows the form's redirect to
// the client under form-action too, so the client's redirect origin
// (target) is allowed as well.
func (s *Server) render(w http.ResponseWriter, name string, status int, data any, target string) {
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("oauth: render page", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	formAction := "'self'"
	if target != "" {
		formAction += " " + target
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+pageCSSHash+
		"; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// formTarget returns the CSP source of a redirect URI: its origin for http
// and https, its scheme for a native app's private scheme. Only characters
// that cannot end a CSP source pass; anything else gives "", and the form
// is then limited to 'self'.
func formTarget(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	src := u.Scheme + ":"
	if u.Scheme == "http" || u.Scheme == "https" {
		src = u.Scheme + "://" + u.Host
		if !validHost(u.Host) {
			return ""
		}
		if strings.HasPrefix(u.Host, "[") {
			// CSP has no syntax for an IPv6 literal ([::1], allowed for
			// loopback redirects): the scheme is the narrowest source.
			src = u.Scheme + ":"
		}
	}
	for _, c := range u.Scheme {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-') {
			return ""
		}
	}
	return src
}

func humanDuration(d time.Duration) string {
	if d <= time.Minute {
		n := int((d + time.Second - 1) / time.Second)
		if n == 1 {
			return "1 second"
		}
		return strconv.Itoa(n) + " seconds"
	}
	n := int((d + time.Minute - 1) / time.Minute)
	return strconv.Itoa(n) + " minutes"
}
