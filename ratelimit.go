package resourceapi

import (
	"context"
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
}
