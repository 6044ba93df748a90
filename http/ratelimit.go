package http

import (
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// rateLimit counts every request under /api, /graphql and /oauth against a
// budget: the caller's (by user id) when the request carries a valid
// credential, else its client address's. Requests with a bad credential
// count against their address too, so guessing keys or passwords spends a
// budget like anything else. Every response under those prefixes, errors,
// 404 and 405 included, says where the budget stands (X-RateLimit-Limit,
// -Remaining, -Reset); a request over it gets 429 RATE_LIMITED with
// Retry-After and goes no further.
//
// When the limiter cannot decide (its backend is down and it has no
// fallback), the request is served without the headers and the failure is
// logged: an outage of the limiter must not become an outage of the API.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := limitedPrefix(r.URL.Path)
		if kind == "" {
			next.ServeHTTP(w, r)
			return
		}
		var key string
		if kind != "/oauth" { // /oauth authenticates clients, not callers
			s.identify(r)
		}
		if c := infoFrom(r).caller; c != nil && c.UserID != 0 {
			key = "user:" + strconv.FormatInt(c.UserID, 10)
		} else {
			key = "addr:" + s.clientIP(r).String()
		}
		d, err := s.limiter.AllowN(r.Context(), key, 1)
		if err != nil {
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter failed; request served unlimited",
				slog.String("request_id", infoFrom(r).id), slog.String("err", err.Error()))
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h["X-Ratelimit-Limit"] = []string{strconv.Itoa(d.Limit)}
		h["X-Ratelimit-Remaining"] = []string{strconv.Itoa(max(d.Remaining, 0))}
		h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(ceilUnix(d), 10)}
		if !d.Allowed {
			s.writeError(w, r, &resourceapi.Error{Code: resourceapi.CodeRateLimited, RetryAfter: d.RetryAfter,
				Message: "Too many requests; retry after the time in Retry-After"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ceilUnix returns the reset time in whole seconds, rounded up so that a
// client waiting until then finds the budget whole.
func ceilUnix(d resourceapi.RateDecision) int64 {
	return int64(math.Ceil(float64(d.Reset.UnixNano()) / 1e9))
}

// limitedPrefix returns the limited prefix path falls under ("/api",
// "/graphql" or "/oauth"), or "".
func limitedPrefix(path string) string {
	for _, p := range [...]string{"/api", "/graphql", "/oauth"} {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/') {
			return p
		}
	}
	return ""
}
