package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestMigrationsCurrent checks that the migrations are what go generate
// makes of the declarations now: a declaration changed without it needs a
// migration that is not there, or leaves the snapshot stale.
func TestMigrationsCurrent(t *testing.T) {
	released := postgres.Migrations()
	b, err := fs.ReadFile(released, sqlstore.SnapshotFile)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := sqlstore.ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	m, next, err := postgres.GenerateMigration(snap, resourceapi.Declared())
	if err != nil {
		t.Fatalf("GenerateMigration: %v", err)
	}
	if m.SQL != "" {
		t.Errorf("the declarations need a migration that is not in postgres/migrations: run go generate ./postgres\n%s", m.SQL)
	}
	if !bytes.Equal(next.JSON(), b) {
		t.Errorf("postgres/migrations/%s is not the snapshot of the declarations: run go generate ./postgres", sqlstore.SnapshotFile)
	}
}

// TestGeneratedMigration declares a resource the releases do not have,
// generates its migration, applies it over the released migrations and
// checks the database (storetest.CheckGenerated), the identity version
// included; then does the same with a later change of the declaration, on
// the database that already holds a record, which the change's new columns
// must reach.
func TestGeneratedMigration(t *testing.T) {
	released := postgres.Migrations()
	snap, err := sqlstore.ReadSnapshot(released)
	if err != nil {
		t.Fatal(err)
	}
	gadgets, changed := storetest.Gadgets(), storetest.GadgetsChanged()
	first, snap := mustGenerate(t, snap, gadgets)
	for _, want := range []string{"CREATE TABLE gadgets (", "CREATE TABLE gadget_parts (", "gadgets_identity", "UPDATE roles",
		"solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON gadgets ", "solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON gadget_parts "} {
		if !strings.Contains(first, want) {
			t.Errorf("migration of a new resource lacks %q:\n%s", want, first)
		}
	}
	second, _ := mustGenerate(t, snap, changed)
	for _, want := range []string{"ALTER TABLE gadgets ADD COLUMN serial ", "ALTER TABLE gadgets ADD COLUMN rank integer NOT NULL DEFAULT 3 ", "DROP INDEX gadgets_search_trgm;", "ALTER TABLE gadgets_search ADD COLUMN color_lower text;"} {
		if !strings.Contains(second, want) {
			t.Errorf("migration of the changed resource lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "CREATE TABLE gadgets") {
		t.Errorf("migration of the changed resource creates its table again:\n%s", second)
	}

	url := pgtest.NewDatabase(t)
	var loom resourceapi.Record
	t.Run("new", func(t *testing.T) {
		store, db := mustOpenMigrated(t, url, released, first)
		storetest.CheckGenerated(t, db, introspection, store, gadgets)
		mustSearchTriggers(t, db, gadgets)
		mustCountShards(t, db, postgres.RowsFunction(gadgets.Name))
		mustCountsTruncate(t, db, gadgets.Name)
		owner := mustCreateIn(t, store, resourceapi.Users, resourceapi.Record{"name": "Jacquard", "email": "jacquard@example.com"})
		loom = mustCreateIn(t, store, gadgets, resourceapi.Record{"owner_id": owner.ID(), "name": "Loom", "weight": int64(900), "color": "green"})

		// The token decides access: changing it moves the identity
		// version, and changing the note does not.
		for _, tt := range []struct {
			patch resourceapi.Record
			moves bool
		}{
			{resourceapi.Record{"note": "punched cards"}, false},
			{resourceapi.Record{"token": resourceapi.HashToken("loom")}, true},
		} {
			before := mustIdentityVersion(t, db)
			if _, err := store.Update(context.Background(), gadgets, loom.ID(), tt.patch, nil); err != nil {
				t.Fatalf("Update(%v) = %v", tt.patch, err)
			}
			if moved := mustIdentityVersion(t, db) != before; moved != tt.moves {
				t.Errorf("Update(%v): identity version moved = %v, want %v", tt.patch, moved, tt.moves)
			}
		}
	})
	t.Run("upgraded", func(t *testing.T) {
		store, db := mustOpenMigrated(t, url, released, first, second)
		storetest.CheckGenerated(t, db, introspection, store, changed)
		mustSearchTriggers(t, db, changed)
		mustCountShards(t, db, postgres.RowsFunction(changed.Name))
		mustCountsTruncate(t, db, changed.Name)
		got, err := store.Get(context.Background(), changed, loom.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got["rank"] != int64(3) || got["serial"] != nil || got["note"] != "punched cards" {
			t.Errorf("the record written before the change = %v, want the new fields' defaults (rank 3, serial null)", got)
		}
	})
}

// mustGenerate returns the migration of the declarations with res, and
// their snapshot.
func mustGenerate(t *testing.T, snap *sqlstore.Snapshot, res *resourceapi.Resource) (string, *sqlstore.Snapshot) {
	t.Helper()
	m, next, err := postgres.GenerateMigration(snap, append(resourceapi.Declared(), res))
	if err != nil {
		t.Fatalf("GenerateMigration(%s): %v", res.Name, err)
	}
	if m.SQL == "" || m.Name != res.Name {
		t.Fatalf("GenerateMigration(%s) = %q named %q, want a migration named for it", res.Name, m.SQL, m.Name)
	}
	return m.SQL, next
}

// mustOpenMigrated opens the store at url with the released migrations and
// those generated, and a database handle for the schema checks.
func mustOpenMigrated(t *testing.T, url string, released fs.FS, generated ...string) (*postgres.DB, *sql.DB) {
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
		file, err := sqlstore.MigrationFileName(fsys, sqlstore.Migration{Name: "generated"}, postgres.GoMigrationVersions()...)
		if err != nil {
			t.Fatal(err)
		}
		fsys[file] = &fstest.MapFile{Data: []byte(sql)}
	}
	store, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 2, Migrations: fsys})
	if err != nil {
		t.Fatalf("open with the generated migrations: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
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

func mustIdentityVersion(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var v int64
	if err := db.QueryRow("SELECT version FROM identity_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGeneratedMigrationStages follows storetest.Widgets through its stages
// on one database, generating and applying a migration for each: a search
// index made for a table that had none, a secret that comes to decide
// access (the identity version moves with it) and then no longer does, a
// new items table.
func TestGeneratedMigrationStages(t *testing.T) {
	released := postgres.Migrations()
	snap, err := sqlstore.ReadSnapshot(released)
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.NewDatabase(t)
	var migrations []string
	var widget resourceapi.Record
	for stage := range 3 {
		res := storetest.Widgets(stage)
		var m string
		m, snap = mustGenerate(t, snap, res)
		migrations = append(migrations, m)
		t.Run(strconv.Itoa(stage), func(t *testing.T) {
			store, db := mustOpenMigrated(t, url, released, migrations...)
			storetest.CheckSchemaOf(t, db, introspection, res)
			mustSearchTriggers(t, db, res)
			if stage == 0 {
				owner := mustCreateIn(t, store, resourceapi.Users, resourceapi.Record{"name": "Widget Owner", "email": "widgets@example.com"})
				widget = mustCreateIn(t, store, res, resourceapi.Record{"owner_id": owner.ID(), "label": "Sprocket"})
				return
			}
			if stage == 1 {
				// The record written before its field was searchable is
				// found: the search table was filled from the table.
				page, err := store.List(context.Background(), res, resourceapi.ListQuery{Limit: 10, Sort: "id", Search: "SPROCK"})
				if err != nil || page.Total != 1 || len(page.Records) != 1 || page.Records[0].ID() != widget.ID() {
					t.Errorf("stage 1: q=SPROCK found %d records of %d, %v; want the widget written at stage 0", len(page.Records), page.Total, err)
				}
			}
			before := mustIdentityVersion(t, db)
			if _, err := store.Update(context.Background(), res, widget.ID(), resourceapi.Record{"key": resourceapi.HashToken(strconv.Itoa(stage))}, nil); err != nil {
				t.Fatal(err)
			}
			if moved, want := mustIdentityVersion(t, db) != before, stage == 1; moved != want {
				t.Errorf("stage %d: a new key moved the identity version = %v, want %v", stage, moved, want)
			}
		})
	}
}
