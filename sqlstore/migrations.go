package sqlstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// Generated migrations.
//
// The schema of a resource follows from its declaration: its table (a
// column per field, NOT NULL and CHECK from the field's constraints, a
// <name>_key column under UNIQUE for a unique string, <name>_hash for a
// secret), its items tables, an index per sortable or filtered field, the
// row-count triggers, the search index, the identity-version triggers where
// it decides access, and the default grants of the roles. Released
// migrations never change (databases in use have run them), so
// GenerateMigration writes only what the declarations need beyond what the
// migrations made, which a snapshot committed beside them records
// (SnapshotFile). Each store renders the SQL of its own database (a
// SchemaDialect); `go generate` runs internal/migrategen, which writes the
// next migration file of each store and the new snapshot.

// Migration is a generated migration.
type Migration struct {
	// Name is a short name for its file (the resources it concerns):
	// MigrationFileName makes the file's name of it.
	Name string
	// SQL is the file's text (goose's format), "" when the declarations
	// need nothing new.
	SQL string
}

// SchemaDialect renders, in one database's SQL, the schema a declaration
// implies. Each method returns complete statements, each ending with a
// semicolon and a newline, with goose's StatementBegin and StatementEnd
// annotations around those that hold semicolons of their own.
type SchemaDialect interface {
	// CreateTable creates t with its columns and their constraints (the
	// primary key, NOT NULL, DEFAULT, CHECK, REFERENCES, and UNIQUE for
	// the columns whose index is Inline).
	CreateTable(t *SchemaTable) string
	// AddColumn adds column c to existing table t: the column and its
	// NOT NULL, DEFAULT, CHECK and REFERENCES, but no UNIQUE (a separate
	// unique index follows).
	AddColumn(t *SchemaTable, c *SchemaColumn) string
	// CreateIndex creates index ix of t (never an Inline one), IF NOT
	// EXISTS when ifNotExists.
	CreateIndex(t *SchemaTable, ix *SchemaIndex, ifNotExists bool) string
	// Counts creates the triggers that keep t's records counted in
	// row_counts, by soft-delete state.
	Counts(t *SchemaTable) string
	// Retire creates the trigger that records the ids of t's deleted
	// records in retired_ids (cascades included), so that a PUT never
	// gives one to a new record unless an admin asks.
	Retire(t *SchemaTable) string
	// Search makes t's search index cover t.Search, where it covered old
	// (nil when t had none, or is new); existing says t may hold records,
	// which the index must then be given.
	Search(t *SchemaTable, old []string, existing bool) string
	// Contains indexes the values c selects by, of which old are indexed
	// already.
	Contains(t *SchemaTable, c *SchemaContains, old []string) string
	// Identity makes the identity version move when t.Identity's columns
	// change, where it moved with old's: "" on a database that keeps no
	// identity version.
	Identity(t *SchemaTable, old []string) string
	// Grant adds p to the permissions of each of roles that lacks it,
	// leaving everything else an operator set as it is.
	Grant(p resourceapi.Permission, roles []string) string
}

// SchemaTable is a table a declaration implies, in no database's terms.
type SchemaTable struct {
	Name string
	// Resource is the resource whose records (or items) the table holds.
	Resource string
	// Items says the table holds the items of a field, keyed by its Key
	// column and position (PrimaryKey); items tables have no counts, search
	// or identity triggers.
	Items      bool
	Columns    []SchemaColumn
	PrimaryKey []string
	Indexes    []SchemaIndex
	// SoftDelete is the soft-delete column, which counts and sort indexes
	// lead with.
	SoftDelete string
	// Search lists the columns the search index covers.
	Search []string
	// Identity lists the columns whose change moves the identity version;
	// none when the resource does not decide access.
	Identity []string
	Contains []SchemaContains
}

