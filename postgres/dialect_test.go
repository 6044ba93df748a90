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

// TestSearchIndexed: a q has a trigram for pg_trgm when it has three ASCII
// letters or digits in a row; otherwise it is searched without the index.
func TestSearchIndexed(t *testing.T) {
	for q, want := range map[string]bool{
		"abc": true, "ABC": true, "x1y": true, "user00042": true, "a b cde": true, "@example.com": true,
		"": false, "a": false, "ab": false, "ab cd": false, "a.b.c": false, "1@2": false, "%_\\": false,
		"été": false, "日本語": false,
	} {
		if got := postgres.SearchIndexed(q); got != want {
			t.Errorf("SearchIndexed(%q) = %v, want %v", q, got, want)
		}
	}
}
