package redis_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/ratelimittest"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

func mustAllow(tb testing.TB, l resourceapi.RateLimiter, key string, n int) resourceapi.RateDecision {
	tb.Helper()
	d, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		tb.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return d
}

func TestRateLimiterConformance(t *testing.T) {
	redistest.URL(t) // skip once, not in every case
	ratelimittest.TestRateLimiter(t, func(t *testing.T, limit int, window time.Duration) (resourceapi.RateLimiter, resourceapi.Clock) {
		c := redistest.NewClient(t)
		// A generous timeout: the suite's 200 concurrent calls queue for the
		// client's pool on a 2-core machine running the race detector.
		l := redis.NewRateLimiter(c, limit, window, redis.Options{Prefix: redistest.Prefix(t, c), Timeout: 10 * time.Second})
		return l, time.Now
	})
}

// Two instances (two clients, two limiters) on one Redis share one budget.
func TestRateLimiterSharedBudget(t *testing.T) {
	c1, c2 := redistest.NewClient(t), redistest.NewClient(t)
	prefix := redistest.Prefix(t, c1)
	opts := redis.Options{Prefix: prefix, Timeout: 10 * time.Second}
	a := redis.NewRateLimiter(c1, 10, time.Hour, opts)
	b := redis.NewRateLimiter(c2, 10, time.Hour, opts)

	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if d := mustAllow(t, l, "k", 1); !d.Allowed || d.Remaining != 9-i {
			t.Fatalf("call %d: Allowed, Remaining = %t, %d, want true, %d", i+1, d.Allowed, d.Remaining, 9-i)
		}
	}
	for _, l := range []*redis.RateLimiter{a, b} {
		if d := mustAllow(t, l, "k", 1); d.Allowed {
			t.Errorf("call past the shared budget admitted")
		}
	}

	// 200 concurrent calls through both instances against a budget of 100.
	const budget, callers = 100, 200
	a = redis.NewRateLimiter(c1, budget, time.Hour, opts)
	b = redis.NewRateLimiter(c2, budget, time.Hour, opts)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			<-start
			d, err := l.AllowN(context.Background(), "concurrent", 1)
			if err != nil {
				t.Errorf("AllowN: %v", err)
			} else if d.Allowed {
				admitted.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := admitted.Load(); got != budget {
		t.Errorf("two instances admitted %d of %d concurrent calls, want exactly %d", got, callers, budget)
	}
}

// Limiters with different prefixes keep separate budgets on one Redis.
func TestRateLimiterPrefixes(t *testing.T) {
	c := redistest.NewClient(t)
	a := redis.NewRateLimiter(c, 10, time.Hour, redis.Options{Prefix: redistest.Prefix(t, c)})
	b := redis.NewRateLimiter(c, 10, time.Hour, redis.Options{Prefix: redistest.Prefix(t, c)})
	mustAllow(t, a, "k", 10)
	if d := mustAllow(t, b, "k", 1); !d.Allowed || d.Remaining != 9 {
		t.Errorf("other prefix: Allowed, Remaining = %t, %d, want true, 9", d.Allowed, d.Remaining)
	}
}

// A key lives at "rate:"+prefix+key and expires when its budget is whole
// again; the default prefix is DefaultPrefix.
func TestRateLimiterKeys(t *testing.T) {
	c := redistest.NewClient(t)
	ctx := context.Background()
	prefix := redistest.Prefix(t, c)
	l := redis.NewRateLimiter(c, 10, time.Hour, redis.Options{Prefix: prefix})
	mustAllow(t, l, "k", 2)
	ttl, err := c.TTL(ctx, "rate:"+prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := 12 * time.Minute; ttl <= want-time.Minute || ttl > want {
		t.Errorf("TTL = %v, want about %v (two requests' worth)", ttl, want)
	}

	// The default prefix: a key no other test uses, deleted here.
	key := strings.TrimSuffix(prefix, ":")
	mustAllow(t, redis.NewRateLimiter(c, 10, time.Hour, redis.Options{}), key, 1)
	full := "rate:" + redis.DefaultPrefix + key
	t.Cleanup(func() { c.Del(context.Background(), full) })
	if n, err := c.Exists(ctx, full).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS %s = %d, %v, want 1", full, n, err)
	}
}

