package main_test

import (
	"os"
	"testing"
)

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	os.RemoveAll(binDir())
	os.Exit(code)
}