// SchemaColumn is a column of a SchemaTable.
type SchemaColumn struct {
	Name string
	// Type is the field type the column stores; ID says it holds record
	// ids (the primary key, references, an items table's key), which need
	// the database's widest integer.
	Type resourceapi.FieldType
	ID   bool
	// Small says every value fits 32 bits (an item's position, a field
	// whose range does), where a database has a narrower integer for it.
	Small      bool
	PrimaryKey bool
	NotNull    bool
	// Default is the column's DEFAULT: an int64, string, bool or []string,
	// or nil for none.
	Default    any
	Range      *resourceapi.Range
	Enum       []string
	References string
	Restrict   bool
}

// SchemaIndex is an index of a SchemaTable.
type SchemaIndex struct {
	Name    string
	Columns []string
	// NullsLow says, per column, that null must sort as the smallest value
	// (lists sort it so).
	NullsLow []bool
	Unique   bool
	// Inline indexes come with the table: its primary key and its columns'
	// UNIQUE constraints.
	Inline bool
}

// SchemaContains is a FilterContains filter on a list column: records
// whose list holds one of Values.
type SchemaContains struct {
	// Name is the name of its index, or the prefix of the name of an index
	// per value.
	Name   string
	Column string
	Values []string
	// Lead are the columns an index per value starts with (the soft-delete
	// column); id follows them.
	Lead []string
}

// RefusedError lists changes of the declarations that GenerateMigration
// does not write a migration for: they would lose data or need it
// converted, which only a person can decide.
type RefusedError struct {
	Changes []string
}

func (e *RefusedError) Error() string {
	return "these changes of the declarations need a migration written by hand:\n  - " + strings.Join(e.Changes, "\n  - ")
}

// GenerateMigration returns the migration that brings a database whose
// migrations made the declarations of snapshot old up to resources, in
// dialect d's SQL, and the snapshot of resources. Migration.SQL is "" when
// nothing needs a migration (the snapshot may still differ, in what needs
// none: the order of fields, a field no longer sorted, whose index stays).
//
// It writes what follows from the declarations: new resources, new fields
// (with a DEFAULT where NOT NULL), new indexes, a changed search index or
// identity trigger, new default grants. A change that would drop or
// convert data (a resource or field removed or renamed, a type, null,
// uniqueness, reference or constraint changed, a default grant withdrawn,
// a new NOT NULL field without a default) is refused with a *RefusedError,
// and nothing is written.
func GenerateMigration(d SchemaDialect, old *Snapshot, resources []*resourceapi.Resource) (Migration, *Snapshot, error) {
	if old == nil {
		return Migration{}, nil, errors.New("no snapshot of what the migrations made: the first migrations are written by hand")
	}
	next := SnapshotOf(resources)
	if err := checkSnapshot(next); err != nil {
		return Migration{}, nil, err
	}
	g := &generator{d: d}
	for _, o := range old.Resources {
		if next.resource(o.Name) == nil {
			g.refuse("resource %s is no longer declared: dropping its table would lose its records", o.Name)
		}
	}
	for _, r := range createOrder(next) {
		if o := old.resource(r.Name); o != nil {
			g.change(o, r)
		} else {
			g.create(r)
		}
	}
	if len(g.refused) > 0 {
		return Migration{}, nil, &RefusedError{Changes: g.refused}
	}
	if len(g.sections) == 0 {
		return Migration{}, next, nil
	}
	var b strings.Builder
	b.WriteString(generatedHeader)
	b.WriteString("-- +goose Up\n")
	for _, s := range g.sections {
		b.WriteString("\n" + s)
	}
	return Migration{Name: shortName(g.names), SQL: b.String()}, next, nil
}

// generatedHeader opens every generated migration. (A comment line that
// names goose's annotation marker would be read as one.)
const generatedHeader = `-- Generated by go generate (internal/migrategen) from the resource
-- declarations and the snapshot of what the migrations before this one made
-- of them (declared.json). Once released, a migration never changes: edit
-- the declarations and generate the next one. There is no Down section: the
-- service never migrates down; a backup taken before the upgrade is the way
-- back.
`

type generator struct {
	d        SchemaDialect
	sections []string
	names    []string
	refused  []string
}

func (g *generator) refuse(format string, args ...any) {
	g.refused = append(g.refused, fmt.Sprintf(format, args...))
}

