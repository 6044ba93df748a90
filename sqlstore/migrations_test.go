package sqlstore_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/storetest"
)

// generators are the stores' migration generators: what the generator
// decides (what to write, what to refuse) must not depend on the database.
var generators = map[string]func(*sqlstore.Snapshot, []*resourceapi.Resource) (sqlstore.Migration, *sqlstore.Snapshot, error){
	"sqlite": sqlite.GenerateMigration, "postgres": postgres.GenerateMigration,
}

// gadgetsSnapshot returns the snapshot of the declarations with Gadgets, as
// the migrations that added it leave it.
func gadgetsSnapshot() *sqlstore.Snapshot {
	return sqlstore.SnapshotOf(append(resourceapi.Declared(), storetest.Gadgets()))
}

// gadgetsWith returns the declarations with Gadgets changed by change.
func gadgetsWith(change func(r *resourceapi.Resource)) []*resourceapi.Resource {
	r := *storetest.Gadgets()
	r.Fields = slices.Clone(r.Fields)
	for i, f := range r.Fields {
		if f.Items != nil {
			items := *f.Items
			items.Fields = slices.Clone(items.Fields)
			r.Fields[i].Items = &items
		}
	}
	r.Filters = slices.Clone(r.Filters)
	change(&r)
	return append(resourceapi.Declared(), resourceapi.NewResource(r))
}

func field(r *resourceapi.Resource, name string) *resourceapi.Field {
	for i := range r.Fields {
		if r.Fields[i].Name == name {
			return &r.Fields[i]
		}
		if it := r.Fields[i].Items; it != nil && it.Field(name) != nil {
			return it.Field(name)
		}
	}
	panic("no field " + name)
}

