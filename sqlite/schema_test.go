package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestSchema checks every declaration against the schema the migrations
// make.
func TestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	if err := sqlite.Migrate(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	storetest.CheckSchema(t, db, introspection)
}

// introspection is what storetest's schema checks read of SQLite. STRICT
// tables store integers, booleans (0 and 1) and timestamps (Unix
// milliseconds) in INTEGER columns, and lists as JSON TEXT.
var introspection = storetest.Introspection{
	Table: introspect,
	Types: map[resourceapi.FieldType][]string{
		resourceapi.TypeInt:     {"integer"},
		resourceapi.TypeBool:    {"integer"},
		resourceapi.TypeTime:    {"integer"},
		resourceapi.TypeString:  {"text"},
		resourceapi.TypeStrings: {"text"},
	},
	IDTypes: []string{"integer"},
}

// introspect reads a table from SQLite's table-valued pragmas.
func introspect(ctx context.Context, db *sql.DB, name string) (*storetest.Table, error) {
	var withoutRowID bool
	err := db.QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ? AND type = 'table'`, name).Scan(&withoutRowID)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t := &storetest.Table{Name: name}
	var pk []string
	err = each(ctx, db, `SELECT name, lower(type), "notnull", pk FROM pragma_table_info(?) ORDER BY cid`, []any{name}, func(rows *sql.Rows) error {
		var c storetest.Column
		var inPK int
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &inPK); err != nil {
			return err
		}
		if inPK > 0 {
			pk = append(pk, c.Name)
			// The primary key of a rowid table may hold null unless it
			// is the rowid itself (INTEGER PRIMARY KEY), which never does.
			c.NotNull = c.NotNull || (!withoutRowID && c.Type == "integer" && inPK == 1)
		}
		t.Columns = append(t.Columns, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !withoutRowID && len(pk) == 1 {
		// An INTEGER PRIMARY KEY is the rowid, the table's own b-tree: no
		// index is listed for it.
		t.Indexes = append(t.Indexes, storetest.Index{Name: "rowid", Columns: pk, NullsLow: []bool{true}, Unique: true})
	}
	var indexes []storetest.Index
	err = each(ctx, db, `SELECT name, "unique", partial FROM pragma_index_list(?)`, []any{name}, func(rows *sql.Rows) error {
		var ix storetest.Index
		if err := rows.Scan(&ix.Name, &ix.Unique, &ix.Partial); err != nil {
			return err
		}
		indexes = append(indexes, ix)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ix := range indexes {
		err := each(ctx, db, `SELECT coalesce(name, '') FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno`, []any{ix.Name}, func(rows *sql.Rows) error {
			var col string
			if err := rows.Scan(&col); err != nil {
				return err
			}
			// SQLite orders null as the smallest value, in every index.
			ix.Columns, ix.NullsLow = append(ix.Columns, col), append(ix.NullsLow, true)
			return nil
		})
		if err != nil {
			return nil, err
		}
		t.Indexes = append(t.Indexes, ix)
	}
	// A key of several columns is a row per column, under one id.
	lastID := -1
	err = each(ctx, db, `SELECT id, "table", "from", coalesce("to", ''), on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq`, []any{name}, func(rows *sql.Rows) error {
		var id int
		var table, from, to, onDelete string
		if err := rows.Scan(&id, &table, &from, &to, &onDelete); err != nil {
			return err
		}
		if to == "" {
			to = "id" // REFERENCES t without a column: t's primary key, id in this schema
		}
		if id != lastID {
			t.ForeignKeys = append(t.ForeignKeys, storetest.ForeignKey{Table: table, OnDelete: strings.ToUpper(onDelete)})
			lastID = id
		}
		fk := &t.ForeignKeys[len(t.ForeignKeys)-1]
		fk.Columns, fk.RefColumns = append(fk.Columns, from), append(fk.RefColumns, to)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// q is answered by the trigram FTS5 table <name>_fts (see the dialect's
	// Search): its columns are what q finds.
	err = each(ctx, db, `SELECT name FROM pragma_table_info(?)`, []any{name + "_fts"}, func(rows *sql.Rows) error {
		var col string
		if err := rows.Scan(&col); err != nil {
			return err
		}
		t.Search = append(t.Search, col)
		return nil
	})
	return t, err
}

// each runs query and calls f for each row.
func each(ctx context.Context, db *sql.DB, query string, args []any, f func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
