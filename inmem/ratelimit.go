// Package inmem holds in-process engines for the domain's services: they need
// no server, and their state lives and dies with one process.
package inmem

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// DefaultMaxKeys is how many keys a RateLimiter holds state for when
// Options.MaxKeys is 0.
const DefaultMaxKeys = 100_000

// idlePerCall is how many idle keys each AllowN drops on its way out. More
// than one, so that idle keys drain faster than new keys arrive.
const idlePerCall = 2

// sweepBatch is how many idle keys the sweeper drops per hold of the lock, so
// that a sweep of many keys never stalls requests for long.
const sweepBatch = 1024

var _ resourceapi.RateLimiter = (*RateLimiter)(nil)

// Options configure NewRateLimiter. The zero value is the production default.
type Options struct {
	// MaxKeys caps how many keys the limiter holds state for; 0 is
	// DefaultMaxKeys. Past it, the least recently used key is forgotten: see
	// RateLimiter.
	MaxKeys int
	// SweepInterval is how often a background goroutine drops idle keys; 0
	// is the window, and a negative value starts no goroutine (idle keys are
	// then dropped only by later calls, a few per call).
	SweepInterval time.Duration
	// Now is the limiter's clock; nil is time.Now.
	Now resourceapi.Clock
}

// RateLimiter is a resourceapi.RateLimiter for one process: a GCRA (the token
// bucket kept as one timestamp per key) behind one mutex, so concurrent calls
// are exact. The critical section is a map lookup and a few list pointer
// moves, short enough that sharding would buy little and would make the
// global key cap approximate.
//
// Memory is bounded two ways. A key whose bucket is full again is
// indistinguishable from one never seen, so it is dropped (by the sweeper, and
// a few at a time by later calls). And at most MaxKeys keys are held: a new
// key past the cap evicts the least recently used one. Under a flood of more
// distinct keys than the cap within one window (many client addresses), the
// keys seen least recently lose their state and start again with a full
// budget: the limiter then fails open for them, admitting more than Limit,
// but never refuses a request it should admit and never grows past the cap.
// Keys that keep calling (including refused ones) stay most recently used and
// keep their state.
type RateLimiter struct {
	limit    int
	interval time.Duration // the time one request's token takes to come back
	burst    time.Duration // limit * interval: a whole budget's worth
	maxKeys  int
	now      resourceapi.Clock

	mu   sync.Mutex
	keys map[string]*bucket
	lru  bucket // sentinel of a ring: lru.next is the most recently used

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// bucket is one key's state: its theoretical arrival time (GCRA's TAT), the
// moment the key's budget is whole again. Buckets sit on a ring ordered by
// last use, most recent first.
type bucket struct {
	key        string
	tat        int64 // Unix nanoseconds
	prev, next *bucket
}

// NewRateLimiter returns a limiter that lets each key make limit requests at
// once, refilled evenly over window. It panics when limit or window is not
// positive (a rate limit of 0 means no limiter, which the caller decides). Its
// sweeper runs until Close.
func NewRateLimiter(limit int, window time.Duration, opts Options) *RateLimiter {
	if limit < 1 || window <= 0 {
		panic(fmt.Sprintf("inmem.NewRateLimiter: limit %d per %v, want both positive", limit, window))
	}
	l := &RateLimiter{
		limit:    limit,
		interval: window / time.Duration(limit),
		maxKeys:  opts.MaxKeys,
		now:      opts.Now,
		keys:     make(map[string]*bucket),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if l.interval <= 0 { // more requests than nanoseconds in the window
		l.interval = 1
	}
	l.burst = time.Duration(limit) * l.interval
	if l.maxKeys <= 0 {
		l.maxKeys = DefaultMaxKeys
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.lru.next, l.lru.prev = &l.lru, &l.lru
	every := opts.SweepInterval
	if every == 0 {
		every = window
	}
	if every < 0 {
		close(l.done)
		return l
	}
	go l.sweeper(every)
	return l
}

// AllowN implements resourceapi.RateLimiter. It returns an error only when n is
// negative.
//
// A call that takes n > Limit is never admitted; its RetryAfter is then what
// GCRA computes (the wait for the whole budget plus n-Limit more tokens), as
// the Redis engine reports.
func (l *RateLimiter) AllowN(_ context.Context, key string, n int) (resourceapi.RateDecision, error) {
	if n < 0 {
		return resourceapi.RateDecision{}, fmt.Errorf("rate limit: n = %d, want n >= 0", n)
	}
	now := l.now().UnixNano()
	interval, burst := int64(l.interval), int64(l.burst)

	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.keys[key]
	tat := now
	if b != nil && b.tat > now {
		tat = b.tat
	}
	// Remaining before this call: the whole tokens that have come back.
	remaining := int((now + burst - tat) / interval)
	d := resourceapi.RateDecision{Limit: l.limit, Remaining: remaining, Reset: time.Unix(0, tat), Window: l.burst}
	switch {
	case n == 0:
		d.Allowed = remaining >= 1
		if !d.Allowed {
			d.RetryAfter = time.Duration(tat - burst + interval - now)
		}
	case n <= remaining:
		tat += int64(n) * interval
		d.Allowed = true
		d.Remaining = int((now + burst - tat) / interval)
		d.Reset = time.Unix(0, tat)
		if b == nil {
			b = l.add(key)
		}
		b.tat = tat
	case n <= l.limit:
		d.RetryAfter = time.Duration(tat + int64(n)*interval - burst - now)
	default:
		wait := tat - now
		more := int64(n - l.limit)
		if more > (math.MaxInt64-wait)/interval {
			d.RetryAfter = math.MaxInt64
		} else {
			d.RetryAfter = time.Duration(wait + more*interval)
		}
	}
	if b != nil {
		l.touch(b)
	}
	l.dropIdle(now, idlePerCall)
	return d, nil
}

// Len reports how many keys the limiter holds state for.
func (l *RateLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Close stops the sweeper and waits for it to end. The limiter still answers
// afterwards; idle keys are then dropped only by later calls. Close is safe
// to call more than once.
func (l *RateLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.stop) })
	<-l.done
	return nil
}

func (l *RateLimiter) sweeper(every time.Duration) {
	defer close(l.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.sweep()
		}
	}
}

