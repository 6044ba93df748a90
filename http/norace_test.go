//go:build !race

package http_test

// raceEnabled: the race detector is on (race_test.go).
const raceEnabled = false
