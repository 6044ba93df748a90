package http

import (
	"net/http"
	"strings"
)

// CORS header values. Authorization and X-API-Key carry credentials, the
// conditional headers make optimistic concurrency usable from a browser, and
// the exposed headers are those a script needs to read: validators, where a
// created record lives, correlation, version and rate limits.
const (
	corsAllowHeaders  = "Accept, Authorization, Content-Type, Idempotency-Key, If-Match, If-Modified-Since, If-None-Match, If-Unmodified-Since, X-API-Key, X-Request-ID"
	corsExposeHeaders = "API-Version, ETag, Idempotency-Replayed, Link, Location, Preference-Applied, RateLimit, RateLimit-Policy, Retry-After, WWW-Authenticate, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-ID"
	corsMaxAge        = "600" // seconds a browser may reuse a preflight
)

// cors lets scripts from the configured origins call the API. With no
// origins configured (the default) it adds nothing: browsers then keep
// cross-origin scripts out. "*" allows every origin; credentials are sent
// as headers, never cookies, so Access-Control-Allow-Credentials is not
// needed.
//
// A preflight is answered by the router like any OPTIONS request (200, Allow
// listing the methods of the path); cors only adds the CORS headers, copying
// Allow into Access-Control-Allow-Methods, so the two can never disagree.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.corsOrigins) == 0 {
		return next
	}
	allowAll := false
	allowed := make(map[string]bool, len(s.corsOrigins))
	for _, o := range s.corsOrigins {
		o = strings.TrimSuffix(strings.TrimSpace(o), "/")
		allowAll = allowAll || o == "*"
		allowed[strings.ToLower(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		addVary(h, "Origin")
		origin := headerValue(r.Header, "Origin")
		if origin == "" || !(allowAll || allowed[strings.ToLower(origin)]) {
			next.ServeHTTP(w, r)
			return
		}
		if allowAll {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if r.Method == http.MethodOptions && headerValue(r.Header, "Access-Control-Request-Method") != "" {
			addVary(h, "Access-Control-Request-Method")
			addVary(h, "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			next.ServeHTTP(&preflightWriter{ResponseWriter: w}, r)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}

// preflightWriter copies the Allow header the router sets into
// Access-Control-Allow-Methods as the response goes out.
type preflightWriter struct {
	http.ResponseWriter
	wroteHeader bool
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (pw *preflightWriter) Unwrap() http.ResponseWriter { return pw.ResponseWriter }

func (pw *preflightWriter) WriteHeader(code int) {
	if code >= 200 {
		pw.wroteHeader = true
	}
	h := pw.Header()
	if allow := headerValue(h, "Allow"); allow != "" && code < 300 {
		h.Set("Access-Control-Allow-Methods", allow)
	}
	pw.ResponseWriter.WriteHeader(code)
}

func (pw *preflightWriter) Write(p []byte) (int, error) {
	if !pw.wroteHeader {
		pw.WriteHeader(http.StatusOK)
	}
	return pw.ResponseWriter.Write(p)
}
