package http

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// rateLimit counts every request under /api, /graphql, /oauth and /metrics
// (which takes credentials too) against a
// budget: the caller's (by user id) when the request carries a valid
// credential, else its client address's. Requests with a bad credential
// count against their address too, so guessing keys or passwords spends a
// budget like anything else. Every response under those prefixes, errors,
// 404 and 405 included, says where the budget stands (X-RateLimit-Limit,
// -Remaining, -Reset); a request over it gets 429 RATE_LIMITED with
// Retry-After and goes no further.
//
// A password costs more to verify than anything else a request does, so
// the address pays before any is verified, whoever the credential turns
// out to be: the request carries its address's budget in its context
// (resourceapi.WithClientBudget), from which the Authenticator takes one
// request before it verifies a password (HTTP Basic on /api and /graphql,
// a WebSocket upgrade's or its connection_init's, the OAuth password grant
// and sign-in page), and refuses without verifying once it is spent. That
// one request is also the request's own count when its credential is not
// valid; a valid one is counted against its user, whose budget the headers
// then report.
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
		var budget *resourceapi.ClientBudget
		if mayVerifyPassword(r, kind) {
			budget = resourceapi.NewClientBudget(s.limiter, s.clientIP(r).String())
			r = r.WithContext(resourceapi.WithClientBudget(r.Context(), budget))
		}
		if kind != "/oauth" { // /oauth authenticates clients, not callers
			s.identify(r)
		}
		var d resourceapi.RateDecision
		var err error
		var key string
		switch c := infoFrom(r).caller; {
		case c != nil && c.UserID != 0:
			key = resourceapi.UserKey(c)
			d, err = s.limiter.AllowN(r.Context(), key, 1)
		case budget != nil:
			key = resourceapi.ClientKey(budget.Client())
			d, err = budget.Count(r.Context())
		default:
			key = resourceapi.ClientKey(s.clientIP(r).String())
			d, err = s.limiter.AllowN(r.Context(), key, 1)
		}
		if err != nil {
			s.logger.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter failed; request served unlimited",
				slog.String("request_id", infoFrom(r).id), slog.String("err", err.Error()))
			next.ServeHTTP(w, r)
			return
		}
		if d.Allowed {
			d = s.debts.settle(r.Context(), s.limiter, key, d)
		}
		setRateLimitHeaders(w.Header(), &infoFrom(r).limits, d, time.Now())
		if !d.Allowed {
			if s.observer != nil {
				s.observer.RateLimited()
			}
			s.writeError(w, r, &resourceapi.Error{Code: resourceapi.CodeRateLimited, RetryAfter: d.RetryAfter,
				Message: "Too many requests; retry after the time in Retry-After"})
			return
		}
		if kind == "/graphql" {
			r = r.WithContext(resourceapi.WithRateCharge(r.Context(), s.charge(key, d.Remaining)))
		}
		next.ServeHTTP(w, r)
	})
}

// charge returns the function that takes what a request cost beyond itself
// (resourceapi.ChargeRate) from the budget under key: as much of it as the
// budget held when the request was admitted (left) and still holds, so that a
// costly request spends the budget instead of being refused after it ran;
// what the budget no longer held is owed (debts), paid before the key's next
// request is admitted. The next request's headers show it.
func (s *Server) charge(key string, left int) func(n int) {
	return func(n int) {
		if n = min(n, left); n <= 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the request may be gone
		defer cancel()
		// A limiter takes n only when n fit, and other requests of the
		// caller may have spent the budget meanwhile: take what is left.
		d, err := s.limiter.AllowN(ctx, key, 0)
		if err == nil {
			take := min(n, d.Remaining)
			s.debts.add(key, n-take)
			if take <= 0 {
				return
			}
			_, err = s.limiter.AllowN(ctx, key, take)
		}
		if err != nil {
			s.logger.LogAttrs(ctx, slog.LevelWarn, "rate limiter failed to charge a request's cost", slog.String("err", err.Error()))
		}
	}
}

// mayVerifyPassword reports whether serving r may verify a password, so
// that it must carry its address's budget: HTTP Basic; a WebSocket upgrade,
// whose connection_init may carry Basic; the OAuth endpoints (the password
// grant, the sign-in page); and REST writes, where a user changing their own
// password or email confirms it with their current one. Other requests (a
// read, or a GraphQL request, with an API key or a bearer token) verify
// none, and skip the cost of a context of their own.
func mayVerifyPassword(r *http.Request, kind string) bool {
	if kind == "/oauth" || headerValue(r.Header, "Upgrade") != "" {
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if kind == "/api" {
			return true
		}
	}
	for _, v := range r.Header["Authorization"] {
		if scheme, _, _ := strings.Cut(strings.TrimSpace(v), " "); strings.EqualFold(scheme, "Basic") {
			return true
		}
	}
	return false
}

// ceilUnix returns the reset time in whole seconds, rounded up so that a
// client waiting until then finds the budget whole.
func ceilUnix(d resourceapi.RateDecision) int64 {
	return int64(math.Ceil(float64(d.Reset.UnixNano()) / 1e9))
}