// redis_rate computes in float seconds since 2017, which rounds: a fresh key
// must still report limit-1 whatever the interval.
func TestRateLimiterRounding(t *testing.T) {
	c := redistest.NewClient(t)
	prefix := redistest.Prefix(t, c)
	for _, lim := range []struct {
		limit  int
		window time.Duration
	}{{7, time.Minute}, {600, time.Minute}, {3, 10 * time.Second}, {13, time.Hour}} {
		l := redis.NewRateLimiter(c, lim.limit, lim.window, redis.Options{Prefix: prefix})
		for i := range 30 {
			key := fmt.Sprintf("%d/%v/%d", lim.limit, lim.window, i)
			if d := mustAllow(t, l, key, 1); d.Remaining != lim.limit-1 {
				t.Errorf("%d per %v, fresh key: Remaining = %d, want %d", lim.limit, lim.window, d.Remaining, lim.limit-1)
			}
			if d := mustAllow(t, l, key, 0); !d.Allowed || d.Remaining != lim.limit-1 {
				t.Errorf("%d per %v, report: Allowed, Remaining = %t, %d, want true, %d", lim.limit, lim.window, d.Allowed, d.Remaining, lim.limit-1)
			}
		}
	}
}

// closedAddr returns an address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hungAddr returns the address of a server that accepts connections and
// never answers, like a Redis stuck on a slow command.
func hungAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// client returns a client for addr configured as Open configures one.
func client(t *testing.T, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// Without Redis, AllowN fails fast, within about its timeout.
func TestRateLimiterUnreachable(t *testing.T) {
	for name, addr := range map[string]string{"refused": closedAddr(t), "hung": hungAddr(t)} {
		t.Run(name, func(t *testing.T) {
			l := redis.NewRateLimiter(client(t, addr), 10, time.Minute, redis.Options{Timeout: 50 * time.Millisecond})
			for range 3 {
				start := time.Now()
				d, err := l.AllowN(context.Background(), "k", 1)
				if elapsed := time.Since(start); elapsed > 2*time.Second {
					t.Errorf("AllowN took %v with a 50ms timeout", elapsed)
				}
				if err == nil {
					t.Fatalf("AllowN error = nil (decision %+v), want an error", d)
				}
				if d != (resourceapi.RateDecision{}) {
					t.Errorf("decision = %+v with an error, want the zero value", d)
				}
			}
		})
	}
}

func TestOpen(t *testing.T) {
	c := redistest.NewClient(t) // redis.Open on the test server
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if !c.Options().ContextTimeoutEnabled {
		t.Errorf("Open: ContextTimeoutEnabled = false, want true so that RateLimiter's timeout bounds reads")
	}
}

func TestOpenFails(t *testing.T) {
	ctx := context.Background()
	_, err := redis.Open(ctx, "redis://user:s3cret@ho st:6379/0")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open(invalid URL) error = %v, want an error that does not show the password", err)
	}
	if _, err := redis.Open(ctx, "postgres://127.0.0.1/0"); err == nil {
		t.Errorf("Open(postgres URL) error = nil")
	}
	_, err = redis.Open(ctx, "redis://user:s3cret@"+closedAddr(t)+"/0")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open(closed port) error = %v, want an error that does not show the password", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := redis.Open(cctx, "redis://"+hungAddr(t)+"/0"); err == nil {
		t.Errorf("Open(hung server) error = nil")
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Open(hung server) took %v under a 200ms context", elapsed)
	}
}

func TestNewRateLimiterPanics(t *testing.T) {
	c := client(t, closedAddr(t))
	for _, tc := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Minute}, {10, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRateLimiter(%d, %v) did not panic", tc.limit, tc.window)
				}
			}()
			redis.NewRateLimiter(c, tc.limit, tc.window, redis.Options{})
		}()
	}
}
