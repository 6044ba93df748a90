package redis_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// clock is a test clock that stands still until advanced.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// logBuffer collects log output; slog handlers write whole lines under their
// own lock.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns how many lines contain s.
func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// primary is a stand-in for the Redis limiter: it fails while down is set,
// and otherwise answers a fixed decision.
type primary struct {
	down  atomic.Bool
	calls atomic.Int64
	block chan struct{} // when not nil, calls wait for it to close
}

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (p *primary) AllowN(ctx context.Context, key string, n int) (resourceapi.RateDecision, error) {
	p.calls.Add(1)
	if p.block != nil {
		<-p.block
	}
	if p.down.Load() {
		return resourceapi.RateDecision{}, errDown
	}
	return resourceapi.RateDecision{Allowed: true, Limit: 10, Remaining: 42}, nil
}

func newMemory(t *testing.T, c *clock) *inmem.RateLimiter {
	l := inmem.NewRateLimiter(10, time.Hour, inmem.Options{Now: c.Now})
	t.Cleanup(func() { l.Close() })
	return l
}

// While the primary fails, decisions come from memory with no error, and one
// warning is logged per 10 seconds however many calls fail.
func TestFallbackAnswersFromMemory(t *testing.T) {
	c := newClock()
	p := &primary{}
	p.down.Store(true)
	logger, logs := newLogger()
	f := redis.NewFallback(p, newMemory(t, c), logger, redis.FallbackOptions{Retry: -1, Now: c.Now})

	for i := range 10 {
		if d := mustAllow(t, f, "k", 1); !d.Allowed || d.Remaining != 9-i || d.Limit != 10 {
			t.Fatalf("call %d: decision %+v, want allowed with Remaining %d from memory", i+1, d, 9-i)
		}
	}
	if d := mustAllow(t, f, "k", 1); d.Allowed || d.RetryAfter != 6*time.Minute {
		t.Errorf("past the budget: decision %+v, want refused for 6m from memory", d)
	}
	if got := p.calls.Load(); got != 11 {
		t.Errorf("primary asked %d times with Retry < 0, want on every call (11)", got)
	}
	if got := logs.count("level=WARN"); got != 1 {
		t.Errorf("%d warnings for 11 failed calls, want 1:\n%s", got, logs.buf.String())
	}
	if got := logs.count("connection refused"); got != 1 {
		t.Errorf("the warning does not carry the error:\n%s", logs.buf.String())
	}
	c.Advance(9 * time.Second)
	mustAllow(t, f, "k", 0)
	if got := logs.count("level=WARN"); got != 1 {
		t.Errorf("%d warnings within 10 s, want 1", got)
	}
	c.Advance(time.Second)
	mustAllow(t, f, "k", 0)
	if got := logs.count("level=WARN"); got != 2 {
		t.Errorf("%d warnings after 10 s, want 2", got)
	}
}

// After a failure the primary is left alone for Retry; then one call asks it
// again, and once it answers every call goes to it.
func TestFallbackRetry(t *testing.T) {
	c := newClock()
	p := &primary{}
	p.down.Store(true)
	logger, logs := newLogger()
	f := redis.NewFallback(p, newMemory(t, c), logger, redis.FallbackOptions{Now: c.Now})

	mustAllow(t, f, "k", 1)
	c.Advance(redis.DefaultRetry - 1)
	for range 5 {
		mustAllow(t, f, "k", 1)
	}
	if got := p.calls.Load(); got != 1 {
		t.Errorf("primary asked %d times within Retry of a failure, want 1", got)
	}
	c.Advance(1)
	if d := mustAllow(t, f, "k", 1); d.Remaining != 3 {
		t.Errorf("still down: Remaining = %d, want 3 from memory", d.Remaining)
	}
	if got := p.calls.Load(); got != 2 {
		t.Errorf("primary asked %d times after Retry, want 2", got)
	}

	p.down.Store(false)
	c.Advance(redis.DefaultRetry)
	for range 3 {
		if d := mustAllow(t, f, "k", 1); d.Remaining != 42 {
			t.Errorf("primary back: Remaining = %d, want 42 from the primary", d.Remaining)
		}
	}
	if got := p.calls.Load(); got != 5 {
		t.Errorf("primary asked %d times, want 5", got)
	}
	if got := logs.count("answers again"); got != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", got, logs.buf.String())
	}
}

// When Retry has passed, concurrent calls do not all wait on a primary that
// may hang: one asks it, the rest answer from memory.
func TestFallbackOneProbe(t *testing.T) {
	c := newClock()
	p := &primary{}
	p.down.Store(true)
	f := redis.NewFallback(p, newMemory(t, c), nil, redis.FallbackOptions{Now: c.Now})
	mustAllow(t, f, "k", 0)
	c.Advance(redis.DefaultRetry)

	p.block = make(chan struct{})
	const callers = 10
	answered := make(chan struct{}, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := f.AllowN(context.Background(), "k", 0); err != nil {
				t.Errorf("AllowN: %v", err)
			}
			answered <- struct{}{}
		})
	}
	for range callers - 1 {
		<-answered
	}
	if got := p.calls.Load(); got != 2 {
		t.Errorf("primary asked %d times, want 2 (the first failure and one probe)", got)
	}
	close(p.block)
	wg.Wait()
}

