package postgres_test

import (
	"strconv"
	"testing"

	"github.com/resourceapi/resourceapi/postgres"
)

// sink keeps what the allocation tests make, as a statement's text does.
var sink string

// TestPlaceholder: $n for every n, and without an allocation for the
// numbers a statement commonly has (a write's dozen).
func TestPlaceholder(t *testing.T) {
	for n := 1; n <= 200; n++ {
		if got, want := postgres.Placeholder(n), "$"+strconv.Itoa(n); got != want {
			t.Fatalf("Placeholder(%d) = %q, want %q", n, got, want)
		}
	}
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	n := 1
	if a := testing.AllocsPerRun(100, func() { sink = postgres.Placeholder(n%63 + 1); n++ }); a != 0 {
		t.Fatalf("Placeholder: %.1f allocations, want 0", a)
	}
}
