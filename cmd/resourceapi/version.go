package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the release version, set when a release is built:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/resourceapi
//
// Without it the binary reports the module version Go recorded in it: a
// tag or pseudo-version with go install, "(devel)" or a pseudo-version in
// a work tree.
var version string

// build is what the binary knows of how it was built.
type build struct {
	Version  string // the release or module version
	Revision string // the VCS revision, "" when unknown
	Time     string // the revision's commit time (RFC 3339), "" when unknown
	Modified bool   // the work tree had changes not in the revision
	Go       string // the Go version that built it
	Platform string // GOOS/GOARCH
}

// readBuild reads the build information Go records in the binary.
func readBuild() build {
	return buildFrom(debug.ReadBuildInfo())
}

// buildFrom returns what bi says of the build, with the release version
// when one was set.
func buildFrom(bi *debug.BuildInfo, ok bool) build {
	b := build{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			b.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	return b
}

// String returns the build on one line, as the startup log and GraphQL's
// adminData.version report it: "v1.2.3 (revision 5294d6a1b2c3,
// 2026-11-24T10:00:00Z, go1.26.8)".
func (b build) String() string {
	var parts []string
	if b.Revision != "" {
		rev := b.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		parts = append(parts, "revision "+rev)
	}
	if b.Time != "" {
		parts = append(parts, b.Time)
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	parts = append(parts, b.Go)
	return b.Version + " (" + strings.Join(parts, ", ") + ")"
}

var versionCommand = &command{
	name:    "version",
	summary: "print the version, VCS revision and Go version of this binary (also --version)",
	about: `Print the version of this binary, the VCS revision and time it was built
from, and the Go version that built it. The first line is what the server
logs when it starts and what GraphQL's adminData.version reports.`,
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, e *invocation, args []string) error {
			b := readBuild()
			fmt.Fprintf(e.stdout, "resourceapi %s\n", b)
			fmt.Fprintf(e.stdout, "  version:   %s\n", b.Version)
			fmt.Fprintf(e.stdout, "  revision:  %s\n", firstNonEmpty(b.Revision, "unknown"))
			fmt.Fprintf(e.stdout, "  time:      %s\n", firstNonEmpty(b.Time, "unknown"))
			fmt.Fprintf(e.stdout, "  modified:  %t\n", b.Modified)
			fmt.Fprintf(e.stdout, "  go:        %s %s\n", b.Go, b.Platform)
			return nil
		}
	},
}
