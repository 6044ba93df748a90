package redis_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/redis"
)

// The wiring in cmd: budgets in Redis, and in memory while Redis is down.
func ExampleNewFallback() {
	ctx := context.Background()
	client, err := redis.Open(ctx, "redis://127.0.0.1:6379/0")
	if err != nil {
		slog.Error("rate limit", "err", err)
		return
	}
	defer client.Close()
	const limit, window = 600, time.Minute
	memory := inmem.NewRateLimiter(limit, window, inmem.Options{})
	defer memory.Close()

	var limiter resourceapi.RateLimiter = redis.NewFallback(
		redis.NewRateLimiter(client, limit, window, redis.Options{}),
		memory, slog.Default(), redis.FallbackOptions{})
	d, _ := limiter.AllowN(ctx, "user:42", 1) // never an error for n >= 0
	_ = d
}
