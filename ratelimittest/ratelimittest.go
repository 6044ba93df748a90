// Package ratelimittest is the conformance suite every resourceapi.RateLimiter
// runs, in the manner of testing/fstest: an engine's tests call
// TestRateLimiter with a function that makes a fresh limiter, and the suite
// checks that every engine gives the same answers to the same calls.
//
// Beyond what the resourceapi package states, the suite pins these choices:
//
//   - A key's budget comes back one whole request at a time, every
//     window/limit: Remaining counts whole requests.
//   - A refused call takes nothing. n = 0 takes nothing and is Allowed while
//     at least one request would be; when none would, RetryAfter is the wait
//     for one.
//   - n > Limit is never admitted (and takes nothing); RetryAfter is then the
//     GCRA wait: until the budget is whole, plus window/limit per request
//     beyond Limit.
//   - A negative n is an error.
//   - Reset is when the budget is whole again: the time of the call for an
//     untouched key, never later than a window after the call.
//
// The suite runs on the engine's clock, which may be the wall clock (a
// server's): it uses windows of an hour, so that the few milliseconds the
// calls take never return a whole request, and compares times and waits to
// within a second.
package ratelimittest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// NewFunc returns a limiter that has seen no calls, admitting limit requests
// per window, and the clock its decisions follow.
type NewFunc func(t *testing.T, limit int, window time.Duration) (resourceapi.RateLimiter, resourceapi.Clock)

// slack is how far apart the suite lets times and waits be: wall time passes
// between a call and the check of its answer.
const slack = time.Second

