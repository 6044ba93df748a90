//go:build !unix

package http_test

import "time"

// processCPU is not measured here: serveParallel reports no cpu-ns/op.
func processCPU() (time.Duration, bool) { return 0, false }
