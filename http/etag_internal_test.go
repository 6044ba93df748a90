package http

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// TestAppendHTTPDate compares appendHTTPDate with time's formatting of
// http.TimeFormat: every weekday and month, the ends of days and years, years
// of fewer than four digits and beyond 9999 (formatted by time), zones other
// than UTC, and random instants.
func TestAppendHTTPDate(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	west := time.FixedZone("west", -7*3600)
	times := []time.Time{
		{},
		time.Date(2026, 11, 29, 13, 45, 7, 123456789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 0, east),
		time.Date(2025, 1, 1, 2, 0, 0, 0, east),    // the previous year in UTC
		time.Date(2025, 12, 31, 20, 0, 0, 0, west), // the next year in UTC
		time.Date(9, 3, 4, 5, 6, 7, 0, time.UTC),
		time.Date(999, 10, 11, 1, 2, 3, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 0, 0, 0, 0, time.UTC),
		time.Now(),
	}
	for d := range 14 {
		times = append(times, time.Date(2026, time.Month(1+d%12), 1+d, d, d, d, 0, time.UTC))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400*365*86400)-100*365*86400, rng.Int64N(1e9)))
	}
	for _, tm := range times {
		got := string(appendHTTPDate([]byte("x"), tm))
		if want := "x" + tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("appendHTTPDate(%v) = %q, want %q", tm, got, want)
		}
	}
}