// TestGenerateMigrationRefuses checks that every change that would lose or
// convert data is refused, with a message that names it, and that nothing
// is written for it.
func TestGenerateMigrationRefuses(t *testing.T) {
	newField := func(f resourceapi.Field) func(r *resourceapi.Resource) {
		return func(r *resourceapi.Resource) { r.Fields = slices.Insert(r.Fields, 3, f) }
	}
	tests := []struct {
		name      string
		resources []*resourceapi.Resource
		want      string
	}{
		{"resource removed", resourceapi.Declared(), "resource gadgets is no longer declared"},
		{"field removed", gadgetsWith(func(r *resourceapi.Resource) {
			r.Fields = slices.DeleteFunc(r.Fields, func(f resourceapi.Field) bool { return f.Name == "note" })
		}), "gadgets.note is no longer declared (removed or renamed)"},
		{"field renamed", gadgetsWith(func(r *resourceapi.Resource) { field(r, "note").Name = "remark" }), "gadgets.note is no longer declared"},
		{"type", gadgetsWith(func(r *resourceapi.Resource) {
			f := field(r, "size")
			f.Type, f.Range = resourceapi.TypeString, nil
		}), "gadgets.size: type integer -> string"},
		{"nullable made required", gadgetsWith(func(r *resourceapi.Resource) { field(r, "note").Required = true }), "gadgets.note: NOT NULL false -> true"},
		{"required made nullable", gadgetsWith(func(r *resourceapi.Resource) {
			f := field(r, "weight")
			f.Required, f.Nullable = false, true
		}), "gadgets.weight: NOT NULL true -> false"},
		{"made unique", gadgetsWith(func(r *resourceapi.Resource) { field(r, "note").Unique = true }), "gadgets.note: unique false -> true"},
		{"made secret", gadgetsWith(func(r *resourceapi.Resource) { field(r, "note").Secret = resourceapi.SecretToken }), "gadgets.note: secret"},
		{"reference", gadgetsWith(func(r *resourceapi.Resource) { field(r, "maker_id").References = "products" }), "gadgets.maker_id: reference users -> products"},
		{"restrict", gadgetsWith(func(r *resourceapi.Resource) { field(r, "maker_id").Restrict = true }), "gadgets.maker_id: reference users -> users (restrict)"},
		{"range", gadgetsWith(func(r *resourceapi.Resource) { field(r, "size").Range = &resourceapi.Range{Min: 0, Max: 2000} }), "gadgets.size: range 0..1000 -> 0..2000"},
		{"enum", gadgetsWith(func(r *resourceapi.Resource) {
			field(r, "color").Enum = []string{"red", "green", "blue", "black"}
			r.Filters[1].Values = field(r, "color").Enum
		}), "gadgets.color: enum"},
		{"soft delete", gadgetsWith(func(r *resourceapi.Resource) {
			r.SoftDelete = ""
			r.Filters = r.Filters[1:]
		}), `gadgets: soft delete "retired" -> ""`},
		{"item field removed", gadgetsWith(func(r *resourceapi.Resource) {
			it := field(r, "parts").Items
			it.Fields = slices.DeleteFunc(it.Fields, func(f resourceapi.Field) bool { return f.Name == "label" })
		}), "gadgets.parts.label is no longer declared"},
		{"item field type", gadgetsWith(func(r *resourceapi.Resource) { field(r, "spare").Type = resourceapi.TypeInt }), "gadgets.parts.spare: type boolean -> integer"},
		{"items table", gadgetsWith(func(r *resourceapi.Resource) { field(r, "parts").Items.Table = "gadget_pieces" }), "gadgets.parts: items table gadget_parts(gadget_id) -> gadget_pieces(gadget_id)"},
		{"new NOT NULL field without a default", gadgetsWith(newField(resourceapi.Field{Name: "serial", Type: resourceapi.TypeString, Required: true})),
			"gadgets.serial: a new column is NOT NULL without a default"},
		{"new NOT NULL reference", gadgetsWith(newField(resourceapi.Field{Name: "buyer_id", Type: resourceapi.TypeInt, References: "users", Default: func() any { return int64(1) }})),
			"gadgets.buyer_id: a new column that references users must be nullable"},
		{"new unique NOT NULL field", gadgetsWith(newField(resourceapi.Field{Name: "code", Type: resourceapi.TypeInt, Unique: true, Default: func() any { return int64(1) }})),
			"gadgets.code: a new column is unique and NOT NULL"},
		{"new field with a default out of range", gadgetsWith(newField(resourceapi.Field{Name: "rank", Type: resourceapi.TypeInt, Range: &resourceapi.Range{Min: 1, Max: 5}, Default: func() any { return int64(0) }})),
			"gadgets.rank: a new column has a default, 0, outside its range"},
		{"grant withdrawn", gadgetsWith(func(r *resourceapi.Resource) {
			r.Access.Grants = map[string][]resourceapi.Action{resourceapi.RoleUser: {resourceapi.ActionRead}}
		}), "gadgets: role editor no longer grants gadgets:write by default"},
	}
	for _, tt := range tests {
		for dialect, generate := range generators {
			t.Run(tt.name+"/"+dialect, func(t *testing.T) {
				m, next, err := generate(gadgetsSnapshot(), tt.resources)
				var refused *sqlstore.RefusedError
				if !errors.As(err, &refused) {
					t.Fatalf("GenerateMigration = %q, %v; want it refused", m.SQL, err)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("refusal %q does not say %q", err, tt.want)
				}
				if m.SQL != "" || next != nil {
					t.Errorf("a refused change wrote %q and a snapshot", m.SQL)
				}
			})
		}
	}
}

// TestGenerateMigrationNothingToWrite checks changes that need no
// migration: the snapshot follows them, and no SQL is written.
func TestGenerateMigrationNothingToWrite(t *testing.T) {
	tests := []struct {
		name      string
		resources []*resourceapi.Resource
	}{
		{"fields reordered", gadgetsWith(func(r *resourceapi.Resource) { r.Fields[2], r.Fields[3] = r.Fields[3], r.Fields[2] })},
		// The index stays: dropping it is the developer's call.
		{"no longer sortable", gadgetsWith(func(r *resourceapi.Resource) { field(r, "size").Sortable = false })},
		// The store writes every column; DEFAULT only fills columns added
		// to existing rows.
		{"default changed", gadgetsWith(func(r *resourceapi.Resource) { field(r, "color").Default = func() any { return "blue" } })},
	}
	for _, tt := range tests {
		for dialect, generate := range generators {
			t.Run(tt.name+"/"+dialect, func(t *testing.T) {
				old := gadgetsSnapshot()
				m, next, err := generate(old, tt.resources)
				if err != nil {
					t.Fatal(err)
				}
				if m.SQL != "" {
					t.Errorf("GenerateMigration wrote\n%s\nwant nothing", m.SQL)
				}
				if bytes.Equal(next.JSON(), old.JSON()) {
					t.Error("the snapshot did not follow the declarations")
				}
			})
		}
	}
}

