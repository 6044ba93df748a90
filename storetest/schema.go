package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// Each store's schema is written by hand, a migration per change, while the
// store's SQL is built from the declarations. CheckSchema compares the two,
// so that a declaration and a migration cannot disagree unnoticed until a
// query fails in production.

// Table is one table of a database as CheckSchema compares it with a
// declaration. A store's test fills it from its database's catalog.
type Table struct {
	Name    string
	Columns []Column
	// Indexes holds every index, the primary key's and those of UNIQUE
	// constraints included.
	Indexes     []Index
	ForeignKeys []ForeignKey
	// Search lists the columns that the table's search index covers (the
	// trigram index q is answered with), in any order.
	Search []string
}

// Column is a column of a Table.
type Column struct {
	Name string
	// Type is the database's own name of the column's type, in lower case
	// ("integer", "timestamp with time zone").
	Type    string
	NotNull bool
	// Generated is the expression a generated column is computed by, as
	// the catalog shows it ("lower(name)"), or "" for a column written as
	// it is.
	Generated string
}

// Index is an index of a Table.
type Index struct {
	Name string
	// Columns are the key columns in order; an expression is "".
	Columns []string
	// NullsLow says, for each key column, whether the index orders null as
	// the smallest value (NULLS FIRST ascending, NULLS LAST descending), as
	// lists sort it.
	NullsLow []bool
	Unique   bool
	// Partial indexes (with a WHERE clause) hold only some rows, so they
	// serve no sort or filter of the whole table.
	Partial bool
}

// ForeignKey is a foreign key of a Table.
type ForeignKey struct {
	Columns    []string
	Table      string
	RefColumns []string
	// OnDelete is the action when the referenced row is deleted, in upper
	// case: CASCADE, RESTRICT, NO ACTION, SET NULL or SET DEFAULT.
	OnDelete string
}

// Introspection is what CheckSchema needs of one kind of database.
type Introspection struct {
	// Table reads the named table from the catalog, or returns nil when
	// there is no such table.
	Table func(ctx context.Context, db *sql.DB, name string) (*Table, error)
	// Types lists, for each field type, the column types that store it.
	Types map[resourceapi.FieldType][]string
	// IDTypes lists the column types that hold every id up to
	// resourceapi.MaxID: those of ids and references.
	IDTypes []string
	// SearchTable, where the store matches q against copies of the
	// searchable columns that it keeps in a table of their own
	// (PostgreSQL's lower-cased copies), returns the name of that table
	// for a resource's table, and SearchCopy the name of a column's copy
	// in it. The search table must hold the record's id (its primary key,
	// and no foreign key: the store keeps the copies in step with the
	// records, PostgreSQL with triggers after a delete and a truncate,
	// which cost an insert less than a foreign key's check), the resource's
	// soft-delete column where it has one, a copy of each searchable
	// column and nothing else, and the search index must cover exactly
	// the copies. nil where the search index covers the searchable columns
	// of the resource's table itself.
	SearchTable func(table string) string
	SearchCopy  func(column string) string
}

