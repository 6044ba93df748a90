//go:build !race

package postgres_test

// raceEnabled: the race detector is on (race_test.go).
const raceEnabled = false
