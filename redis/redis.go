// Package redis keeps state that every instance of the service shares in
// Redis (through github.com/redis/go-redis/v9): for now the rate limit
// budgets, so that several instances behind one load balancer enforce one
// budget per caller.
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
