//go:build race

package postgres_test

// raceEnabled: the race detector is on. Its sync.Pool drops a quarter of
// what is put back, so allocation counts that pools keep low vary.
const raceEnabled = true
