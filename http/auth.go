package http

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// identify resolves who makes a request from its credential (X-API-Key,
// Authorization: Bearer or Basic) and records the outcome in the request's
// shared state: the caller, or why the credential is refused. It refuses
// nothing itself: the rate limiter that follows keys its budget on the
// outcome (requests with bad credentials count against their address), and
// then requireCaller (on /api routes) or the GraphQL resolvers decide.
//
// Credentials are only ever read from headers; one in the URL is refused
// outright, so that it does not end up in logs and histories as if it worked.
func (s *Server) identify(r *http.Request) {
	info := infoFrom(r)
	if info.identified {
		return
	}
	info.identified = true
	if q := r.URL.RawQuery; q != "" && credentialInQuery(q) {
		info.authErr = errCredentialInURL
		s.authFailed(resourceapi.SchemeNone)
		return
	}
	h := r.Header
	cred, err := ParseCredential(h["X-Api-Key"], h["Authorization"])
	if err != nil {
		info.authErr = err
		s.authFailed(resourceapi.SchemeNone)
		return
	}
	if cred.Scheme == resourceapi.SchemeNone {
		info.caller = benchAnonymous
		return
	}
	if cred.Scheme == resourceapi.SchemeBasic {
		// Only password guesses are throttled by address: formatting it
		// for every API key and token would cost an allocation each.
		cred.Client = s.clientIP(r).String()
	}
	info.caller, info.authErr = s.service.Authenticate(r.Context(), cred)
	if info.authErr != nil && resourceapi.ErrorCode(info.authErr) != resourceapi.CodeUnavailable {
		s.authFailed(cred.Scheme)
	}
}

// authFailed tells the observer of a refused credential.
func (s *Server) authFailed(scheme resourceapi.Scheme) {
	if s.observer != nil {
		s.observer.AuthFailed(schemeLabel(scheme))
	}
}

// benchAnonymous is the caller of a request without a credential: nil, so
// that such a request is refused, except in a binary built with the
// benchnoauth tag (bench_noauth.go), which bench/auth.sh builds to measure
// what authentication costs against the same server without it. Never ship
// such a binary: it serves every request without a credential as an admin.
var benchAnonymous *resourceapi.Caller

var errCredentialInURL = resourceapi.Errorf(resourceapi.CodeBadRequest,
	"Credentials are accepted only in the X-API-Key or Authorization header, never in the URL")

// credentialInQuery reports whether a query string carries a parameter that
// clients use for credentials (access_token, as RFC 6750 section 2.3 allows
// and this service does not, or api_key).
func credentialInQuery(q string) bool {
	for rest := q; rest != ""; {
		var kv string
		kv, rest, _ = strings.Cut(rest, "&")
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "access_token", "api_key", "apikey", "x-api-key":
			return true
		}
	}
	return false
}

// requireCaller wraps every /api route: a request proceeds with its caller in
// the context, or is answered with why it may not: no credential (401
// UNAUTHENTICATED), a refused one (403 INVALID_TOKEN, or 400 for two).
func (s *Server) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.identify(r)
		info := infoFrom(r)
		switch {
		case info.authErr != nil:
			s.writeError(w, r, info.authErr)
		case info.caller == nil:
			s.writeError(w, r, resourceapi.ErrUnauthenticated())
		default:
			// The request's context is its info (requestID), which carries
			// the caller from now on: no context value, no copy of the
			// request.
			info.required = true
			if s.limiter == nil && mayVerifyPassword(r, "/api") {
				// Requests are not limited, but a password checked here (a
				// current password) is still throttled by where it comes
				// from, as the rate limit's budget would have said.
				ctx := resourceapi.WithClientBudget(r.Context(), resourceapi.NewClientBudget(nil, s.clientIP(r).String()))
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
		}
	})
}

// withIdentity passes every request on with what identify found in its
// context: the caller, or why its credential was refused
// (resourceapi.CredentialErrorFrom). It refuses nothing: the handler
// decides (GraphQL serves some fields without a credential).
func (s *Server) withIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.identify(r)
		info := infoFrom(r)
		ctx := r.Context()
		if info.caller != nil {
			ctx = resourceapi.WithCaller(ctx, info.caller)
		}
		if info.authErr != nil {
			ctx = resourceapi.WithCredentialError(ctx, info.authErr)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// clientIP returns the address of the client (see ClientAddr).
func (s *Server) clientIP(r *http.Request) netip.Addr { return ClientAddr(r, s.trustedProxies) }

// ClientAddr returns the address of the client of r: the peer, unless the
// peer is one of the trusted proxies, in which case the right-most
// X-Forwarded-For address that is not itself a trusted proxy. Addresses a
// client writes into the header are believed only as far as a trusted proxy
// vouches for them. Package oauth uses it too (through cmd), so that both
// throttle the same address.
func ClientAddr(r *http.Request, trustedProxies []netip.Prefix) netip.Addr {
	trusted := func(a netip.Addr) bool {
		for _, p := range trustedProxies {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	peer := remoteAddr(r)
	if len(trustedProxies) == 0 || !trusted(peer) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return addr // a malformed hop: trust nothing before it
			}
			addr = a.Unmap()
			if !trusted(addr) {
				return addr
			}
		}
	}
	return addr
}

// remoteAddr returns the peer address of the connection.
func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return a.Unmap()
}
