package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestMigrationsCurrent checks that the migrations are what go generate
// makes of the declarations now: a declaration changed without it needs a
// migration that is not there, or leaves the snapshot stale.
func TestMigrationsCurrent(t *testing.T) {
	released := sqlite.Migrations()
	b, err := fs.ReadFile(released, sqlstore.SnapshotFile)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := sqlstore.ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	m, next, err := sqlite.GenerateMigration(snap, resourceapi.Declared())
	if err != nil {
		t.Fatalf("GenerateMigration: %v", err)
	}
	if m.SQL != "" {
		t.Errorf("the declarations need a migration that is not in sqlite/migrations: run go generate ./sqlite\n%s", m.SQL)
	}
	if !bytes.Equal(next.JSON(), b) {
		t.Errorf("sqlite/migrations/%s is not the snapshot of the declarations: run go generate ./sqlite", sqlstore.SnapshotFile)
	}
}

// TestGeneratedMigration declares a resource the releases do not have,
// generates its migration, applies it over the released migrations and
// checks the database (storetest.CheckGenerated); then does the same with a
// later change of the declaration, both on a new database and on the one
// that already holds a record, which the change's new columns and rebuilt
// search index must reach.
func TestGeneratedMigration(t *testing.T) {
	released := sqlite.Migrations()
	snap, err := sqlstore.ReadSnapshot(released)
	if err != nil {
		t.Fatal(err)
	}
	gadgets, changed := storetest.Gadgets(), storetest.GadgetsChanged()
	first, snap := mustGenerate(t, snap, gadgets)
	for _, want := range []string{"CREATE TABLE gadgets (", "CREATE TABLE gadget_parts (", "gadgets_fts_pending", "UPDATE roles"} {
		if !strings.Contains(first, want) {
			t.Errorf("migration of a new resource lacks %q:\n%s", want, first)
		}
	}
	second, _ := mustGenerate(t, snap, changed)
	for _, want := range []string{"ALTER TABLE gadgets ADD COLUMN serial ", "ALTER TABLE gadgets ADD COLUMN rank INTEGER NOT NULL DEFAULT 3 ", "DROP TABLE gadgets_fts;"} {
		if !strings.Contains(second, want) {
			t.Errorf("migration of the changed resource lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "CREATE TABLE gadgets") {
		t.Errorf("migration of the changed resource creates its table again:\n%s", second)
	}

	path := filepath.Join(t.TempDir(), "gadgets.db")
	t.Run("new", func(t *testing.T) {
		store, db := mustOpenMigrated(t, path, released, first)
		storetest.CheckGenerated(t, db, introspection, store, gadgets)
		owner := mustCreateIn(t, store, resourceapi.Users, resourceapi.Record{"name": "Jacquard", "email": "jacquard@example.com"})
		mustCreateIn(t, store, gadgets, resourceapi.Record{"owner_id": owner.ID(), "name": "Loom", "weight": int64(900), "color": "green"})
	})
	t.Run("changed", func(t *testing.T) {
		store, db := mustOpenMigrated(t, filepath.Join(t.TempDir(), "changed.db"), released, first, second)
		storetest.CheckGenerated(t, db, introspection, store, changed)
	})
	t.Run("upgraded", func(t *testing.T) {
		store, db := mustOpenMigrated(t, path, released, first, second)
		storetest.CheckGenerated(t, db, introspection, store, changed)
		mustFindOne(t, store, changed, "q=green&sort=weight", func(loom resourceapi.Record) {
			if loom["name"] != "Loom" || loom["rank"] != int64(3) || loom["serial"] != nil {
				t.Errorf("the record written before the change = %v, want Loom with the new fields' defaults (rank 3, serial null)", loom)
			}
		})
	})
}

// mustGenerate returns the migration of the declarations with res, and
// their snapshot.
func mustGenerate(t *testing.T, snap *sqlstore.Snapshot, res *resourceapi.Resource) (string, *sqlstore.Snapshot) {
	t.Helper()
	m, next, err := sqlite.GenerateMigration(snap, append(resourceapi.Declared(), res))
	if err != nil {
		t.Fatalf("GenerateMigration(%s): %v", res.Name, err)
	}
	if m.SQL == "" || m.Name != res.Name {
		t.Fatalf("GenerateMigration(%s) = %q named %q, want a migration named for it", res.Name, m.SQL, m.Name)
	}
	return m.SQL, next
}

// mustOpenMigrated opens the store at path with the released migrations and
// those generated, and a read-only database handle for the schema checks.
func mustOpenMigrated(t *testing.T, path string, released fs.FS, generated ...string) (*sqlite.DB, *sql.DB) {
	t.Helper()
	fsys := fstest.MapFS{}
	err := fs.WalkDir(released, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(released, name)
		fsys[name] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range generated {
		file, err := sqlstore.MigrationFileName(fsys, sqlstore.Migration{Name: "generated"}, sqlite.GoMigrationVersions()...)
		if err != nil {
			t.Fatal(err)
		}
		fsys[file] = &fstest.MapFile{Data: []byte(sql)}
	}
	store, err := sqlite.Open(context.Background(), path, sqlite.Options{Migrations: fsys})
	if err != nil {
		t.Fatalf("open with the generated migrations: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return store, db
}

func mustCreateIn(t *testing.T, s resourceapi.Store, res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Record {
	t.Helper()
	if err := resourceapi.Validate(res, rec, resourceapi.ModeCreate); err != nil {
		t.Fatalf("Validate(%s, %v) = %v", res.Name, rec, err)
	}
	created, err := s.Create(context.Background(), res, rec)
	if err != nil {
		t.Fatalf("Create(%s, %v) = %v", res.Name, rec, err)
	}
	return created
}

// mustFindOne lists res with the query params and checks the one record
// found with check.
func mustFindOne(t *testing.T, s resourceapi.Store, res *resourceapi.Resource, params string, check func(resourceapi.Record)) {
	t.Helper()
	q, err := url.ParseQuery(params)
	if err != nil {
		t.Fatal(err)
	}
	lq, err := rhttp.ParseListQuery(res, q)
	if err != nil {
		t.Fatalf("ParseListQuery(%s) = %v", params, err)
	}
	page, err := s.List(context.Background(), res, lq)
	if err != nil {
		t.Fatalf("List(%s) = %v", params, err)
	}
	if page.Total != 1 || len(page.Records) != 1 {
		t.Fatalf("List(%s) = %d records of %d, want 1", params, len(page.Records), page.Total)
	}
	check(page.Records[0])
}

// TestGeneratedMigrationStages follows storetest.Widgets through its stages
// on one database, generating and applying a migration for each: a search
// index made for a table that holds a record (which it must find), a new
// items table, and a search index dropped.
func TestGeneratedMigrationStages(t *testing.T) {
	released := sqlite.Migrations()
	snap, err := sqlstore.ReadSnapshot(released)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "widgets.db")
	var migrations []string
	for stage := range 3 {
		res := storetest.Widgets(stage)
		var m string
		m, snap = mustGenerate(t, snap, res)
		migrations = append(migrations, m)
		t.Run(strconv.Itoa(stage), func(t *testing.T) {
			store, db := mustOpenMigrated(t, path, released, migrations...)
			storetest.CheckSchemaOf(t, db, introspection, res)
			switch stage {
			case 0:
				owner := mustCreateIn(t, store, resourceapi.Users, resourceapi.Record{"name": "Widget Owner", "email": "widgets@example.com"})
				mustCreateIn(t, store, res, resourceapi.Record{"owner_id": owner.ID(), "label": "Sprocket"})
			case 1:
				mustFindOne(t, store, res, "q=procke", func(rec resourceapi.Record) {
					if rec["label"] != "Sprocket" {
						t.Errorf("found %v, want the sprocket", rec)
					}
				})
			}
		})
	}
}