// section adds the statements of one change under a comment, which names
// the resource: each group of statements (a dialect's answer) is followed by
// a blank line.
func (g *generator) section(resource, comment string, groups ...string) {
	var b strings.Builder
	for _, s := range groups {
		if s = strings.TrimRight(s, "\n"); s != "" {
			b.WriteString(s + "\n\n")
		}
	}
	if b.Len() == 0 {
		return
	}
	g.sections = append(g.sections, "-- "+comment+"\n"+strings.TrimRight(b.String(), "\n")+"\n")
	if !slices.Contains(g.names, resource) {
		g.names = append(g.names, resource)
	}
}

// createTable returns the statements that create t and its own indexes.
func (g *generator) createTable(t *SchemaTable) (table, indexes string) {
	var b strings.Builder
	for i := range t.Indexes {
		if !t.Indexes[i].Inline {
			b.WriteString(g.d.CreateIndex(t, &t.Indexes[i], false))
		}
	}
	return g.d.CreateTable(t), b.String()
}

// create writes everything of a new resource.
func (g *generator) create(r *SnapshotResource) {
	for i, t := range tablesOf(r) {
		table, indexes := g.createTable(t)
		if i > 0 {
			g.section(r.Name, r.Name+": the table of its items, "+t.Name+".", table, indexes)
			continue
		}
		var search, contains, identity string
		parts := []string{"its table, indexes and counts"}
		if len(t.Search) > 0 {
			search = g.d.Search(t, nil, false)
			parts = append(parts, "its search index")
		}
		for j := range t.Contains {
			contains += g.d.Contains(t, &t.Contains[j], nil)
		}
		if len(t.Identity) > 0 {
			identity = g.d.Identity(t, nil)
			parts = append(parts, "what moves the identity version")
		}
		g.section(r.Name, r.Name+", a new resource: "+strings.Join(parts, "; ")+".", table, indexes, g.d.Counts(t)+g.d.Retire(t), search, contains, identity)
	}
	g.grants(r, nil)
}

// change writes what r needs beyond o, its snapshot, or refuses.
func (g *generator) change(o, r *SnapshotResource) {
	refused := len(g.refused)
	if o.SoftDelete != r.SoftDelete {
		g.refuse("%s: soft delete %q -> %q: its counts, indexes and records change", r.Name, o.SoftDelete, r.SoftDelete)
	}
	for _, of := range o.Fields {
		if r.field(of.Name) == nil {
			g.refuse("%s.%s is no longer declared (removed or renamed): dropping its column would lose its values", r.Name, of.Name)
		}
	}
	for i := range r.Fields {
		if of := o.field(r.Fields[i].Name); of != nil {
			g.compareField(r.Name, of, &r.Fields[i])
		}
	}
	if len(g.refused) > refused {
		return
	}
	oldTables := tablesOf(o)
	for _, t := range tablesOf(r) {
		i := slices.IndexFunc(oldTables, func(ot *SchemaTable) bool { return ot.Name == t.Name })
		if i < 0 {
			table, indexes := g.createTable(t)
			g.section(r.Name, r.Name+": a new items field; the table of its items, "+t.Name+".", table, indexes)
			continue
		}
		g.alter(r.Name, oldTables[i], t)
	}
	g.grants(r, o)
}