// CheckSchema compares every declared resource with the schema of db, as
// migrated, and reports each disagreement as a test error (see
// SchemaProblems); and the roles the migrations seed with the default
// grants of the declarations (resourceapi.DefaultRoles). It first checks
// itself: deliberately wrong declarations must be reported, so that an
// introspection that sees too little cannot make the check pass.
func CheckSchema(t *testing.T, db *sql.DB, in Introspection) {
	t.Helper()
	t.Run("DetectsMismatch", func(t *testing.T) { testSchemaMismatches(t, db, in) })
	t.Run("roles", func(t *testing.T) {
		problems, err := roleProblems(timeout(t), db)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	})
	for _, res := range resourceapi.Declared() {
		t.Run(res.Name, func(t *testing.T) {
			problems, err := SchemaProblems(timeout(t), db, in, res)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// SchemaProblems returns how the schema of db disagrees with the declaration
// of res:
//
//   - a column per stored field: <name>_hash for a secret, and beside a
//     unique string <name>_key under a UNIQUE constraint of its own; a column
//     type that stores the field's type (ids and references: one that holds
//     every id); NOT NULL exactly when the field is required or not nullable
//     (either for a generated field, which a generator may leave unset);
//   - the items of a TypeItems field in their own table: Key (NOT NULL, a
//     foreign key to the record, ON DELETE CASCADE), position (NOT NULL),
//     a column per item field, and a unique index on (Key, position);
//   - a foreign key for every reference and no other: to the referenced
//     table's id, ON DELETE CASCADE, or RESTRICT where the reference is
//     Restrict; and an index led by the reference's column, so that a delete
//     finds what refers to the record without a scan;
//   - an index for each sortable field and each field a filter compares for
//     equality (the owner's and the parent's among them): led by the
//     soft-delete column where the resource has one, then the field's
//     column, then id, which breaks ties (the primary key serves id itself);
//     nullable fields' columns order null as the smallest value, as lists
//     sort it;
//   - a search index over exactly the searchable fields (or over their
//     copies in a search table of their own, Introspection.SearchTable);
//   - no column for a transient field, and none that the declaration does
//     not account for.
func SchemaProblems(ctx context.Context, db *sql.DB, in Introspection, res *resourceapi.Resource) ([]string, error) {
	tab, err := in.Table(ctx, db, res.Name)
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", res.Name, err)
	}
	if tab == nil {
		return []string{fmt.Sprintf("%s: no table", res.Name)}, nil
	}
	c := &schemaCheck{in: in, tab: tab, accounted: map[string]bool{}}
	var items []*resourceapi.Field
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.Type == resourceapi.TypeItems {
			items = append(items, f)
			if c.column(f.Name) != nil {
				c.bad("%s: items are stored in %s, not in a column", f.Name, f.Items.Table)
			}
			continue
		}
		if f.Transient {
			if c.column(f.Name) != nil {
				c.bad("%s: a column for a transient field, which nothing stores", f.Name)
			}
			continue
		}
		c.field(f, f.Name == "id")
	}
	if err := c.search(ctx, db, res); err != nil {
		return nil, err
	}
	c.unaccounted()
	c.foreignKeys()
	c.sorts(res)
	problems := c.problems
	for _, f := range items {
		p, err := itemProblems(ctx, db, in, res, f)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
	}
	return problems, nil
}

// schemaCheck compares the fields of one declaration with one table.
type schemaCheck struct {
	in        Introspection
	tab       *Table
	accounted map[string]bool // columns a field accounts for
	refs      []*resourceapi.Field
	problems  []string
}

func (c *schemaCheck) bad(format string, args ...any) {
	c.problems = append(c.problems, c.tab.Name+"."+fmt.Sprintf(format, args...))
}

func (c *schemaCheck) column(name string) *Column {
	for i := range c.tab.Columns {
		if c.tab.Columns[i].Name == name {
			return &c.tab.Columns[i]
		}
	}
	return nil
}

// storedName returns the column that stores field f (see sqlstore's
// column).
func storedName(f *resourceapi.Field) string {
	if f.Secret != resourceapi.NotSecret {
		return f.Name + "_hash"
	}
	return f.Name
}

// field checks the columns of field f; id says it is the record's id.
func (c *schemaCheck) field(f *resourceapi.Field, id bool) {
	name := storedName(f)
	col := c.column(name)
	if col == nil {
		c.bad("%s: no column for field %s (%s)", name, f.Name, f.Type)
		return
	}
	c.accounted[name] = true
	types := c.in.Types[f.Type]
	if id || f.References != "" {
		types = c.in.IDTypes
	}
	if f.Secret != resourceapi.NotSecret {
		types = c.in.Types[resourceapi.TypeString]
	}
	if !slices.Contains(types, col.Type) {
		c.bad("%s: type %s does not store field %s (%s); want one of %s", name, col.Type, f.Name, f.Type, strings.Join(types, ", "))
	}
	wantNotNull := id || f.Required || !f.Nullable
	if col.NotNull != wantNotNull && f.Generate == nil {
		c.bad("%s: %s, but field %s is %s", name, nullness(col.NotNull), f.Name, fieldNullness(f))
	}
	if f.Unique {
		key := name
		if f.Type == resourceapi.TypeString {
			key = f.Name + "_key"
			kc := c.column(key)
			switch {
			case kc == nil:
				c.bad("%s: no column for the unique key of field %s", key, f.Name)
			case !slices.Contains(c.in.Types[resourceapi.TypeString], kc.Type) || kc.NotNull != col.NotNull:
				c.bad("%s: %s %s, want the type and nullness of %s", key, kc.Type, nullness(kc.NotNull), name)
			}
			c.accounted[key] = true
		}
		if !slices.ContainsFunc(c.tab.Indexes, func(ix Index) bool { return ix.Unique && !ix.Partial && slices.Equal(ix.Columns, []string{key}) }) {
			c.bad("%s: no UNIQUE constraint on %s alone, but field %s is unique", key, key, f.Name)
		}
	}
	if f.References != "" {
		c.refs = append(c.refs, f)
	}
}

func nullness(notNull bool) string {
	if notNull {
		return "NOT NULL"
	}
	return "nullable"
}

func fieldNullness(f *resourceapi.Field) string {
	switch {
	case f.Required:
		return "required"
	case f.Nullable:
		return "nullable"
	}
	return "not nullable"
}

// unaccounted reports columns that no field accounts for.
func (c *schemaCheck) unaccounted() {
	for _, col := range c.tab.Columns {
		if !c.accounted[col.Name] {
			c.bad("%s: column that no field of the declaration accounts for", col.Name)
		}
	}
}

// foreignKeys checks the foreign key and the index of every reference, and
// that there is no other foreign key.
func (c *schemaCheck) foreignKeys() {
	declared := map[string]bool{}
	for _, f := range c.refs {
		name := storedName(f)
		declared[name] = true
		want := "CASCADE"
		if f.Restrict {
			want = "RESTRICT"
		}
		i := slices.IndexFunc(c.tab.ForeignKeys, func(fk ForeignKey) bool { return slices.Equal(fk.Columns, []string{name}) })
		if i < 0 {
			c.bad("%s: no foreign key, but field %s references %s", name, f.Name, f.References)
			continue
		}
		fk := c.tab.ForeignKeys[i]
		if fk.Table != f.References || !slices.Equal(fk.RefColumns, []string{"id"}) {
			c.bad("%s: foreign key to %s (%s), want %s (id)", name, fk.Table, strings.Join(fk.RefColumns, ", "), f.References)
		}
		if fk.OnDelete != want {
			c.bad("%s: foreign key ON DELETE %s, want %s", name, fk.OnDelete, want)
		}
		if !slices.ContainsFunc(c.tab.Indexes, func(ix Index) bool { return !ix.Partial && len(ix.Columns) > 0 && ix.Columns[0] == name }) {
			c.bad("%s: no index led by the reference, so deleting a %s scans %s", name, strings.TrimSuffix(f.References, "s"), c.tab.Name)
		}
	}
	for _, fk := range c.tab.ForeignKeys {
		if len(fk.Columns) != 1 || !declared[fk.Columns[0]] {
			c.bad("%s: foreign key to %s that the declaration does not declare", strings.Join(fk.Columns, ", "), fk.Table)
		}
	}
}

// sorts checks that an index serves each sort and each equality filter.
func (c *schemaCheck) sorts(res *resourceapi.Resource) {
	var lead []string
	if res.SoftDelete != "" {
		lead = []string{storedName(res.Field(res.SoftDelete))}
	}
	need := map[string]string{} // field name -> why
	var order []string
	for _, name := range res.SortableFields() {
		need[name] = "sortable"
		order = append(order, name)
	}
	for _, flt := range res.Filters {
		if flt.Kind != resourceapi.FilterEqual || flt.Field == "id" || flt.Field == res.Hidden {
			// The filter of hidden records keeps nearly every row: lists
			// read the sort's index and drop the few hidden ones.
			continue
		}
		if _, ok := need[flt.Field]; !ok {
			order = append(order, flt.Field)
		}
		need[flt.Field] = "filtered on (" + flt.Param + ")"
		if flt.Internal {
			need[flt.Field] = "filtered on by the rule layer"
		}
	}
	for _, name := range order {
		f := res.Field(name)
		col := storedName(f)
		want := append(slices.Clone(lead), col)
		if col != "id" {
			want = append(want, "id")
		}
		serves := func(ix Index) bool {
			if ix.Partial || len(ix.Columns) < len(want) || !slices.Equal(ix.Columns[:len(want)], want) {
				return false
			}
			return !f.Nullable || (len(ix.NullsLow) > len(lead) && ix.NullsLow[len(lead)])
		}
		if !slices.ContainsFunc(c.tab.Indexes, serves) {
			nulls := ""
			if f.Nullable {
				nulls = ", null the smallest"
			}
			c.bad("%s: no index on (%s)%s, but field %s is %s", col, strings.Join(want, ", "), nulls, name, need[name])
		}
	}
}

// search checks that the search index covers exactly the searchable fields,
// or their copies in the search table, which must hold nothing else but
// the id and the soft-delete state.
func (c *schemaCheck) search(ctx context.Context, db *sql.DB, res *resourceapi.Resource) error {
	var want []string
	for _, name := range res.SearchableFields() {
		want = append(want, storedName(res.Field(name)))
	}
	covers := func(c *schemaCheck, want []string) {
		got := slices.Clone(c.tab.Search)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			c.bad("search index covers (%s), want the searchable fields (%s)", strings.Join(got, ", "), strings.Join(want, ", "))
		}
	}
	if c.in.SearchTable == nil {
		covers(c, want)
		return nil
	}
	if len(c.tab.Search) > 0 {
		c.bad("search index on (%s) of the table itself, where q is matched in %s", strings.Join(c.tab.Search, ", "), c.in.SearchTable(res.Name))
	}
	name := c.in.SearchTable(res.Name)
	tab, err := c.in.Table(ctx, db, name)
	if err != nil {
		return fmt.Errorf("read table %s: %w", name, err)
	}
	switch {
	case tab == nil && len(want) == 0:
		return nil
	case tab == nil:
		c.bad("search index covers (), want the searchable fields (%s) in a search table %s", strings.Join(want, ", "), name)
		return nil
	case len(want) == 0:
		c.problems = append(c.problems, fmt.Sprintf("%s: a search table, but %s has no searchable field", name, res.Name))
		return nil
	}
	side := &schemaCheck{in: c.in, tab: tab, accounted: map[string]bool{}}
	side.field(&resourceapi.Field{Name: "id", Type: resourceapi.TypeInt, Unique: true}, true)
	if res.SoftDelete != "" {
		side.field(res.Field(res.SoftDelete), false)
	}
	var copies []string
	for _, col := range want {
		cp := c.in.SearchCopy(col)
		copies = append(copies, cp)
		switch got := side.column(cp); {
		case got == nil:
			side.bad("%s: no column for the search copy of %s.%s", cp, res.Name, col)
		case !slices.Contains(c.in.Types[resourceapi.TypeString], got.Type):
			side.bad("%s: type %s, want a text type (the search copy of %s.%s)", cp, got.Type, res.Name, col)
		default:
			side.accounted[cp] = true
		}
	}
	covers(side, copies)
	side.unaccounted()
	side.foreignKeys()
	c.problems = append(c.problems, side.problems...)
	return nil
}

// itemProblems checks the table of the items of field f of res.
func itemProblems(ctx context.Context, db *sql.DB, in Introspection, res *resourceapi.Resource, f *resourceapi.Field) ([]string, error) {
	decl := f.Items
	tab, err := in.Table(ctx, db, decl.Table)
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", decl.Table, err)
	}
	if tab == nil {
		return []string{fmt.Sprintf("%s: no table for the items of %s.%s", decl.Table, res.Name, f.Name)}, nil
	}
	c := &schemaCheck{in: in, tab: tab, accounted: map[string]bool{}}
	// The key is a reference to the record, which its items go with.
	c.field(&resourceapi.Field{Name: decl.Key, Type: resourceapi.TypeInt, References: res.Name}, false)
	c.field(&resourceapi.Field{Name: "position", Type: resourceapi.TypeInt}, false)
	for i := range decl.Fields {
		c.field(&decl.Fields[i], false)
	}
	c.unaccounted()
	c.foreignKeys()
	if !slices.ContainsFunc(tab.Indexes, func(ix Index) bool {
		return ix.Unique && !ix.Partial && slices.Equal(ix.Columns, []string{decl.Key, "position"})
	}) {
		c.bad("(%s, position): no unique index, which keeps each record's items in order", decl.Key)
	}
	return c.problems, nil
}

