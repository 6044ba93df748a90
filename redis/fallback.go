package redis

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// DefaultRetry is how long Fallback answers from memory after a failure of
// Redis before it asks Redis again, when FallbackOptions.Retry is 0.
const DefaultRetry = time.Second

// warnEvery spaces Fallback's warnings: an outage logs one line per interval,
// not one per request.
const warnEvery = 10 * time.Second

var _ resourceapi.RateLimiter = (*Fallback)(nil)

// FallbackOptions configure NewFallback. The zero value is the production
// default.
type FallbackOptions struct {
	// Retry is how long after a failure of the primary Fallback answers from
	// the fallback alone; 0 is DefaultRetry, and a negative value asks the
	// primary on every call. During it a dead or hung Redis costs requests
	// nothing; after it, the first call asks Redis again (the calls meanwhile
	// still answer from memory).
	Retry time.Duration
	// Now is the clock for Retry and for spacing warnings; nil is time.Now.
	Now resourceapi.Clock
}

// Fallback is a resourceapi.RateLimiter that asks a primary limiter (a
// RateLimiter on Redis) and, when the primary fails, answers from a fallback
// (an in-process limiter with the same limit and window): see the package
// doc. Its AllowN returns an error only for a negative n.
type Fallback struct {
	primary, fallback resourceapi.RateLimiter
	logger            *slog.Logger
	retry             time.Duration
	now               resourceapi.Clock

	// retryAt is when to ask the primary again after a failure, in Unix
	// nanoseconds; 0 while the primary answers.
	retryAt atomic.Int64
	// warned is when the last warning was logged, in Unix nanoseconds.
	warned atomic.Int64
}

// NewFallback returns a limiter that answers from primary, or from fallback
// when primary fails. It logs to logger (nil discards) a warning when it
// starts answering from fallback, at most once every 10 seconds, and a line
// when primary answers again.
func NewFallback(primary, fallback resourceapi.RateLimiter, logger *slog.Logger, opts FallbackOptions) *Fallback {
	f := &Fallback{primary: primary, fallback: fallback, logger: logger, retry: opts.Retry, now: opts.Now}
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	if f.retry == 0 {
		f.retry = DefaultRetry
	}
	if f.now == nil {
		f.now = time.Now
	}
	return f
}

// AllowN implements resourceapi.RateLimiter.
func (f *Fallback) AllowN(ctx context.Context, key string, n int) (resourceapi.RateDecision, error) {
	if n < 0 {
		return resourceapi.RateDecision{}, fmt.Errorf("rate limit: n = %d, want n >= 0", n)
	}
	now := f.now()
	if at := f.retryAt.Load(); at != 0 {
		// The primary failed lately. One call asks it again once Retry has
		// passed (winning the swap); the others answer from memory meanwhile.
		if now.UnixNano() < at || !f.retryAt.CompareAndSwap(at, now.Add(max(f.retry, 0)).UnixNano()) {
			return f.fallback.AllowN(ctx, key, n)
		}
	}
	d, err := f.primary.AllowN(ctx, key, n)
	if err == nil {
		if f.retryAt.Load() != 0 && f.retryAt.Swap(0) != 0 {
			f.logger.Info("rate limit: Redis answers again; budgets are shared again")
		}
		return d, nil
	}
	// When the caller's own context has ended (the client went away), the
	// failure says nothing about Redis.
	if ctx.Err() == nil {
		f.retryAt.Store(now.Add(max(f.retry, 0)).UnixNano())
		f.warn(now, err)
	}
	return f.fallback.AllowN(ctx, key, n)
}

// warn logs err unless a warning was logged less than warnEvery ago.
func (f *Fallback) warn(now time.Time, err error) {
	last := f.warned.Load()
	if last != 0 && now.UnixNano()-last < int64(warnEvery) {
		return
	}
	if !f.warned.CompareAndSwap(last, now.UnixNano()) {
		return // another call is logging this one
	}
	f.logger.Warn("rate limit: Redis unreachable; each instance limits from memory until it answers",
		"err", err, "retry", max(f.retry, 0))
}