// compareField refuses the changes of a field's column that a migration
// cannot make without a person's decision.
func (g *generator) compareField(res string, of, f *SnapshotField) {
	name := res + "." + f.Name
	differs := func(what string, was, is any) {
		g.refuse("%s: %s %v -> %v", name, what, was, is)
	}
	if of.Type != f.Type {
		differs("type", of.Type, f.Type)
		return
	}
	if of.NotNull != f.NotNull {
		differs("NOT NULL", of.NotNull, f.NotNull)
	}
	if of.Secret != f.Secret {
		differs("secret", of.Secret, f.Secret)
	}
	if of.Unique != f.Unique {
		differs("unique", of.Unique, f.Unique)
	}
	if of.References != f.References || of.Restrict != f.Restrict {
		differs("reference", refString(of), refString(f))
	}
	if !equalRange(of.Range, f.Range) {
		differs("range", rangeString(of.Range), rangeString(f.Range))
	}
	if !slices.Equal(of.Enum, f.Enum) {
		differs("enum", of.Enum, f.Enum)
	}
	if of.Items == nil || f.Items == nil {
		return
	}
	if of.Items.Table != f.Items.Table || of.Items.Key != f.Items.Key {
		differs("items table", of.Items.Table+"("+of.Items.Key+")", f.Items.Table+"("+f.Items.Key+")")
		return
	}
	for _, osub := range of.Items.Fields {
		sub := fieldNamed(f.Items.Fields, osub.Name)
		if sub == nil {
			g.refuse("%s.%s is no longer declared (removed or renamed): dropping its column would lose its values", name, osub.Name)
			continue
		}
		g.compareField(name, &osub, sub)
	}
}

func refString(f *SnapshotField) string {
	switch {
	case f.References == "":
		return "none"
	case f.Restrict:
		return f.References + " (restrict)"
	}
	return f.References
}

func equalRange(a, b *SnapshotRange) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func rangeString(r *SnapshotRange) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%d..%d", r.Min, r.Max)
}

// alter writes what existing table ot needs to become t.
func (g *generator) alter(res string, ot, t *SchemaTable) {
	var b strings.Builder
	var added []string
	for i := range t.Columns {
		c := &t.Columns[i]
		if slices.ContainsFunc(ot.Columns, func(oc SchemaColumn) bool { return oc.Name == c.Name }) {
			continue
		}
		if why := addable(t, c); why != "" {
			g.refuse("%s.%s: a new column %s", t.Name, c.Name, why)
			continue
		}
		b.WriteString(g.d.AddColumn(t, c))
		added = append(added, c.Name)
	}
	g.section(res, res+": new columns of "+t.Name+" ("+strings.Join(added, ", ")+").", b.String())
	b.Reset()
	for i := range t.Indexes {
		ix := t.Indexes[i]
		if servedBy(ot.Indexes, ix) {
			continue
		}
		// A column added with UNIQUE gets its constraint as an index.
		ix.Inline = false
		b.WriteString(g.d.CreateIndex(t, &ix, true))
	}
	g.section(res, res+": indexes of "+t.Name+" for new fields, sorts, filters or references.", b.String())
	if t.Items {
		return
	}
	if !slices.Equal(ot.Search, t.Search) {
		g.section(res, res+": the search index now covers ("+strings.Join(t.Search, ", ")+").", g.d.Search(t, ot.Search, true))
	}
	for i := range t.Contains {
		c := &t.Contains[i]
		var old []string
		if j := slices.IndexFunc(ot.Contains, func(oc SchemaContains) bool { return oc.Column == c.Column }); j >= 0 {
			old = ot.Contains[j].Values
		}
		if slices.ContainsFunc(c.Values, func(v string) bool { return !slices.Contains(old, v) }) {
			g.section(res, res+": the list filter on "+c.Column+" has new values.", g.d.Contains(t, c, old))
		}
	}
	if !slices.Equal(ot.Identity, t.Identity) {
		g.section(res, res+": the identity version now moves with ("+strings.Join(t.Identity, ", ")+").", g.d.Identity(t, ot.Identity))
	}
}

// addable returns why column c cannot be added to a table that holds
// records, or "".
func addable(t *SchemaTable, c *SchemaColumn) string {
	if !c.NotNull {
		return ""
	}
	switch {
	case c.References != "":
		return "that references " + c.References + " must be nullable: existing records reference nothing"
	case c.Default == nil:
		return "is NOT NULL without a default: existing records need a value; declare a Default or make the field Nullable"
	case slices.ContainsFunc(t.Indexes, func(ix SchemaIndex) bool { return ix.Unique && slices.Equal(ix.Columns, []string{c.Name}) }):
		return "is unique and NOT NULL: existing records would all take its default"
	}
	if n, ok := c.Default.(int64); ok && c.Range != nil && (n < c.Range.Min || n > c.Range.Max) {
		return fmt.Sprintf("has a default, %d, outside its range", n)
	}
	if s, ok := c.Default.(string); ok && c.Enum != nil && !slices.Contains(c.Enum, s) {
		return fmt.Sprintf("has a default, %q, outside its values", s)
	}
	return ""
}

