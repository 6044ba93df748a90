package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// dialect is SQLite's sqlstore.Dialect.
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

func (dialect) Placeholder(int) string { return "?" }

func (dialect) Bool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Value stores timestamps as Unix milliseconds (compact, and sorted as
// numbers) and booleans as 0 and 1, which is what SQLite compares them to.
func (dialect) Value(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.UnixMilli()
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// Search uses the resource's trigram FTS5 table (<name>_fts) for three
// characters or more. Shorter strings have no trigram, so they scan with LIKE,
// which folds ASCII case only; the FTS table folds all of Unicode.
func (dialect) Search(q *sqlstore.Query, res *resourceapi.Resource, s string) string {
	if utf8.RuneCountInString(s) >= 3 {
		phrase := `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		return "id IN (SELECT rowid FROM " + res.Name + "_fts WHERE " + res.Name + "_fts MATCH " + q.Arg(phrase) + ")"
	}
	pattern := sqlstore.LikePattern(s)
	var ors []string
	for _, col := range sqlstore.SearchColumns(res) {
		ors = append(ors, col+` LIKE `+q.Arg(pattern)+` ESCAPE '\'`)
	}
	return "(" + strings.Join(ors, " OR ") + ")"
}

// Contains looks for the element as JSON text, quotes included. An element
// is a JSON string whose own quotes are escaped, so the quoted needle can only
// match a whole element. The needle is spliced into the SQL as a literal, so
// that the partial indexes on instr(roles, '"admin"') > 0 (one per role, see
// the migrations) serve the role filter and the last-admin count; values only
// ever come from a declaration's allow-list, and are quoted all the same.
func (dialect) Contains(q *sqlstore.Query, column, value string) string {
	needle, _ := json.Marshal(value)
	return "instr(" + column + ", '" + strings.ReplaceAll(string(needle), "'", "''") + "') > 0"
}

func (dialect) Unique(err error) (string, bool) {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return "", false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
	default:
		return "", false
	}
	// "UNIQUE constraint failed: users.email_key"
	msg := e.Error()
	if i := strings.LastIndex(msg, "failed: "); i >= 0 {
		col := msg[i+len("failed: "):]
		if j := strings.IndexByte(col, '.'); j >= 0 {
			col = col[j+1:]
		}
		if j := strings.IndexAny(col, " ,("); j >= 0 {
			col = col[:j]
		}
		return col, true
	}
	return "", true
}

// LockID has nothing to do: the single writer serialises all writes.
func (dialect) LockID(context.Context, sqlstore.Execer, *resourceapi.Resource, int64) error {
	return nil
}

// LockRetain has nothing to do: the single writer serialises all writes.
func (dialect) LockRetain(context.Context, sqlstore.Execer, *resourceapi.Resource) error { return nil }

// NextID counts in the sequences table (migration 00002), not with
// AUTOINCREMENT, which goes on after the largest id ever inserted, PUT's
// included. A resource without a row starts at 1. In the writer's
// transaction, the first id of a resource is taken from the table and the
// others are counted on from it, the row written once at the end of the
// batch (see tx): the writes of a batch take the ids they would have taken
// one statement each.
func (dialect) NextID(ctx context.Context, q sqlstore.Querier, res *resourceapi.Resource) (int64, error) {
	if t, ok := q.(*tx); ok {
		return t.nextID(ctx, res.Name)
	}
	var id int64
	err := q.QueryRowContext(ctx, nextIDQuery, res.Name).Scan(&id)
	return id, err
}

const nextIDQuery = `INSERT INTO sequences (resource, last) VALUES (?, 1)
		ON CONFLICT (resource) DO UPDATE SET last = last + 1 RETURNING last`

func (dialect) SkipID(ctx context.Context, q sqlstore.Execer, res *resourceapi.Resource, id int64) error {
	if t, ok := q.(*tx); ok && t.skipID(res.Name, id) {
		return nil
	}
	_, err := q.ExecContext(ctx, "UPDATE sequences SET last = max(last, ?) WHERE resource = ?", id, res.Name)
	return err
}

// ForUpdate is empty: the single writer serialises all writes.
func (dialect) ForUpdate() string { return "" }

// OrderBy hides the sort column's index from the planner when q narrows the
// records: SQLite would otherwise walk the whole sort index and test each row
// against the search, where fetching the few matches and sorting them is
// cheaper (15 ms against 1 ms with 10,000 users). Unary + changes no value.
func (dialect) OrderBy(column string, search bool) string {
	if search {
		return "+" + column
	}
	return column
}

// Permissions unions the user's grants with those of their roles.
func (dialect) Permissions(u string) string {
	return "(SELECT json_group_array(p) FROM (" +
		"SELECT value AS p FROM json_each(" + u + ".permissions) UNION " +
		"SELECT rp.value FROM roles r, json_each(r.permissions) rp WHERE r.name IN (SELECT value FROM json_each(" + u + ".roles))))"
}

// ObjectArray aggregates rows into a JSON array of objects (SQLite 3.44's
// ordered aggregates).
func (dialect) ObjectArray(keyValues, orderBy string) string {
	return "coalesce(json_group_array(json_object(" + keyValues + ") ORDER BY " + orderBy + "), '[]')"
}

// ForeignKey reports SQLite's foreign key violations (which do not say which
// key failed). A reference that keeps the record it names (ON DELETE
// RESTRICT) refuses the delete as a trigger would, with
// SQLITE_CONSTRAINT_TRIGGER; of those, only its message tells it from a
// trigger's own RAISE.
func (dialect) ForeignKey(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return true
	case sqlite3.SQLITE_CONSTRAINT_TRIGGER:
		return strings.Contains(e.Error(), "FOREIGN KEY constraint failed")
	}
	return false
}

// IndexedBy names the index a query reads its table through: without
// statistics the planner can prefer one that walks far more rows.
func (dialect) IndexedBy(index string) string { return " INDEXED BY " + index }

// SkipLocked is empty: one process serves a SQLite file, and its relay is
// the only one.
func (dialect) SkipLocked() string { return "" }

// Lock is empty: one process writes, one transaction at a time (see
// SkipLocked).
func (dialect) Lock(string) string { return "" }

// IdentityVersion is none: the record cache sees every commit to the file,
// this process's and others', so accounts are cached with records.
func (dialect) IdentityVersion() string { return "" }

// Unavailable is false: the database is a file of this process, never out
// of reach the way a server is.
func (dialect) Unavailable(error) bool { return false }