// sweep drops every idle key, a batch per hold of the lock.
func (l *RateLimiter) sweep() {
	for {
		l.mu.Lock()
		more := l.dropIdle(l.now().UnixNano(), sweepBatch)
		l.mu.Unlock()
		if !more {
			return
		}
	}
}

// dropIdle drops up to max idle keys from the least recently used end, and
// reports whether it stopped for the limit rather than for lack of idle keys.
// Walking from that end finds every key idle for a window or more: a key's
// TAT is never more than a window past its last use, so once the oldest key
// is not idle, no key used a window or more ago remains. Keys that became idle
// more recently wait for a later pass, at most a window.
func (l *RateLimiter) dropIdle(now int64, max int) bool {
	for range max {
		b := l.lru.prev
		if b == &l.lru || b.tat > now {
			return false
		}
		l.remove(b)
	}
	return true
}

// add starts a bucket for key, evicting the least recently used key when the
// cap is reached. The caller holds l.mu.
func (l *RateLimiter) add(key string) *bucket {
	if len(l.keys) >= l.maxKeys {
		l.remove(l.lru.prev)
	}
	// The key may be a slice of a larger string (a header); keep only its bytes.
	b := &bucket{key: strings.Clone(key)}
	l.keys[b.key] = b
	l.pushFront(b)
	return b
}

// touch makes b the most recently used bucket. The caller holds l.mu.
func (l *RateLimiter) touch(b *bucket) {
	if l.lru.next == b {
		return
	}
	b.prev.next, b.next.prev = b.next, b.prev
	l.pushFront(b)
}

func (l *RateLimiter) pushFront(b *bucket) {
	b.prev, b.next = &l.lru, l.lru.next
	l.lru.next.prev = b
	l.lru.next = b
}

func (l *RateLimiter) remove(b *bucket) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
	delete(l.keys, b.key)
}
