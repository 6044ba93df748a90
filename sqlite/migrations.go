package sqlite

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// The next migration of the declarations (see sqlstore.GenerateMigration):
// go generate ./sqlite writes it into migrations/, with the snapshot
// migrations/declared.json.
//go:generate go run ../internal/migrategen -dialect sqlite -dir migrations

// Migrations returns the migrations Open and Migrate apply (the released
// ones, and the snapshot of the declarations they made, sqlstore.SnapshotFile).
func Migrations() fs.FS { return mustSub(migrations, "migrations") }

// GenerateMigration returns the SQLite migration that brings a database
// whose migrations made snapshot old up to the declarations of resources,
// and their snapshot (sqlstore.GenerateMigration).
func GenerateMigration(old *sqlstore.Snapshot, resources []*resourceapi.Resource) (sqlstore.Migration, *sqlstore.Snapshot, error) {
	return sqlstore.GenerateMigration(schema{}, old, resources)
}

// schema is SQLite's sqlstore.SchemaDialect, in the conventions of the
// migrations written by hand: STRICT tables, ids assigned from the
// sequences table (an INTEGER PRIMARY KEY, no AUTOINCREMENT), timestamps in
// Unix milliseconds, booleans 0 and 1, lists as JSON text, counts in
// row_counts, and search in a contentless trigram FTS5 table that the
// writer brings up to date from <table>_fts_pending (ftsSync).
type schema struct{}

var _ sqlstore.SchemaDialect = schema{}

func (schema) CreateTable(t *sqlstore.SchemaTable) string {
	var rows [][2]string
	for i := range t.Columns {
		c := &t.Columns[i]
		def := columnType(c)
		if c.PrimaryKey {
			def += " PRIMARY KEY"
		} else {
			def += constraints(c, slices.ContainsFunc(t.Indexes, func(ix sqlstore.SchemaIndex) bool {
				return ix.Inline && ix.Unique && slices.Equal(ix.Columns, []string{c.Name})
			}))
		}
		rows = append(rows, [2]string{c.Name, def})
	}
	if t.PrimaryKey != nil {
		rows = append(rows, [2]string{"PRIMARY KEY (" + strings.Join(t.PrimaryKey, ", ") + ")", ""})
	}
	end := ") STRICT;\n"
	if t.PrimaryKey != nil {
		end = ") STRICT, WITHOUT ROWID;\n"
	}
	return "CREATE TABLE " + t.Name + " (\n" + columnList(rows) + end + "\n"
}

// columnList lays out a table's columns, names and types aligned.
func columnList(rows [][2]string) string {
	w := 0
	for _, r := range rows {
		if r[1] != "" {
			w = max(w, len(r[0]))
		}
	}
	var b strings.Builder
	for i, r := range rows {
		line := r[0]
		if r[1] != "" {
			line = strings.TrimRight(fmt.Sprintf("%-*s %s", w, r[0], r[1]), " ")
		}
		b.WriteString("    " + line)
		if i < len(rows)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// columnType returns the column's type, padded so that constraints align.
func columnType(c *sqlstore.SchemaColumn) string {
	switch c.Type {
	case resourceapi.TypeString, resourceapi.TypeStrings:
		return "TEXT   "
	}
	return "INTEGER"
}

// constraints returns what follows a column's type.
func constraints(c *sqlstore.SchemaColumn, unique bool) string {
	var b strings.Builder
	if c.NotNull {
		b.WriteString(" NOT NULL")
	}
	if c.Default != nil {
		b.WriteString(" DEFAULT " + literal(c.Default))
	}
	if unique {
		b.WriteString(" UNIQUE")
	}
	var check string
	switch {
	case c.Type == resourceapi.TypeBool:
		check = c.Name + " IN (0, 1)"
	case c.Type == resourceapi.TypeStrings:
		check = "json_valid(" + c.Name + ")"
	case c.Range != nil:
		check = fmt.Sprintf("%s BETWEEN %d AND %d", c.Name, c.Range.Min, c.Range.Max)
	case c.Enum != nil && c.Type == resourceapi.TypeString:
		check = c.Name + " IN (" + quotedList(c.Enum) + ")"
	}
	if check != "" {
		if !c.NotNull {
			check = c.Name + " IS NULL OR " + check
		}
		b.WriteString(" CHECK (" + check + ")")
	}
	if c.References != "" {
		onDelete := "CASCADE"
		if c.Restrict {
			onDelete = "RESTRICT"
		}
		b.WriteString(" REFERENCES " + c.References + " (id) ON DELETE " + onDelete)
	}
	return b.String()
}

func literal(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case string:
		return sqlstore.QuoteString(v)
	case []string:
		return sqlstore.QuoteString(sqlstore.EncodeStrings(v))
	}
	panic(fmt.Sprintf("sqlite: no literal for %T", v)) // sqlstore decodes defaults to these types
}

func quotedList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = sqlstore.QuoteString(v)
	}
	return strings.Join(q, ", ")
}