// TestRateLimiter runs the conformance suite against limiters from newLimiter.
func TestRateLimiter(t *testing.T, newLimiter NewFunc) {
	const limit, window = 10, time.Hour
	const interval = window / limit

	t.Run("fresh key", func(t *testing.T) {
		l, now := open(t, newLimiter, limit, window)
		at := now()
		d := l.allow("a", 1)
		want(t, d, true, limit-1)
		if d.RetryAfter != 0 {
			t.Errorf("RetryAfter = %v, want 0 when allowed", d.RetryAfter)
		}
		near(t, "Reset", d.Reset, at.Add(interval))
		if !d.Reset.After(at) || d.Reset.After(now().Add(window)) {
			t.Errorf("Reset = %v, want after %v and no later than a window after it", d.Reset, at)
		}
	})

	t.Run("n=0 reports without taking", func(t *testing.T) {
		l, now := open(t, newLimiter, limit, window)
		d := l.allow("a", 0)
		want(t, d, true, limit)
		near(t, "Reset of an untouched key", d.Reset, now())
		l.allow("a", 3)
		for range 3 {
			d = l.allow("a", 0)
			want(t, d, true, limit-3)
		}
		want(t, l.allow("a", 1), true, limit-4)
	})

	t.Run("exhausted", func(t *testing.T) {
		l, now := open(t, newLimiter, limit, window)
		for i := range limit {
			want(t, l.allow("a", 1), true, limit-1-i)
		}
		for range 2 { // the first refusal takes nothing: the second waits as long
			at := now()
			d := l.allow("a", 1)
			want(t, d, false, 0)
			near(t, "RetryAfter", at.Add(d.RetryAfter), at.Add(interval))
			near(t, "Reset", d.Reset, at.Add(window))
			if d.Reset.After(now().Add(window)) {
				t.Errorf("Reset = %v, later than a window from now", d.Reset)
			}
		}
		at := now()
		d := l.allow("a", 0)
		want(t, d, false, 0)
		near(t, "RetryAfter for n=0", at.Add(d.RetryAfter), at.Add(interval))
	})

	t.Run("n>1", func(t *testing.T) {
		l, now := open(t, newLimiter, limit, window)
		at := now()
		d := l.allow("a", 5)
		want(t, d, true, 5)
		near(t, "Reset", d.Reset, at.Add(5*interval))
		d = l.allow("a", 6)
		want(t, d, false, 5)
		near(t, "RetryAfter", at.Add(d.RetryAfter), at.Add(interval))
		want(t, l.allow("a", 5), true, 0)
	})

	t.Run("n>limit", func(t *testing.T) {
		l, now := open(t, newLimiter, limit, window)
		l.allow("a", 2)
		at := now()
		d := l.allow("a", limit+1)
		want(t, d, false, limit-2)
		near(t, "RetryAfter", at.Add(d.RetryAfter), at.Add(3*interval))
		want(t, l.allow("a", 1), true, limit-3)
	})

	t.Run("negative n", func(t *testing.T) {
		l, _ := open(t, newLimiter, limit, window)
		if _, err := l.l.AllowN(context.Background(), "a", -1); err == nil {
			t.Errorf("AllowN(-1) error = nil, want an error")
		}
		want(t, l.allow("a", 0), true, limit)
	})

	t.Run("keys are separate", func(t *testing.T) {
		l, _ := open(t, newLimiter, limit, window)
		l.allow("a", limit)
		want(t, l.allow("a", 1), false, 0)
		want(t, l.allow("b", 1), true, limit-1)
		want(t, l.allow("", 1), true, limit-1)
	})

	t.Run("limit 1", func(t *testing.T) {
		l, now := open(t, newLimiter, 1, window)
		want(t, l.allow("a", 1), true, 0)
		at := now()
		d := l.allow("a", 1)
		want(t, d, false, 0)
		near(t, "RetryAfter", at.Add(d.RetryAfter), at.Add(window))
	})

	t.Run("concurrent calls admit exactly the budget", func(t *testing.T) {
		const budget, callers = 100, 200
		l, _ := open(t, newLimiter, budget, window)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range callers {
			wg.Go(func() {
				<-start
				d, err := l.l.AllowN(context.Background(), "a", 1)
				if err != nil {
					t.Errorf("AllowN: %v", err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := admitted.Load(); got != budget {
			t.Errorf("admitted %d of %d concurrent calls, want exactly %d", got, callers, budget)
		}
		want(t, l.allow("a", 0), false, 0)
	})
}

// limiter is the limiter under test with the limit it was made with.
type limiter struct {
	t     *testing.T
	l     resourceapi.RateLimiter
	limit int
}

func open(t *testing.T, newLimiter NewFunc, limit int, window time.Duration) (*limiter, resourceapi.Clock) {
	l, now := newLimiter(t, limit, window)
	return &limiter{t: t, l: l, limit: limit}, now
}

// allow calls AllowN, failing the test on an error or a wrong Limit.
func (l *limiter) allow(key string, n int) resourceapi.RateDecision {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := l.l.AllowN(ctx, key, n)
	if err != nil {
		l.t.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	if d.Limit != l.limit {
		l.t.Errorf("AllowN(%q, %d): Limit = %d, want %d", key, n, d.Limit, l.limit)
	}
	return d
}

// want checks a decision's Allowed, Remaining and Limit, and that RetryAfter
// is given exactly when the call was refused.
func want(t *testing.T, d resourceapi.RateDecision, allowed bool, remaining int) {
	t.Helper()
	if d.Allowed != allowed || d.Remaining != remaining {
		t.Errorf("Allowed, Remaining = %t, %d, want %t, %d (decision %+v)", d.Allowed, d.Remaining, allowed, remaining, d)
	}
	if allowed && d.RetryAfter != 0 {
		t.Errorf("RetryAfter = %v, want 0 when allowed", d.RetryAfter)
	}
	if !allowed && d.RetryAfter <= 0 {
		t.Errorf("RetryAfter = %v, want > 0 when refused", d.RetryAfter)
	}
}

func near(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if diff := got.Sub(want); diff < -slack || diff > slack {
		t.Errorf("%s = %v, want %v (within %v)", what, got, want, slack)
	}
}
