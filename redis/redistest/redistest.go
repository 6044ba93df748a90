// Package redistest gives tests a client for the Redis server named by
// RESOURCEAPI_TEST_REDIS_URL and a key prefix of their own. That server is
// shared (with other tests, other packages, other people), so a test never
// flushes it: it writes only under its prefix, and its keys are deleted when
// it ends.
package redistest

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi/redis"
)

// EnvURL names the variable that points the tests at a Redis server.
const EnvURL = "RESOURCEAPI_TEST_REDIS_URL"

// URL returns the server URL from EnvURL, skipping tb with a clear message
// when it is not set.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		tb.Skipf("Redis tests skipped: set %s (e.g. redis://127.0.0.1:6379/0) to run them", EnvURL)
	}
	return u
}

// NewClient returns a client for the server at EnvURL (skipping tb when it is
// unset), opened with redis.Open and closed when tb ends.
func NewClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	u := URL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Open(ctx, u)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Prefix returns a key prefix no other test uses, and deletes every key that
// contains it when tb ends (libraries may put their own prefix before it, as
// redis_rate does).
func Prefix(tb testing.TB, c *goredis.Client) string {
	tb.Helper()
	p := "resourceapi:test:" + strings.ToLower(rand.Text()[:16]) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The prefix is ours (base32 letters and digits): no glob characters.
		iter := c.Scan(ctx, 0, "*"+p+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("redistest: scan %s*: %v", p, err)
			return
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("redistest: delete %d keys under %s: %v", len(keys), p, err)
			}
		}
	})
	return p
}