func (schema) AddColumn(t *sqlstore.SchemaTable, c *sqlstore.SchemaColumn) string {
	return "ALTER TABLE " + t.Name + " ADD COLUMN " + c.Name + " " + strings.TrimSpace(columnType(c)) + constraints(c, false) + ";\n"
}

func (schema) CreateIndex(t *sqlstore.SchemaTable, ix *sqlstore.SchemaIndex, ifNotExists bool) string {
	// SQLite orders null as the smallest value in every index.
	return createIndex(ix.Unique, ifNotExists) + ix.Name + " ON " + t.Name + " (" + strings.Join(ix.Columns, ", ") + ");\n"
}

func createIndex(unique, ifNotExists bool) string {
	s := "CREATE INDEX "
	if unique {
		s = "CREATE UNIQUE INDEX "
	}
	if ifNotExists {
		s += "IF NOT EXISTS "
	}
	return s
}

// trigger wraps a statement that holds semicolons of its own.
func trigger(stmt string) string {
	return "-- +goose StatementBegin\n" + stmt + "-- +goose StatementEnd\n\n"
}

func (schema) Counts(t *sqlstore.SchemaTable) string {
	name, res := t.Name, sqlstore.QuoteString(t.Resource)
	if t.SoftDelete == "" {
		return trigger("CREATE TRIGGER "+name+"_count_insert AFTER INSERT ON "+name+" BEGIN\n"+
			"    INSERT INTO row_counts (resource, deleted, n) VALUES ("+res+", 0, 1)\n"+
			"        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;\nEND;\n") +
			trigger("CREATE TRIGGER "+name+"_count_delete AFTER DELETE ON "+name+" BEGIN\n"+
				"    UPDATE row_counts SET n = n - 1 WHERE resource = "+res+" AND deleted = 0;\nEND;\n")
	}
	del := t.SoftDelete
	return trigger("CREATE TRIGGER "+name+"_count_insert AFTER INSERT ON "+name+" BEGIN\n"+
		"    INSERT INTO row_counts (resource, deleted, n) VALUES ("+res+", new."+del+", 1)\n"+
		"        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;\nEND;\n") +
		trigger("CREATE TRIGGER "+name+"_count_delete AFTER DELETE ON "+name+" BEGIN\n"+
			"    UPDATE row_counts SET n = n - 1 WHERE resource = "+res+" AND deleted = old."+del+";\nEND;\n") +
		trigger("CREATE TRIGGER "+name+"_count_update AFTER UPDATE OF "+del+" ON "+name+" WHEN old."+del+" <> new."+del+" BEGIN\n"+
			"    UPDATE row_counts SET n = n - 1 WHERE resource = "+res+" AND deleted = old."+del+";\n"+
			"    INSERT INTO row_counts (resource, deleted, n) VALUES ("+res+", new."+del+", 1)\n"+
			"        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;\nEND;\n")
}

