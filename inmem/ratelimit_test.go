package inmem_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/ratelimittest"
)

// clock is a test clock, safe for the sweeper goroutine to read. It stands
// still until advanced.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func mustNew(tb testing.TB, limit int, window time.Duration, opts inmem.Options) *inmem.RateLimiter {
	tb.Helper()
	l := inmem.NewRateLimiter(limit, window, opts)
	tb.Cleanup(func() { l.Close() })
	return l
}

func mustAllow(tb testing.TB, l resourceapi.RateLimiter, key string, n int) resourceapi.RateDecision {
	tb.Helper()
	d, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		tb.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return d
}

func TestRateLimiterConformance(t *testing.T) {
	ratelimittest.TestRateLimiter(t, func(t *testing.T, limit int, window time.Duration) (resourceapi.RateLimiter, resourceapi.Clock) {
		c := newClock()
		return mustNew(t, limit, window, inmem.Options{Now: c.Now}), c.Now
	})
}

// The budget comes back one request per window/limit, exactly: a refused
// caller that waits RetryAfter is admitted, one that waits a nanosecond less
// is not.
func TestRateLimiterRefill(t *testing.T) {
	c := newClock()
	l := mustNew(t, 10, time.Minute, inmem.Options{Now: c.Now}) // one request every 6 s
	start := c.Now()
	for range 10 {
		mustAllow(t, l, "a", 1)
	}
	d := mustAllow(t, l, "a", 1)
	if d.Allowed || d.RetryAfter != 6*time.Second {
		t.Fatalf("11th call: Allowed, RetryAfter = %t, %v, want false, 6s", d.Allowed, d.RetryAfter)
	}
	if want := start.Add(time.Minute); !d.Reset.Equal(want) {
		t.Errorf("Reset = %v, want %v", d.Reset, want)
	}

	c.Advance(d.RetryAfter - 1)
	if d := mustAllow(t, l, "a", 1); d.Allowed || d.RetryAfter != 1 {
		t.Errorf("1ns early: Allowed, RetryAfter = %t, %v, want false, 1ns", d.Allowed, d.RetryAfter)
	}
	c.Advance(1)
	if d := mustAllow(t, l, "a", 1); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after RetryAfter: Allowed, Remaining = %t, %d, want true, 0", d.Allowed, d.Remaining)
	}

	// Half a window later, half the budget is back; Reset is a whole window
	// after the last request taken.
	c.Advance(30 * time.Second)
	d = mustAllow(t, l, "a", 0)
	if !d.Allowed || d.Remaining != 5 {
		t.Errorf("half a window later: Allowed, Remaining = %t, %d, want true, 5", d.Allowed, d.Remaining)
	}
	if want := c.Now().Add(30 * time.Second); !d.Reset.Equal(want) {
		t.Errorf("Reset = %v, want %v", d.Reset, want)
	}

	// Waiting longer than a window never saves up more than the limit.
	c.Advance(10 * time.Minute)
	if d := mustAllow(t, l, "a", 0); d.Remaining != 10 || !d.Reset.Equal(c.Now()) {
		t.Errorf("long after: Remaining, Reset = %d, %v, want 10, now (%v)", d.Remaining, d.Reset, c.Now())
	}
}

// A window that does not divide by the limit still never grants more than
// the limit at once nor sets Reset past a window.
func TestRateLimiterUnevenInterval(t *testing.T) {
	c := newClock()
	l := mustNew(t, 7, time.Minute, inmem.Options{Now: c.Now})
	var d resourceapi.RateDecision
	for i := range 7 {
		d = mustAllow(t, l, "a", 1)
		if !d.Allowed || d.Remaining != 6-i {
			t.Fatalf("call %d: Allowed, Remaining = %t, %d, want true, %d", i+1, d.Allowed, d.Remaining, 6-i)
		}
	}
	if d.Reset.After(c.Now().Add(time.Minute)) {
		t.Errorf("Reset = %v, more than a window from now", d.Reset)
	}
	if d := mustAllow(t, l, "a", 1); d.Allowed {
		t.Errorf("8th call allowed")
	}
}

// A flood of distinct keys never holds more than MaxKeys; the least recently
// used keys are forgotten (their budget starts full again) while a key that
// keeps calling keeps its state.
func TestRateLimiterMaxKeys(t *testing.T) {
	const keys = 200_000
	c := newClock()
	l := mustNew(t, 10, time.Hour, inmem.Options{Now: c.Now})
	mustAllow(t, l, "hot", 10)
	for i := range keys {
		mustAllow(t, l, fmt.Sprint("k", i), 1)
		if i%10_000 == 0 {
			if d := mustAllow(t, l, "hot", 1); d.Allowed {
				t.Fatalf("hot key admitted after %d keys: its state was lost", i)
			}
		}
	}
	if got := l.Len(); got != inmem.DefaultMaxKeys {
		t.Errorf("Len = %d after %d keys, want the cap %d", got, keys, inmem.DefaultMaxKeys)
	}
	if d := mustAllow(t, l, fmt.Sprint("k", keys-1), 0); d.Remaining != 9 {
		t.Errorf("newest key: Remaining = %d, want 9 (kept)", d.Remaining)
	}
	if d := mustAllow(t, l, "k0", 0); d.Remaining != 10 {
		t.Errorf("oldest key: Remaining = %d, want 10 (forgotten)", d.Remaining)
	}
	if d := mustAllow(t, l, "hot", 0); d.Remaining != 0 {
		t.Errorf("hot key: Remaining = %d, want 0 (kept)", d.Remaining)
	}
}

