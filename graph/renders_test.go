package graph

import (
	"strings"
	"testing"
)

// The shared renderings stay within their bounds: count and bytes.
func TestRendersBounded(t *testing.T) {
	var rs renders
	big := []byte(strings.Repeat("x", 1<<20))
	for i := int64(1); i <= 3*maxRenders; i++ {
		k := renderKey{event: i, doc: "d", caller: "c"}
		r := rs.get(k)
		r.once.Do(func() { r.payload, r.ok = big[:int(i%64)<<14], true })
		rs.sized(k, r)
		if len(rs.m) > maxRenders || rs.bytes > maxRenderBytes || rs.bytes < 0 {
			t.Fatalf("after %d renderings: %d kept, %d bytes", i, len(rs.m), rs.bytes)
		}
	}
	var sum int64
	for _, r := range rs.m {
		sum += r.size
	}
	if sum != rs.bytes {
		t.Fatalf("bytes = %d, the kept renderings hold %d", rs.bytes, sum)
	}
	// A rendering dropped while in use is rendered anew for the next.
	k := renderKey{event: 1, doc: "d", caller: "c"}
	if r := rs.get(k); r.ok {
		t.Fatal("a dropped rendering came back")
	}
}
