package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildFrom reads the module version, the VCS stamp and the Go version
// from build information as Go records it, and lets -X main.version name
// the release.
func TestBuildFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/resourceapi/resourceapi", Version: "v0.0.0-20261124100000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-24T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	b := buildFrom(bi, true)
	want := build{Version: "v0.0.0-20261124100000-0123456789ab+dirty", Revision: "0123456789abcdef0123456789abcdef01234567",
		Time: "2026-11-24T10:00:00Z", Modified: true, Go: "go1.99.1", Platform: b.Platform}
	if b != want {
		t.Fatalf("buildFrom = %+v, want %+v", b, want)
	}
	if got, want := b.String(), "v0.0.0-20261124100000-0123456789ab+dirty (revision 0123456789ab, 2026-11-24T10:00:00Z, modified, go1.99.1)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	version = "v1.2.3"
	defer func() { version = "" }()
	if got := buildFrom(bi, true).Version; got != "v1.2.3" {
		t.Errorf("with -X main.version=v1.2.3, Version = %q", got)
	}
	if got := buildFrom(nil, false); got.Version != "v1.2.3" || !strings.HasPrefix(got.Go, "go") || got.Revision != "" {
		t.Errorf("without build information: %+v", got)
	}
}