// servedBy reports whether an index of have serves what ix is for: the same
// key, or for an index on one column (a reference's), any index led by it.
func servedBy(have []SchemaIndex, ix SchemaIndex) bool {
	return slices.ContainsFunc(have, func(h SchemaIndex) bool {
		if len(ix.Columns) == 1 && !ix.Unique {
			return h.Columns[0] == ix.Columns[0]
		}
		return h.Unique == ix.Unique && slices.Equal(h.Columns, ix.Columns) && slices.Equal(h.NullsLow, ix.NullsLow)
	})
}

// grants writes the default grants of r that o, its snapshot (nil for a
// new resource), lacks, and refuses those withdrawn.
func (g *generator) grants(r, o *SnapshotResource) {
	roles := map[resourceapi.Permission][]string{}
	for _, role := range slices.Sorted(maps.Keys(r.Grants)) {
		for _, p := range r.Grants[role] {
			if o == nil || !slices.Contains(o.Grants[role], p) {
				roles[p] = append(roles[p], role)
			}
		}
	}
	if o != nil {
		for _, role := range slices.Sorted(maps.Keys(o.Grants)) {
			for _, p := range o.Grants[role] {
				if !slices.Contains(r.Grants[role], p) {
					g.refuse("%s: role %s no longer grants %s by default: whether databases in use should withdraw it is an operator's decision", r.Name, role, p)
				}
			}
		}
	}
	var b strings.Builder
	for _, a := range resourceapi.Actions {
		p := resourceapi.PermissionFor(r.Name, a)
		if len(roles[p]) > 0 {
			b.WriteString(g.d.Grant(p, roles[p]))
		}
	}
	g.section(r.Name, r.Name+": its default grants, given to the roles that lack them (what an operator changed stays).", b.String())
}

// createOrder returns the resources of s with each after those it
// references, otherwise in their order, so that a new table's foreign keys
// name tables that exist.
func createOrder(s *Snapshot) []*SnapshotResource {
	var out []*SnapshotResource
	placed := map[string]bool{}
	var place func(r *SnapshotResource, seen map[string]bool)
	place = func(r *SnapshotResource, seen map[string]bool) {
		if placed[r.Name] || seen[r.Name] {
			return
		}
		seen[r.Name] = true
		for _, f := range r.Fields {
			refs := []string{f.References}
			if f.Items != nil {
				for _, sub := range f.Items.Fields {
					refs = append(refs, sub.References)
				}
			}
			for _, ref := range refs {
				if dep := s.resource(ref); dep != nil && ref != r.Name {
					place(dep, seen)
				}
			}
		}
		placed[r.Name] = true
		out = append(out, r)
	}
	for i := range s.Resources {
		place(&s.Resources[i], map[string]bool{})
	}
	return out
}

// shortName makes a file name's words of the resources a migration
// concerns.
func shortName(resources []string) string {
	name := strings.Join(resources, "_")
	if len(name) > 48 {
		name = strings.TrimRight(name[:48], "_")
	}
	return name
}

