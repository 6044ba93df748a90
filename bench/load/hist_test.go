package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	values := []uint64{0, 1, 127, 128, 255, 256, 257, 1000, 1 << 20, 1<<20 + 12345, 1<<62 + 1, 1<<63 - 1}
	for range 10000 {
		values = append(values, rand.Uint64N(1<<63))
	}
	for _, v := range values {
		i := bucket(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucket(%d) = %d, want in [0, %d)", v, i, numBuckets)
		}
		lo, hi := bounds(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d with bounds [%d, %d]", v, i, lo, hi)
		}
		// The relative width of a bucket is the histogram's precision.
		if err := float64(hi-lo) / float64(max(lo, 1)); lo >= 1<<subBits && err > 1.0/(1<<subBits) {
			t.Fatalf("bucket %d [%d, %d] is %.4f wide, want at most %.4f", i, lo, hi, err, 1.0/(1<<subBits))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	// 1µs, 2µs, ..., 100ms spread over two histograms, merged.
	var a, b histogram
	for i := 1; i <= 100000; i++ {
		h := &a
		if i%2 == 0 {
			h = &b
		}
		h.record(time.Duration(i) * time.Microsecond)
	}
	a.merge(&b)
	if got, want := a.n, uint64(100000); got != want {
		t.Fatalf("n = %d, want %d", got, want)
	}
	if got, want := a.max, 100*time.Millisecond; got != want {
		t.Errorf("max = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50 * time.Millisecond},
		{0.9, 90 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{0, time.Microsecond},
	} {
		got := a.quantile(tc.q)
		if diff := (got - tc.want).Abs(); float64(diff) > float64(tc.want)/(1<<subBits) {
			t.Errorf("quantile(%v) = %v, want %v within 1/%d", tc.q, got, tc.want, 1<<subBits)
		}
	}
	if got, want := a.mean(), 50000500*time.Nanosecond; got != want {
		t.Errorf("mean = %v, want %v", got, want)
	}
	var empty histogram
	if got := empty.quantile(0.5); got != 0 {
		t.Errorf("empty quantile = %v, want 0", got)
	}
}