// limitedPrefix returns the limited prefix path falls under ("/api",
// "/graphql", "/oauth" or "/metrics"), or "".
func limitedPrefix(path string) string {
	for _, p := range [...]string{"/api", "/graphql", "/oauth", "/metrics"} {
		if rest, ok := strings.CutPrefix(path, p); ok && (rest == "" || rest[0] == '/') {
			return p
		}
	}
	return ""
}

// maxDebtors bounds the keys that may owe at once; past it a new debt is
// forgiven (the budget was spent all the same).
const maxDebtors = 100_000

// debts are what callers' requests cost beyond what their budget held when
// charged (Server.charge), kept by this instance: a limiter takes requests
// only while they fit, so a response that cost more than was left would
// otherwise let a caller have one more costly response built for every
// request its budget refills. A debt is paid from the budget before the
// key's next request is served; while it cannot be, the request is refused.
type debts struct {
	mu sync.Mutex
	m  map[string]int
}

// add records that key owes n more requests.
func (d *debts) add(key string, n int) {
	if n <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[string]int)
	}
	if _, ok := d.m[key]; !ok && len(d.m) >= maxDebtors {
		return
	}
	d.m[key] += n
}

// settle pays what key owes from its budget, given dec, the decision that
// admitted its request, and returns the decision the request stands on:
// refused, with the time until the rest could be paid, when the budget does
// not cover the debt.
func (d *debts) settle(ctx context.Context, l resourceapi.RateLimiter, key string, dec resourceapi.RateDecision) resourceapi.RateDecision {
	d.mu.Lock()
	owed := d.m[key]
	d.mu.Unlock()
	if owed <= 0 {
		return dec
	}
	pay := min(owed, max(dec.Remaining, 0))
	if pay > 0 {
		if next, err := l.AllowN(ctx, key, pay); err == nil && next.Allowed {
			dec = next
		} else {
			pay = 0
		}
	}
	d.mu.Lock()
	if d.m[key] -= pay; d.m[key] <= 0 {
		delete(d.m, key)
	}
	left := d.m[key]
	d.mu.Unlock()
	if left <= 0 {
		return dec
	}
	// The budget refills evenly: Limit requests by Reset when it holds
	// none, so one every (Reset - now) / Limit.
	every := time.Second
	if dec.Limit > 0 {
		if until := time.Until(dec.Reset); until > 0 {
			every = max(until/time.Duration(dec.Limit), time.Millisecond)
		}
	}
	dec.Allowed, dec.Remaining = false, 0
	dec.RetryAfter = max(time.Duration(left)*every, time.Second)
	return dec
}

// rateLimitPolicy names the one quota policy of the API in the standard
// fields: each caller's budget (by user, or by client address).
const rateLimitPolicy = `"caller"`

// rateLimitHeaders holds the values of the five rate-limit headers of a
// response (setRateLimitHeaders), in the request's shared state: each
// header a sub-slice of capacity 1, so that adding a value to one
// (Header.Add) copies instead of writing into the next.
type rateLimitHeaders [5]string

// setRateLimitHeaders sets the rate-limit headers of a response from d:
// X-RateLimit-Limit, -Remaining and -Reset (the time of the reset in Unix
// seconds, rounded up so that a client waiting until then finds the budget
// whole), and the fields of draft-ietf-httpapi-ratelimit-headers (draft 10,
// structured fields, RFC 9651) from the same decision:
//
//	RateLimit-Policy: "caller";q=<limit>;w=<window seconds>
//	RateLimit: "caller";r=<remaining>;t=<seconds until the budget is whole>
//
// q is X-RateLimit-Limit and r X-RateLimit-Remaining; t counts the seconds
// from now to the reset that X-RateLimit-Reset gives as a time, rounded up.
// The five values are substrings of one string, set into the map without
// canonicalizing (the keys are canonical): one allocation for all five.
func setRateLimitHeaders(h http.Header, vals *rateLimitHeaders, d resourceapi.RateDecision, now time.Time) {
	var buf [160]byte
	b := buf[:0]
	var ends [5]int
	b = strconv.AppendInt(b, int64(d.Limit), 10)
	ends[0] = len(b)
	remaining := int64(max(d.Remaining, 0))
	b = strconv.AppendInt(b, remaining, 10)
	ends[1] = len(b)
	b = strconv.AppendInt(b, ceilUnix(d), 10)
	ends[2] = len(b)
	b = append(b, rateLimitPolicy+";q="...)
	b = strconv.AppendInt(b, int64(d.Limit), 10)
	if w := int64(math.Ceil(d.Window.Seconds())); w > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, w, 10)
	}
	ends[3] = len(b)
	t := max(int64(math.Ceil(d.Reset.Sub(now).Seconds())), 0)
	b = append(b, rateLimitPolicy+";r="...)
	b = strconv.AppendInt(b, remaining, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, t, 10)
	ends[4] = len(b)
	all := string(b)
	start := 0
	for i, end := range ends {
		vals[i] = all[start:end]
		start = end
	}
	h["X-Ratelimit-Limit"] = vals[0:1:1]
	h["X-Ratelimit-Remaining"] = vals[1:2:2]
	h["X-Ratelimit-Reset"] = vals[2:3:3]
	h["Ratelimit-Policy"] = vals[3:4:4]
	h["Ratelimit"] = vals[4:5:5]
}