var identifier = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkSnapshot refuses names that could not be spliced into SQL as they
// are, and declarations the generator has no schema for.
func checkSnapshot(s *Snapshot) error {
	var errs []error
	check := func(what, name string) {
		if !identifier.MatchString(name) || len(name) > 48 {
			errs = append(errs, fmt.Errorf("%s %q: a generated migration needs a name of at most 48 lower-case letters, digits and underscores", what, name))
		}
	}
	var fields func(res string, fs []SnapshotField)
	fields = func(res string, fs []SnapshotField) {
		for _, f := range fs {
			check("field "+res+"."+f.Name, f.Name)
			if f.Secret && f.Unique {
				errs = append(errs, fmt.Errorf("field %s.%s: a unique secret would keep its value in the clear in its key column", res, f.Name))
			}
			if f.References != "" && s.resource(f.References) == nil {
				errs = append(errs, fmt.Errorf("field %s.%s references %s, which is not declared", res, f.Name, f.References))
			}
			if f.Items != nil {
				check("items table of "+res+"."+f.Name, f.Items.Table)
				fields(res+"."+f.Name, f.Items.Fields)
			}
		}
	}
	for _, r := range s.Resources {
		check("resource", r.Name)
		fields(r.Name, r.Fields)
	}
	for _, r := range s.Resources {
		for _, t := range tablesOf(&r) {
			seen := map[string]bool{}
			for _, ix := range t.Indexes {
				if ix.Name != "" && seen[ix.Name] {
					errs = append(errs, fmt.Errorf("table %s: two indexes would be named %s", t.Name, ix.Name))
				}
				seen[ix.Name] = true
			}
		}
	}
	return errors.Join(errs...)
}

// tablesOf returns the tables of r: its own, then those of its items.
func tablesOf(r *SnapshotResource) []*SchemaTable {
	t := &SchemaTable{Name: r.Name, Resource: r.Name}
	var lead []string
	if r.SoftDelete != "" {
		t.SoftDelete = storedColumn(r.field(r.SoftDelete))
		lead = []string{t.SoftDelete}
	}
	tables := []*SchemaTable{t}
	for i := range r.Fields {
		f := &r.Fields[i]
		if f.Items != nil {
			tables = append(tables, itemsTable(r, f))
			continue
		}
		t.addColumns(f, f.Name == "id")
		if f.Searchable {
			t.Search = append(t.Search, storedColumn(f))
		}
		if f.Contains != nil {
			col := storedColumn(f)
			t.Contains = append(t.Contains, SchemaContains{Name: t.Name + "_" + col, Column: col, Values: f.Contains, Lead: lead})
		}
	}
	// Sorts and equality filters: the soft-delete column first, then the
	// field, then id, which breaks ties; the primary key serves id alone.
	for i := range r.Fields {
		f := &r.Fields[i]
		if !f.Indexed || f.Items != nil {
			continue
		}
		col := storedColumn(f)
		if col == "id" && lead == nil {
			continue
		}
		cols := append(slices.Clone(lead), col)
		if col != "id" {
			cols = append(cols, "id")
		}
		nulls := make([]bool, len(cols))
		nulls[len(lead)] = !f.NotNull
		t.Indexes = append(t.Indexes, SchemaIndex{Name: t.Name + "_" + strings.Join(cols[:len(lead)+1], "_"), Columns: cols, NullsLow: nulls})
	}
	t.referenceIndexes()
	if slices.ContainsFunc(r.Fields, func(f SnapshotField) bool { return f.DecidesAccess }) {
		add := func(col string) {
			if !slices.Contains(t.Identity, col) {
				t.Identity = append(t.Identity, col)
			}
		}
		if r.Owner != "" {
			add(storedColumn(r.field(r.Owner)))
		}
		if t.SoftDelete != "" {
			add(t.SoftDelete)
		}
		for i := range r.Fields {
			if f := &r.Fields[i]; f.DecidesAccess {
				if f.Unique && f.Type == "string" {
					add(f.Name + "_key")
				} else {
					add(storedColumn(f))
				}
			}
		}
	}
	return tables
}

// itemsTable returns the table of the items of field f of r.
func itemsTable(r *SnapshotResource, f *SnapshotField) *SchemaTable {
	it := f.Items
	t := &SchemaTable{Name: it.Table, Resource: r.Name, Items: true, PrimaryKey: []string{it.Key, "position"}}
	t.Columns = []SchemaColumn{
		{Name: it.Key, Type: resourceapi.TypeInt, ID: true, NotNull: true, References: r.Name},
		{Name: "position", Type: resourceapi.TypeInt, NotNull: true, Small: true},
	}
	t.Indexes = []SchemaIndex{{Columns: t.PrimaryKey, NullsLow: []bool{false, false}, Unique: true, Inline: true}}
	for i := range it.Fields {
		t.addColumns(&it.Fields[i], false)
	}
	t.referenceIndexes()
	return t
}

