package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
)

// DefaultPrefix goes before every rate limit key when Options.Prefix is
// empty.
const DefaultPrefix = "resourceapi:rl:"

// DefaultTimeout bounds each call to Redis when Options.Timeout is 0.
const DefaultTimeout = 100 * time.Millisecond

// slack absorbs the rounding of Redis's float arithmetic (seconds since 2017
// in a double: steps of about 60 ns) when counting whole requests, so that a
// fresh key reports limit-1 and not limit-2.
const slack = time.Microsecond

var _ resourceapi.RateLimiter = (*RateLimiter)(nil)

// Options configure NewRateLimiter. The zero value is the production default.
type Options struct {
	// Prefix goes before every key; "" is DefaultPrefix. redis_rate puts
	// its own "rate:" before that, so a key k lives at "rate:"+Prefix+k.
	Prefix string
	// Timeout bounds each call to Redis; 0 is DefaultTimeout. It bounds
	// socket reads and writes only on a client with ContextTimeoutEnabled
	// (as Open makes); otherwise the client's ReadTimeout applies.
	Timeout time.Duration
}

// RateLimiter is a resourceapi.RateLimiter whose budgets live in Redis, so
// every instance using the same Redis and Prefix shares them. Each decision
// is one atomic Lua call (redis_rate's GCRA, on Redis's clock): there is no
// read-then-write to race. A key's Redis entry expires once its budget is
// whole again.
type RateLimiter struct {
	limiter  *redis_rate.Limiter
	limit    redis_rate.Limit
	interval time.Duration // the time one request's token takes to come back
	prefix   string
	timeout  time.Duration
}

// NewRateLimiter returns a limiter that lets each key make limit requests at
// once, refilled evenly over window, keeping its state in client. It panics
// when limit or window is not positive (a rate limit of 0 means no limiter,
// which the caller decides).
func NewRateLimiter(client *goredis.Client, limit int, window time.Duration, opts Options) *RateLimiter {
	if limit < 1 || window <= 0 {
		panic(fmt.Sprintf("redis.NewRateLimiter: limit %d per %v, want both positive", limit, window))
	}
	l := &RateLimiter{
		limiter:  redis_rate.NewLimiter(client),
		limit:    redis_rate.Limit{Rate: limit, Burst: limit, Period: window},
		interval: window / time.Duration(limit),
		prefix:   opts.Prefix,
		timeout:  opts.Timeout,
	}
	if l.prefix == "" {
		l.prefix = DefaultPrefix
	}
	if l.timeout <= 0 {
		l.timeout = DefaultTimeout
	}
	return l
}

// AllowN implements resourceapi.RateLimiter. It returns an error when n is
// negative, and when Redis does not answer within the timeout or answers
// with an error.
//
// A call that takes n > Limit is never admitted; its RetryAfter is then what
// GCRA computes (the wait for the whole budget plus n-Limit more tokens).
func (l *RateLimiter) AllowN(ctx context.Context, key string, n int) (resourceapi.RateDecision, error) {
	if n < 0 {
		return resourceapi.RateDecision{}, fmt.Errorf("rate limit: n = %d, want n >= 0", n)
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	res, err := l.limiter.AllowN(ctx, l.prefix+key, l.limit, n)
	if err != nil {
		return resourceapi.RateDecision{}, fmt.Errorf("rate limit: redis: %w", err)
	}
	return l.decision(time.Now(), n, res), nil
}

// decision turns redis_rate's result into a RateDecision with the meaning
// package inmem gives it. redis_rate rounds Remaining down from a float and
// reports 0 on every refusal, and an n = 0 call is never refused, so Remaining
// (and the refusal of n = 0) is computed here from ResetAfter, the one exact
// figure: the key's budget lacks ResetAfter/interval requests.
func (l *RateLimiter) decision(now time.Time, n int, res *redis_rate.Result) resourceapi.RateDecision {
	limit := l.limit.Burst
	spent := res.ResetAfter - slack
	remaining := limit
	if spent > 0 {
		remaining = limit - int((spent+l.interval-1)/l.interval) // whole requests not yet back
	}
	d := resourceapi.RateDecision{
		Limit:     limit,
		Remaining: max(remaining, 0),
		Reset:     now.Add(max(res.ResetAfter, 0)),
		Window:    l.limit.Period,
	}
	refused := res.RetryAfter >= 0 // redis_rate returns -1 when it admits
	switch {
	case n == 0:
		d.Allowed = d.Remaining >= 1
		if !d.Allowed {
			d.RetryAfter = max(res.ResetAfter-time.Duration(limit-1)*l.interval, time.Nanosecond)
		}
	case refused:
		d.Remaining = min(d.Remaining, n-1)
		d.RetryAfter = max(res.RetryAfter, time.Nanosecond)
	default:
		d.Allowed = true
	}
	return d
}