// testSchemaMismatches checks declarations that disagree with the schema on
// purpose: each must be reported, and the unchanged declarations not.
func testSchemaMismatches(t *testing.T, db *sql.DB, in Introspection) {
	// variant returns a copy of res whose fields change does as it likes.
	variant := func(res *resourceapi.Resource, change func(fields []resourceapi.Field) []resourceapi.Field) *resourceapi.Resource {
		cp := *res
		cp.Fields = slices.Clone(res.Fields)
		for i, f := range cp.Fields {
			if f.Items != nil {
				items := *f.Items
				items.Fields = slices.Clone(items.Fields)
				cp.Fields[i].Items = &items
			}
		}
		cp.Fields = change(cp.Fields)
		return resourceapi.NewResource(cp)
	}
	field := func(fields []resourceapi.Field, name string) *resourceapi.Field {
		for i := range fields {
			if fields[i].Name == name {
				return &fields[i]
			}
			if it := fields[i].Items; it != nil && it.Field(name) != nil {
				return it.Field(name)
			}
		}
		t.Fatalf("no field %s", name)
		return nil
	}
	tests := []struct {
		name string
		res  *resourceapi.Resource
		want string // a problem must contain it
	}{
		{"undeclared column", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			return slices.DeleteFunc(fs, func(f resourceapi.Field) bool { return f.Name == "description" })
		}), "products.description: column that no field"},
		{"missing column", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			return append(fs, resourceapi.Field{Name: "color", Type: resourceapi.TypeString, Nullable: true})
		}), "products.color: no column"},
		{"type", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "price_cents").Type = resourceapi.TypeStrings
			return fs
		}), "products.price_cents: type"},
		{"nullable column of a required field", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "description").Required = true
			return fs
		}), "products.description: nullable, but field description is required"},
		{"NOT NULL column of a nullable field", variant(resourceapi.Reviews, func(fs []resourceapi.Field) []resourceapi.Field {
			f := field(fs, "rating")
			f.Required, f.Nullable = false, true
			return fs
		}), "reviews.rating: NOT NULL, but field rating is nullable"},
		{"unique without its key", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "name").Unique = true
			return fs
		}), "products.name_key: no column"},
		{"reference without a foreign key", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "price_cents").References = "users"
			return fs
		}), "products.price_cents: no foreign key"},
		{"foreign key not declared", variant(resourceapi.Reviews, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "user_id").References = ""
			return fs
		}), "reviews.user_id: foreign key to users that the declaration does not declare"},
		{"cascade declared, restrict migrated", variant(resourceapi.Orders, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "product_id").Restrict = false
			return fs
		}), "order_items.product_id: foreign key ON DELETE RESTRICT, want CASCADE"},
		{"sort without an index", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "description").Sortable = true
			return fs
		}), "products.description: no index on (description, id), null the smallest"},
		{"search index", variant(resourceapi.Products, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "description").Searchable = false
			return fs
		}), "search index covers"}, // products.search... or products_search.search...
		{"item field", variant(resourceapi.Orders, func(fs []resourceapi.Field) []resourceapi.Field {
			field(fs, "quantity").Type = resourceapi.TypeString
			return fs
		}), "order_items.quantity: type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, err := SchemaProblems(timeout(t), db, in, tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Fatalf("problems = %q, want one containing %q", problems, tt.want)
			}
		})
	}
}