// addColumns adds the columns of field f: the column that stores it and,
// for a unique string, its key.
func (t *SchemaTable) addColumns(f *SnapshotField, id bool) {
	c := SchemaColumn{
		Name: storedColumn(f), Type: fieldType(f.Type), ID: id || f.References != "", PrimaryKey: id,
		NotNull: f.NotNull, Default: defaultValue(f), References: f.References, Restrict: f.Restrict, Enum: f.Enum,
	}
	if f.Range != nil {
		c.Range = &resourceapi.Range{Min: f.Range.Min, Max: f.Range.Max}
		c.Small = f.Range.Min >= math.MinInt32 && f.Range.Max <= math.MaxInt32
	}
	if f.Secret {
		c.Type, c.Default, c.Enum, c.Range = resourceapi.TypeString, nil, nil, nil
	}
	t.Columns = append(t.Columns, c)
	if id {
		t.Indexes = append(t.Indexes, SchemaIndex{Columns: []string{c.Name}, NullsLow: []bool{false}, Unique: true, Inline: true})
	}
	if !f.Unique {
		return
	}
	key := c.Name
	if f.Type == "string" {
		key = f.Name + "_key"
		t.Columns = append(t.Columns, SchemaColumn{Name: key, Type: resourceapi.TypeString, NotNull: f.NotNull})
	}
	t.Indexes = append(t.Indexes, SchemaIndex{Name: t.Name + "_" + key + "_unique", Columns: []string{key}, NullsLow: []bool{false}, Unique: true, Inline: true})
}

// referenceIndexes adds an index led by each reference that no index leads
// with yet, so that deleting the referenced record finds this table's rows
// without a scan.
func (t *SchemaTable) referenceIndexes() {
	for _, c := range t.Columns {
		if c.References == "" || slices.ContainsFunc(t.Indexes, func(ix SchemaIndex) bool { return ix.Columns[0] == c.Name }) {
			continue
		}
		t.Indexes = append(t.Indexes, SchemaIndex{Name: t.Name + "_" + c.Name + "_ref", Columns: []string{c.Name}, NullsLow: []bool{false}})
	}
}

// fieldType returns the field type a snapshot names.
func fieldType(name string) resourceapi.FieldType {
	for t, n := range typeNames {
		if n == name {
			return t
		}
	}
	return 0
}

// storedColumn returns the column that stores f (see column).
func storedColumn(f *SnapshotField) string {
	if f.Secret {
		return f.Name + "_hash"
	}
	return f.Name
}

// defaultValue decodes f's default for its column: an int64, string, bool
// or []string, or nil.
func defaultValue(f *SnapshotField) any {
	if f.Default == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(f.Default))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	switch v := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil
		}
		return n
	case []any:
		list := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil
			}
			list = append(list, s)
		}
		return list
	}
	return v
}

// QuoteString returns s as an SQL string literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

var versioned = regexp.MustCompile(`^([0-9]+)_.*\.sql$`)

// MigrationFileName returns the name of the file of migration m in the
// migrations directory dir: the version after the highest of the files
// there (some written by hand) and of taken, the versions of the store's
// migrations written in Go, then m's name ("00008_gadgets.sql").
func MigrationFileName(dir fs.FS, m Migration, taken ...int64) (string, error) {
	entries, err := fs.ReadDir(dir, ".")
	if err != nil {
		return "", err
	}
	var last int64
	for _, v := range taken {
		last = max(last, v)
	}
	for _, e := range entries {
		if s := versioned.FindStringSubmatch(e.Name()); s != nil {
			n, err := strconv.ParseInt(s[1], 10, 64)
			if err != nil {
				return "", fmt.Errorf("migration %s: %w", e.Name(), err)
			}
			last = max(last, n)
		}
	}
	return fmt.Sprintf("%05d_%s.sql", last+1, m.Name), nil
}
