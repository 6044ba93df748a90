package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/storetest"
)

// copyMigrations copies the released SQLite migrations into a new directory
// and adds a migration written by hand after them, as another branch may. It
// returns the directory and the number the next migration should take: two
// after the highest released.
func copyMigrations(t *testing.T) (dir, next string) {
	t.Helper()
	dir = t.TempDir()
	released := sqlite.Migrations()
	highest := 0
	err := fs.WalkDir(released, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0]); err == nil {
			highest = max(highest, n)
		}
		b, err := fs.ReadFile(released, name)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if highest == 0 {
		t.Fatal("no numbered migration released")
	}
	byHand := fmt.Sprintf("%05d_by_hand.sql", highest+1)
	if err := os.WriteFile(filepath.Join(dir, byHand), []byte("-- +goose Up\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, fmt.Sprintf("%05d", highest+2)
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestRun checks what go generate does with a new declaration: the next
// migration, numbered after the highest present, and the new snapshot; then
// nothing, once they are written.
func TestRun(t *testing.T) {
	dir, next := copyMigrations(t)
	before := files(t, dir)
	resources := append(resourceapi.Declared(), storetest.Gadgets())
	var out bytes.Buffer
	if err := run([]string{"-dialect", "sqlite", "-dir", dir}, &out, resources); err != nil {
		t.Fatal(err)
	}
	migration := filepath.Join(dir, next+"_gadgets.sql")
	b, err := os.ReadFile(migration)
	if err != nil {
		t.Fatalf("no migration written: %v (output %q, files %v)", err, out.String(), files(t, dir))
	}
	want, _, _ := sqlite.GenerateMigration(mustSnapshot(t, sqlite.Migrations()), resources)
	if string(b) != want.SQL {
		t.Errorf("%s holds\n%s\nwant\n%s", migration, b, want.SQL)
	}
	if got := mustSnapshot(t, os.DirFS(dir)).JSON(); !bytes.Equal(got, sqlstore.SnapshotOf(resources).JSON()) {
		t.Errorf("the snapshot written is not that of the declarations:\n%s", got)
	}
	if got, want := files(t, dir), append(slices.Clone(before), next+"_gadgets.sql"); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("files = %v, want %v", got, want)
	}
	if !strings.Contains(out.String(), "wrote "+migration) {
		t.Errorf("output %q does not name %s", out.String(), migration)
	}

	out.Reset()
	if err := run([]string{"-dialect", "sqlite", "-dir", dir}, &out, resources); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || len(files(t, dir)) != len(before)+1 {
		t.Errorf("a second run wrote %q, files %v; want nothing", out.String(), files(t, dir))
	}
}

// TestRunRefused checks that a change the generator refuses writes nothing
// and says how to go on, and that -record then records the declarations.
func TestRunRefused(t *testing.T) {
	dir, _ := copyMigrations(t)
	snapshot := filepath.Join(dir, sqlstore.SnapshotFile)
	old, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	// Without the comments of articles: their table would be dropped.
	resources := slices.DeleteFunc(resourceapi.Declared(), func(r *resourceapi.Resource) bool { return r == resourceapi.Comments })
	var out bytes.Buffer
	err = run([]string{"-dialect", "sqlite", "-dir", dir}, &out, resources)
	if err == nil {
		t.Fatal("run succeeded")
	}
	for _, want := range []string{"resource comments is no longer declared", "written by hand", "-record", "docs/architecture.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got, _ := os.ReadFile(snapshot); !bytes.Equal(got, old) || !slices.Equal(files(t, dir), before) {
		t.Errorf("a refused change wrote files: %v", files(t, dir))
	}

	if err := run([]string{"-dialect", "sqlite", "-dir", dir, "-record"}, &out, resources); err != nil {
		t.Fatal(err)
	}
	if got := mustSnapshot(t, os.DirFS(dir)).JSON(); !bytes.Equal(got, sqlstore.SnapshotOf(resources).JSON()) {
		t.Errorf("-record wrote\n%s\nwant the snapshot of the declarations", got)
	}
	if !slices.Equal(files(t, dir), before) {
		t.Errorf("-record wrote a migration: %v", files(t, dir))
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-dialect", "mysql", "-dir", "x"}, {"-dialect", "sqlite"}, {"-dialect", "sqlite", "-dir", "x", "extra"}} {
		if err := run(args, &bytes.Buffer{}, resourceapi.Declared()); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func mustSnapshot(t *testing.T, dir fs.FS) *sqlstore.Snapshot {
	t.Helper()
	s, err := sqlstore.ReadSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