// A call whose own context has ended says nothing about Redis: no warning,
// and the next call asks the primary.
func TestFallbackCallerGone(t *testing.T) {
	c := newClock()
	p := &primary{}
	p.down.Store(true)
	logger, logs := newLogger()
	f := redis.NewFallback(p, newMemory(t, c), logger, redis.FallbackOptions{Now: c.Now})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.AllowN(ctx, "k", 1); err != nil {
		t.Fatalf("AllowN: %v", err)
	}
	mustAllow(t, f, "k", 1)
	if got := p.calls.Load(); got != 2 {
		t.Errorf("primary asked %d times, want 2", got)
	}
	if got := logs.count("level=WARN"); got != 1 {
		t.Errorf("%d warnings, want 1 (for the second call only)", got)
	}
}

func TestFallbackNegativeN(t *testing.T) {
	c := newClock()
	p := &primary{}
	logger, logs := newLogger()
	f := redis.NewFallback(p, newMemory(t, c), logger, redis.FallbackOptions{Now: c.Now})
	if _, err := f.AllowN(context.Background(), "k", -1); err == nil {
		t.Errorf("AllowN(-1) error = nil")
	}
	if p.calls.Load() != 0 || logs.count("level=") != 0 {
		t.Errorf("AllowN(-1) asked the primary or logged")
	}
}

// The real thing: a RateLimiter on a Redis that refuses connections or hangs
// answers from memory within about its timeout, and logs once.
func TestFallbackRedisUnreachable(t *testing.T) {
	for name, addr := range map[string]string{"refused": closedAddr(t), "hung": hungAddr(t)} {
		t.Run(name, func(t *testing.T) {
			mem := inmem.NewRateLimiter(10, time.Hour, inmem.Options{})
			t.Cleanup(func() { mem.Close() })
			logger, logs := newLogger()
			rl := redis.NewRateLimiter(client(t, addr), 10, time.Hour, redis.Options{})
			f := redis.NewFallback(rl, mem, logger, redis.FallbackOptions{Retry: -1})
			for i := range 3 {
				start := time.Now()
				d := mustAllow(t, f, "k", 1)
				if elapsed := time.Since(start); elapsed > 2*time.Second {
					t.Errorf("AllowN took %v with a %v timeout", elapsed, redis.DefaultTimeout)
				}
				if !d.Allowed || d.Remaining != 9-i {
					t.Errorf("call %d: decision %+v, want allowed with Remaining %d", i+1, d, 9-i)
				}
			}
			if got := logs.count("level=WARN"); got != 1 {
				t.Errorf("%d warnings, want 1:\n%s", got, logs.buf.String())
			}
		})
	}
}

// When Redis answers again, decisions come from Redis again. The client
// dials whatever address the test sets: first one where nothing listens,
// then the test server.
func TestFallbackRecovers(t *testing.T) {
	admin := redistest.NewClient(t)
	prefix := redistest.Prefix(t, admin)
	opts, err := goredis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var addr atomic.Value
	addr.Store(closedAddr(t))
	opts.ContextTimeoutEnabled = true
	opts.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr.Load().(string))
	}
	server := opts.Addr
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })

	clk := newClock()
	mem := inmem.NewRateLimiter(10, time.Hour, inmem.Options{})
	t.Cleanup(func() { mem.Close() })
	logger, logs := newLogger()
	rl := redis.NewRateLimiter(c, 10, time.Hour, redis.Options{Prefix: prefix})
	f := redis.NewFallback(rl, mem, logger, redis.FallbackOptions{Now: clk.Now})

	for range 3 {
		mustAllow(t, f, "k", 1)
	}
	if d := mustAllow(t, f, "k", 0); d.Remaining != 7 {
		t.Fatalf("Redis down: Remaining = %d, want 7 from memory", d.Remaining)
	}

	addr.Store(server)
	clk.Advance(redis.DefaultRetry)
	if d := mustAllow(t, f, "k", 1); d.Remaining != 9 {
		t.Errorf("Redis back: Remaining = %d, want 9 (Redis's budget, untouched during the outage)", d.Remaining)
	}
	if d := mustAllow(t, f, "k", 0); d.Remaining != 9 {
		t.Errorf("Redis back, next call: Remaining = %d, want 9 from Redis", d.Remaining)
	}
	if n, err := admin.Exists(context.Background(), "rate:"+prefix+"k").Result(); err != nil || n != 1 {
		t.Errorf("the key is not in Redis: EXISTS = %d, %v", n, err)
	}
	if logs.count("level=WARN") != 1 || logs.count("answers again") != 1 {
		t.Errorf("want one warning and one recovery line:\n%s", logs.buf.String())
	}
}