// TestGenerateMigrationReferencesFirst checks that new tables are created
// after those their foreign keys name, whatever the order of declaration.
func TestGenerateMigrationReferencesFirst(t *testing.T) {
	old := sqlstore.SnapshotOf(resourceapi.Declared())
	widgets := *storetest.Widgets(0)
	widgets.Fields = slices.Clone(widgets.Fields)
	widgets.Fields[2] = resourceapi.Field{Name: "gadget_id", Type: resourceapi.TypeInt, Nullable: true, References: "gadgets"}
	resources := append(resourceapi.Declared(), resourceapi.NewResource(widgets), storetest.Gadgets())
	for dialect, generate := range generators {
		m, _, err := generate(old, resources)
		if err != nil {
			t.Fatal(err)
		}
		g, w := strings.Index(m.SQL, "CREATE TABLE gadgets ("), strings.Index(m.SQL, "CREATE TABLE widgets (")
		if g < 0 || w < 0 || g > w {
			t.Errorf("%s: gadgets created at %d, widgets (which reference them) at %d; want gadgets first", dialect, g, w)
		}
		if m.Name != "gadgets_widgets" {
			t.Errorf("%s: migration named %q, want gadgets_widgets", dialect, m.Name)
		}
	}
}

// TestGenerateMigrationNames checks that a declaration whose names could
// not be spliced into SQL as they are is refused.
func TestGenerateMigrationNames(t *testing.T) {
	for _, bad := range []string{"Gadgets", "gadgets; DROP TABLE users", "1gadgets"} {
		r := *storetest.Gadgets()
		r.Name = bad
		for dialect, generate := range generators {
			if _, _, err := generate(sqlstore.SnapshotOf(resourceapi.Declared()), append(resourceapi.Declared(), resourceapi.NewResource(r))); err == nil {
				t.Errorf("%s: resource named %q generated a migration", dialect, bad)
			}
		}
	}
}

// TestMigrationFileName checks that a generated migration takes the version
// after the highest present, migrations written by hand included.
func TestMigrationFileName(t *testing.T) {
	dir := fstest.MapFS{
		"00001_users.sql":       {},
		"00007_identity.sql":    {},
		"00009_by_hand.sql":     {},
		"00008_other.sql":       {},
		sqlstore.SnapshotFile:   {},
		"README":                {},
		"notes_00042_about.sql": {},
	}
	got, err := sqlstore.MigrationFileName(dir, sqlstore.Migration{Name: "gadgets"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "00010_gadgets.sql"; got != want {
		t.Errorf("MigrationFileName = %q, want %q", got, want)
	}
}

// TestSnapshotJSON checks that a snapshot reads back as written, and that a
// file with a member the generator does not know is refused rather than
// half read.
func TestSnapshotJSON(t *testing.T) {
	b := sqlstore.SnapshotOf(append(resourceapi.Declared(), storetest.Gadgets())).JSON()
	s, err := sqlstore.ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.JSON(); !bytes.Equal(got, b) {
		t.Errorf("snapshot read back writes\n%s\nwant\n%s", got, b)
	}
	for _, bad := range [][]byte{
		bytes.Replace(b, []byte(`"not_null"`), []byte(`"notnull"`), 1),
		bytes.Replace(b, []byte(`"type":"integer"`), []byte(`"type":"int"`), 1),
	} {
		if _, err := sqlstore.ParseSnapshot(bad); err == nil {
			t.Errorf("ParseSnapshot accepted\n%s", bad)
		}
	}
}