func TestRateLimiterMaxKeysOption(t *testing.T) {
	c := newClock()
	l := mustNew(t, 10, time.Hour, inmem.Options{Now: c.Now, MaxKeys: 3})
	for _, k := range []string{"a", "b", "c", "a", "d"} { // "a" was used again: "b" goes
		mustAllow(t, l, k, 1)
	}
	if got := l.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
	for k, want := range map[string]int{"a": 8, "b": 10, "c": 9, "d": 9} {
		if d := mustAllow(t, l, k, 0); d.Remaining != want {
			t.Errorf("%s: Remaining = %d, want %d", k, d.Remaining, want)
		}
	}
}

// Reports and refusals hold no state for a key they do not already track.
func TestRateLimiterNoStateWithoutTaking(t *testing.T) {
	c := newClock()
	l := mustNew(t, 10, time.Hour, inmem.Options{Now: c.Now})
	mustAllow(t, l, "a", 0)
	mustAllow(t, l, "b", 11)
	if got := l.Len(); got != 0 {
		t.Errorf("Len = %d, want 0", got)
	}
}

// A key whose budget is whole again is dropped: by later calls, a few at a
// time, and by the sweeper, all at once.
func TestRateLimiterDropsIdleKeys(t *testing.T) {
	c := newClock()
	l := mustNew(t, 10, time.Minute, inmem.Options{Now: c.Now, SweepInterval: -1})
	for i := range 5000 {
		mustAllow(t, l, fmt.Sprint("old", i), 1) // full again 6 s later
	}
	c.Advance(3 * time.Second)
	mustAllow(t, l, "busy", 10) // full again a minute later
	c.Advance(3 * time.Second)

	mustAllow(t, l, "x", 1)
	if got, want := l.Len(), 5000+2-2; got != want {
		t.Errorf("Len after one call = %d, want %d (the call drops two idle keys)", got, want)
	}
	l.Sweep()
	if got := l.Len(); got != 2 {
		t.Errorf("Len after Sweep = %d, want 2 (busy and x)", got)
	}
	if d := mustAllow(t, l, "busy", 0); d.Remaining != 0 {
		t.Errorf("busy: Remaining = %d, want 0 (kept)", d.Remaining)
	}
	c.Advance(time.Minute)
	l.Sweep()
	if got := l.Len(); got != 0 {
		t.Errorf("Len a minute later = %d, want 0", got)
	}
}

// The background sweeper drops idle keys on its own.
func TestRateLimiterSweeper(t *testing.T) {
	c := newClock()
	l := mustNew(t, 10, time.Minute, inmem.Options{Now: c.Now, SweepInterval: time.Millisecond})
	for i := range 100 {
		mustAllow(t, l, fmt.Sprint("k", i), 1)
	}
	c.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for l.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Len = %d 10 s after the keys went idle, want 0", l.Len())
		}
		runtime.Gosched()
	}
}

func TestRateLimiterCloseStopsSweeper(t *testing.T) {
	before := runtime.NumGoroutine()
	c := newClock()
	var ls []*inmem.RateLimiter
	for range 10 {
		l := inmem.NewRateLimiter(10, time.Minute, inmem.Options{Now: c.Now, SweepInterval: time.Millisecond})
		mustAllow(t, l, "a", 1)
		ls = append(ls, l)
	}
	if got := runtime.NumGoroutine(); got < before+10 {
		t.Fatalf("NumGoroutine = %d with 10 limiters, want at least %d", got, before+10)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// Close returns once a sweeper has closed done, from its deferred call:
	// the goroutine itself ends a moment later. Wait for it, boundedly (as
	// goleak retries), rather than count it at once: under the race detector
	// on a loaded machine the count included one that was still exiting.
	got := runtime.NumGoroutine()
	for i := 0; i < 500 && got != before; i++ {
		time.Sleep(10 * time.Millisecond)
		got = runtime.NumGoroutine()
	}
	if got != before {
		t.Errorf("NumGoroutine = %d 5 s after Close, want %d: a sweeper leaked", got, before)
	}
	// A closed limiter still answers.
	if d := mustAllow(t, ls[0], "a", 1); !d.Allowed || d.Remaining != 8 {
		t.Errorf("after Close: Allowed, Remaining = %t, %d, want true, 8", d.Allowed, d.Remaining)
	}
}

func TestNewRateLimiterPanics(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {10, 0}, {10, -time.Second}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRateLimiter(%d, %v) did not panic", tc.limit, tc.window)
				}
			}()
			inmem.NewRateLimiter(tc.limit, tc.window, inmem.Options{SweepInterval: -1})
		}()
	}
}

func BenchmarkRateLimiterAllowN(b *testing.B) {
	l := mustNew(b, 600, time.Minute, inmem.Options{})
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint("user", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.AllowN(context.Background(), keys[i%len(keys)], 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
