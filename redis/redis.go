// Package redis keeps state that every instance of the service shares in
// Redis (through github.com/redis/go-redis/v9): the rate limit budgets, so
// that several instances behind one load balancer enforce one budget per
// caller, and the stream that carries events from the instance that
// published them to every instance's subscribers (Stream; see
// docs/events.md).
//
// # When Redis is unreachable
//
// The rate limiter never turns a Redis failure into a failed request.
// RateLimiter bounds each call to Redis with a short timeout (100 ms by
// default) and returns an error when Redis does not answer in time, refuses
// the connection or replies with an error. Fallback wraps it and, on such an
// error, answers from an in-process limiter with the same limit and window
// (package inmem) instead, never with an error:
//
//   - While Redis is down, each instance enforces the budget on its own: with
//     N instances a caller may get up to N budgets, spread across them. What a
//     caller spent in memory is not carried over to Redis, or back.
//   - A warning is logged at most once every 10 seconds, and one line when
//     Redis answers again.
//   - After a failure Redis is left alone for a second (FallbackOptions.Retry),
//     so a dead or hung Redis costs at most one request per second the
//     timeout; then one call asks Redis again while the others answer from
//     memory, and as soon as Redis answers every call goes back to it. (After
//     many failed dials go-redis itself waits for a background dial to
//     succeed, which it retries every second.)
//   - A call whose own context has ended (the client went away) is answered
//     from memory without counting as a Redis failure.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// openTimeout bounds Open's first ping when its context has no earlier
// deadline.
const openTimeout = 5 * time.Second

// Open returns a client for the Redis server at rawURL
// (redis://[user:password@]host:port/db, or rediss:// for TLS), after checking with a ping that the
// server answers. The client lets contexts bound each call
// (ContextTimeoutEnabled), which RateLimiter's timeout needs. Close it when
// done.
func Open(ctx context.Context, rawURL string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		// A *url.Error quotes the whole URL, password included: keep only
		// its cause. ParseURL's own errors name a part, never the password.
		if uerr := (*url.Error)(nil); errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("open redis: invalid URL: %w", err)
	}
	opts.ContextTimeoutEnabled = true
	client := goredis.NewClient(opts)
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("open redis: ping %s: %w", opts.Addr, err)
	}
	return client, nil
}
