package resourceapi

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// RateLimiter admits requests against a budget per key: a caller's user id, or
// a client address for requests without a valid credential. Implementations
// live in package inmem (one process) and package redis (shared by every
// instance that uses the same Redis).
//
// The budget is a token bucket (GCRA): Limit requests at once, refilled evenly
// over the limiter's window, so a caller that stays under Limit per window is
// never refused.
type RateLimiter interface {
	// AllowN takes n requests from key's budget when they fit, and reports the
	// budget after the call. n = 0 takes nothing and only reports. An error
	// means the limiter could not decide (its backend is unreachable); the
	// decision then is the zero value and callers choose what to do.
	AllowN(ctx context.Context, key string, n int) (RateDecision, error)
}

// RateDecision is a rate limiter's answer for one key.
type RateDecision struct {
	// Allowed reports that the requests were admitted (always true for n = 0
	// while any budget is left).
	Allowed bool
	// Limit is the most requests the key may make at once.
	Limit int
	// Remaining is how many requests the key may still make now.
	Remaining int
	// Reset is when the budget will be whole again if the key makes no more
	// requests.
	Reset time.Time
	// RetryAfter, when Allowed is false, is how long until n requests would
	// fit.
	RetryAfter time.Duration
	// Window is the time over which Limit requests come back, for the
	// policy a transport announces (RateLimit-Policy); 0 when the limiter
	// does not say.
	Window time.Duration
}

// ClientBudget is the request budget of the client address one request
// comes from, as the transport that limits requests keeps it (package
// http's rate limit, under the key it gives). It travels in the request's
// context (WithClientBudget), so that the Authenticator and the Service take
// from it before they verify a password: a flood of passwords from one
// address, every one refused, spends that address's budget and then stops,
// instead of costing the server a hash each. A credential the Authenticator
// remembers (see AuthConfig.VerifiedTTL) verifies no password and takes
// nothing.
//
// One request takes one request from the budget at most once for itself
// and its first password verification together; each further verification
// it makes (none but a WebSocket connection's, whose connection_init may
// carry a password after the upgrade) takes one more. It is safe for
// concurrent use.
type ClientBudget struct {
	limiter RateLimiter
	client  string

	mu       sync.Mutex
	asked    bool // whether the limiter was asked at all
	taken    int  // requests this request took from the budget
	verified int  // password verifications it made
	last     RateDecision
	lastErr  error
}

// NewClientBudget returns the budget of one request from client (its
// address), kept in l under ClientKey(client). With a nil l, requests are
// not limited, and the budget only says where the request comes from (for
// the throttling of password guesses).
func NewClientBudget(l RateLimiter, client string) *ClientBudget {
	return &ClientBudget{limiter: l, client: client}
}

// ClientKey is the key under which a client address's budget is kept.
func ClientKey(client string) string { return "addr:" + client }

// UserKey is the key under which the budget of c's user is kept:
// "user:<id>". The caller of an account (Account.Caller) has it made once,
// so that a request of a cached account makes no string for it.
func UserKey(c *Caller) string {
	if c.limitKey != "" {
		return c.limitKey
	}
	return userKey(c.UserID)
}

func userKey(id int64) string { return "user:" + strconv.FormatInt(id, 10) }

// Client returns the address of the client the budget is of.
func (b *ClientBudget) Client() string { return b.client }

// Count counts the request itself against the budget, unless a password
// verification of the request already did, and returns the budget as the
// limiter last reported it (refused when it was spent).
func (b *ClientBudget) Count(ctx context.Context) (RateDecision, error) {
	if b.limiter == nil {
		return RateDecision{Allowed: true}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.asked {
		return b.last, b.lastErr
	}
	return b.take(ctx)
}

// Verify takes from the budget for one more password verification, and
// fails with CodeRateLimited when the budget is spent. A limiter that
// cannot decide refuses nothing.
func (b *ClientBudget) Verify(ctx context.Context) error {
	if b.limiter == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.verified < b.taken {
		b.verified++
		return nil
	}
	d, err := b.take(ctx)
	switch {
	case err != nil:
		return nil
	case !d.Allowed:
		return &Error{Code: CodeRateLimited, RetryAfter: max(d.RetryAfter, time.Second),
			Message: "Too many requests; retry after the time in Retry-After"}
	}
	b.verified++
	return nil
}

// take takes one request from the budget. b.mu is held.
func (b *ClientBudget) take(ctx context.Context) (RateDecision, error) {
	d, err := b.limiter.AllowN(ctx, ClientKey(b.client), 1)
	b.asked, b.last, b.lastErr = true, d, err
	if err == nil && d.Allowed {
		b.taken++
	}
	return d, err
}

type clientBudgetKey struct{}

// WithClientBudget returns a context that carries the budget of the
// request's client address.
func WithClientBudget(ctx context.Context, b *ClientBudget) context.Context {
	return context.WithValue(ctx, clientBudgetKey{}, b)
}

// ClientBudgetFrom returns the budget WithClientBudget put in ctx, or nil
// (requests are not limited).
func ClientBudgetFrom(ctx context.Context) *ClientBudget {
	b, _ := ctx.Value(clientBudgetKey{}).(*ClientBudget)
	return b
}

type rateChargeKey struct{}

// WithRateCharge returns a context that carries charge, which takes n more
// requests from the rate budget the request was counted against. The
// transport that limits requests puts it there (package http's rate limit).
func WithRateCharge(ctx context.Context, charge func(n int)) context.Context {
	return context.WithValue(ctx, rateChargeKey{}, charge)
}

// ChargeRate takes n more requests from the rate budget of the caller (or
// client address) whose request ctx belongs to, as many of them as the
// budget still holds, when the request is rate limited; otherwise it does
// nothing. A door charges with it what a request cost beyond the one
// request its rate limit counted: GraphQL charges the bytes a response
// built or was refused (see docs/graphql.md), so that a caller's budget
// bounds the work of its requests, not only their number.
func ChargeRate(ctx context.Context, n int) {
	if n <= 0 {
		return
	}
	if charge, _ := ctx.Value(rateChargeKey{}).(func(int)); charge != nil {
		charge(n)
	}
}
