package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of two,
// so a reported value is within 1/2^subBits (0.8%) of a recorded one.
const subBits = 7

// numBuckets covers every non-negative int64: values below 2^(subBits+1) ns
// each have a bucket, and each power of two above has 2^subBits.
const numBuckets = (64 - subBits) << subBits

// histogram counts latencies in log-linear buckets, in the manner of
// HdrHistogram: fixed memory (58 KiB) however long the run, O(1) to record,
// and mergeable across workers without locks or sorting.
type histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

// bucket returns the index of the bucket that holds v: the top subBits+1
// significant bits of v, offset by how far they were shifted.
func bucket(v uint64) int {
	shift := max(0, bits.Len64(v)-subBits-1)
	return shift<<subBits + int(v>>shift)
}

// bounds returns the smallest and largest value that fall in bucket i.
func bounds(i int) (lo, hi uint64) {
	shift := max(0, i>>subBits-1)
	mant := uint64(i - shift<<subBits)
	return mant << shift, (mant+1)<<shift - 1
}

func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucket(uint64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the latency below which a fraction q of the recorded
// latencies lie: the middle of the bucket holding the ceil(q*n)th smallest,
// never more than the true maximum.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := max(1, uint64(math.Ceil(q*float64(h.n))))
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			lo, hi := bounds(i)
			return min(time.Duration(lo+(hi-lo)/2), h.max)
		}
	}
	return h.max
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}
