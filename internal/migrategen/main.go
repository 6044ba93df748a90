// Command migrategen writes the next migration of a store's schema from the
// resource declarations (sqlstore.GenerateMigration). The go:generate lines
// of packages sqlite and postgres run it in their directories, so
// `go generate ./...` brings both up to date:
//
//	go run ../internal/migrategen -dialect sqlite -dir migrations
//
// It compares the declarations (resourceapi.Declared) with the snapshot of
// what the migrations made of them, <dir>/declared.json, and when they need
// a migration writes it as <dir>/<version>_<name>.sql, the version after the
// highest there, and writes the new snapshot. A change it cannot write
// (one that would drop or convert data) is refused with what to do instead.
// With -record it writes only the snapshot, of the declarations as they are:
// after a migration written by hand.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, resourceapi.Declared()); err != nil {
		fmt.Fprintln(os.Stderr, "migrategen:", err)
		os.Exit(1)
	}
}

// generators are the stores' GenerateMigration, by dialect name (the name
// of the store's package and directory).
var generators = map[string]func(*sqlstore.Snapshot, []*resourceapi.Resource) (sqlstore.Migration, *sqlstore.Snapshot, error){
	"sqlite":   sqlite.GenerateMigration,
	"postgres": postgres.GenerateMigration,
}

// goVersions are the versions of each store's migrations written in Go,
// which a generated migration is numbered after too.
var goVersions = map[string]func() []int64{
	"sqlite":   sqlite.GoMigrationVersions,
	"postgres": postgres.GoMigrationVersions,
}

func run(args []string, stdout io.Writer, resources []*resourceapi.Resource) error {
	fl := flag.NewFlagSet("migrategen", flag.ContinueOnError)
	fl.SetOutput(stdout)
	dialect := fl.String("dialect", "", "the store: sqlite or postgres")
	dir := fl.String("dir", "", "the store's migrations directory")
	record := fl.Bool("record", false, "write only the snapshot of the declarations, after a migration written by hand")
	if err := fl.Parse(args); err != nil {
		return err
	}
	generate := generators[*dialect]
	if generate == nil || *dir == "" || fl.NArg() > 0 {
		return errors.New("usage: migrategen -dialect sqlite|postgres -dir <migrations directory> [-record]")
	}
	snapPath := filepath.Join(*dir, sqlstore.SnapshotFile)
	if *record {
		return writeSnapshot(stdout, *dialect, snapPath, sqlstore.SnapshotOf(resources))
	}
	old, err := sqlstore.ReadSnapshot(os.DirFS(*dir))
	if err != nil {
		return fmt.Errorf("%s: %w (with a first migration written by hand, -record writes it)", snapPath, err)
	}
	m, next, err := generate(old, resources)
	var refused *sqlstore.RefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("%s: %w\n"+
			"Write that migration by hand, for each store (sqlite/migrations and postgres/migrations: the version\n"+
			"after the highest there, and after the stores' Go migrations in sqlite.go and postgres.go), then record the declarations it brings about in each store's snapshot:\n"+
			"    go run ./internal/migrategen -dialect sqlite -dir sqlite/migrations -record\n"+
			"    go run ./internal/migrategen -dialect postgres -dir postgres/migrations -record\n"+
			"and check the result with go test ./sqlite ./postgres (TestSchema); see docs/architecture.md, \"Generated migrations\"",
			*dir, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *dir, err)
	}
	if m.SQL != "" {
		file, err := sqlstore.MigrationFileName(os.DirFS(*dir), m, goVersions[*dialect]()...)
		if err != nil {
			return err
		}
		path := filepath.Join(*dir, file)
		if err := os.WriteFile(path, []byte(m.SQL), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "migrategen (%s): wrote %s\n", *dialect, path)
	}
	return writeSnapshot(stdout, *dialect, snapPath, next)
}

// writeSnapshot writes s to path unless the file holds it already.
func writeSnapshot(stdout io.Writer, dialect, path string, s *sqlstore.Snapshot) error {
	b := s.JSON()
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b) {
		return nil
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrategen (%s): wrote %s\n", dialect, path)
	return nil
}
