package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/auth"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/token"
)

// Budgets of failed password checks (HTTP Basic, the OAuth password grant,
// the sign-in page). From one client address, an account allows 10 failures
// and then one more every 90 seconds; from everywhere together, 100 and then
// one more every 9 seconds. A stranger who guesses from one address locks
// nobody out; one who spreads guesses over many addresses can keep the
// account's password sign-in throttled, never its API keys or tokens.
//
// From one client address, whatever the accounts, 30 failures and then one
// more every 2 seconds: a flood of sign-ins with random emails costs at most
// that many password verifications, then a refusal each.
const (
	failuresFrom       = 30
	failuresFromWindow = time.Minute
	guessesFrom        = 10
	guessesFromWindow  = 15 * time.Minute
	guesses            = 100
	guessesWindow      = 15 * time.Minute
)

// identity is what authenticates and limits requests.
type identity struct {
	auth    *auth.Authenticator
	tokens  *token.HS256
	limiter resourceapi.RateLimiter // nil when rate limiting is off
	redis   *goredis.Client         // nil without RESOURCEAPI_REDIS_URL
	closers []func() error
}

// newIdentity builds the authenticator, the access-token signer and the rate
// limiters: in this process, or in Redis when RESOURCEAPI_REDIS_URL is set
// (shared by every instance, and answered from memory while Redis does not
// answer). A Redis that cannot be reached at start is a configuration error.
func newIdentity(ctx context.Context, cfg config, db store, hasher resourceapi.PasswordHasher, log *slog.Logger) (*identity, error) {
	id := &identity{}
	secret, err := jwtSecret(ctx, cfg, db)
	if err != nil {
		return nil, err
	}
	if id.tokens, err = token.New(secret, token.Options{}); err != nil {
		return nil, fmt.Errorf("access tokens: %w", err)
	}
	if cfg.RedisURL != "" {
		if id.redis, err = redis.Open(ctx, cfg.RedisURL); err != nil {
			return nil, err
		}
		id.closers = append(id.closers, id.redis.Close)
	}
	limiter := func(prefix string, limit int, window time.Duration) resourceapi.RateLimiter {
		mem := inmem.NewRateLimiter(limit, window, inmem.Options{})
		id.closers = append(id.closers, mem.Close)
		if id.redis == nil {
			return mem
		}
		shared := redis.NewRateLimiter(id.redis, limit, window, redis.Options{Prefix: redis.DefaultPrefix + prefix})
		return redis.NewFallback(shared, mem, log, redis.FallbackOptions{})
	}
	if cfg.RateLimit > 0 {
		id.limiter = limiter("api:", cfg.RateLimit, cfg.RateWindow)
	}
	id.auth, err = auth.New(auth.Config{
		Store:              db,
		Hasher:             hasher,
		Tokens:             id.tokens,
		AccountGuesses:     limiter("guess:", guesses, guessesWindow),
		AccountGuessesFrom: limiter("guessfrom:", guessesFrom, guessesFromWindow),
		FailuresFrom:       limiter("failfrom:", failuresFrom, failuresFromWindow),
	})
	if err != nil {
		id.Close()
		return nil, fmt.Errorf("authentication: %w", err)
	}
	return id, nil
}

// Close releases the limiters and the Redis client.
func (id *identity) Close() error {
	var errs []error
	for i := len(id.closers) - 1; i >= 0; i-- {
		errs = append(errs, id.closers[i]())
	}
	return errors.Join(errs...)
}

// jwtSecret returns the key that signs access tokens: RESOURCEAPI_JWT_SECRET,
// or one generated on the first start and kept in the database (decisions
// §1), so that restarts and other instances accept tokens already issued.
// Instances starting together on an empty database all get the one stored
// first.
func jwtSecret(ctx context.Context, cfg config, db store) ([]byte, error) {
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	secret, err := db.Setting(ctx, "jwt_secret", rand.Text()+rand.Text())
	if err != nil {
		return nil, fmt.Errorf("access tokens: %w", err)
	}
	return []byte(secret), nil
}
