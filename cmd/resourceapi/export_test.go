package main

import "github.com/resourceapi/resourceapi"

// Run is run, for the tests of package main_test that serve in-process.
var Run = run

// SetServingHook makes every serve call f with its instance's events as it
// starts, until restore is called. Tests that set it do not run in parallel.
func SetServingHook(f func(resourceapi.Events)) (restore func()) {
	testHookServing = f
	return func() { testHookServing = nil }
}