// Retire records deleted ids in retired_ids, as 00008 does for the
// resources it knew.
func (schema) Retire(t *sqlstore.SchemaTable) string {
	return trigger("CREATE TRIGGER " + t.Name + "_retire AFTER DELETE ON " + t.Name + " BEGIN\n" +
		"    INSERT INTO retired_ids (resource, id) VALUES (" + sqlstore.QuoteString(t.Resource) + ", old.id) ON CONFLICT DO NOTHING;\nEND;\n")
}

// Search keeps the index as the migrations written by hand do: a
// contentless trigram FTS5 table, <table>_fts, and triggers that only note
// the ids that changed in <table>_fts_pending, from which the writer brings
// the index up to date once per transaction (ftsSync finds every such
// table when the store opens). A changed list of columns rebuilds the
// index from the table.
func (schema) Search(t *sqlstore.SchemaTable, old []string, existing bool) string {
	name := t.Name
	cols := strings.Join(t.Search, ", ")
	ftsTable := "CREATE VIRTUAL TABLE " + name + "_fts USING fts5(\n    " + cols +
		", content = '', contentless_delete = 1, tokenize = 'trigram'\n);\n"
	fill := "INSERT INTO " + name + "_fts (rowid, " + cols + ") SELECT id, " + cols + " FROM " + name + ";\n"
	note := func(event, row string) string {
		return trigger("CREATE TRIGGER " + name + "_fts_" + event + " AFTER " + strings.ToUpper(event) + " ON " + name + " BEGIN\n" +
			"    INSERT INTO " + name + "_fts_pending (id) VALUES (" + row + ".id) ON CONFLICT DO NOTHING;\nEND;\n")
	}
	update := trigger("CREATE TRIGGER " + name + "_fts_update AFTER UPDATE OF " + cols + " ON " + name + " BEGIN\n" +
		"    INSERT INTO " + name + "_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;\nEND;\n")
	switch {
	case len(t.Search) == 0:
		return "DROP TRIGGER " + name + "_fts_insert;\nDROP TRIGGER " + name + "_fts_update;\nDROP TRIGGER " + name + "_fts_delete;\n" +
			"DROP TABLE " + name + "_fts;\nDROP TABLE " + name + "_fts_pending;\n"
	case len(old) == 0:
		s := ftsTable + "CREATE TABLE " + name + "_fts_pending (id INTEGER PRIMARY KEY) STRICT;\n\n" +
			note("insert", "new") + update + note("delete", "old")
		if existing {
			s += fill
		}
		return s
	}
	return "DROP TABLE " + name + "_fts;\n" + ftsTable + fill + "\nDROP TRIGGER " + name + "_fts_update;\n\n" + update
}

// Contains indexes each value as the users' roles are: a partial index of
// the records whose list holds it, on the very condition Dialect.Contains
// writes, so that the planner can use it.
func (schema) Contains(t *sqlstore.SchemaTable, c *sqlstore.SchemaContains, old []string) string {
	var b strings.Builder
	cols := strings.Join(append(slices.Clone(c.Lead), "id"), ", ")
	for _, v := range c.Values {
		if slices.Contains(old, v) {
			continue
		}
		needle, _ := json.Marshal(v)
		b.WriteString("CREATE INDEX " + c.Name + "_" + indexWord(v) + " ON " + t.Name + " (" + cols + ") WHERE instr(" +
			c.Column + ", " + sqlstore.QuoteString(string(needle)) + ") > 0;\n")
	}
	return b.String()
}

// indexWord makes a value fit in an index's name.
func indexWord(v string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' {
			return r
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '_'
	}, v)
}

// Identity has nothing to do: SQLite keeps no identity version (the
// store's cache sees every commit, its own and other processes').
func (schema) Identity(*sqlstore.SchemaTable, []string) string { return "" }

func (schema) Grant(p resourceapi.Permission, roles []string) string {
	q := sqlstore.QuoteString(string(p))
	return "UPDATE roles SET permissions = json_insert(permissions, '$[#]', " + q + ")\n" +
		"    WHERE name IN (" + quotedList(roles) + ")\n" +
		"    AND NOT EXISTS (SELECT 1 FROM json_each(roles.permissions) WHERE value = " + q + ");\n"
}
