package sqlite_test

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
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

// TestNormalizeEmailsMigration stores emails as versions before migration 10
// did (as typed, keyed lower-cased: one NFD, one NFC that collides with it
// once normalized, one upper-case NFD) and runs the migration: the emails
// are stored in NFC and keyed by resourceapi.UniqueKey, so sign-in by any
// spelling finds them and q finds them; of the colliding pair the one
// already in NFC keeps the key and the other stays as it was.
func TestNormalizeEmailsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "emails.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 3 {
		rec, err := db.Create(ctx, resourceapi.Users, mustValid(t, resourceapi.Record{"name": "U" + strconv.Itoa(i), "email": "u" + strconv.Itoa(i) + "@example.com"}, resourceapi.ModeCreate))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID())
	}
	db.Close()
	const (
		nfd     = "jose\u0301@example.com"
		nfc     = "jos\u00e9@example.com"
		upperNF = "RENE\u0301@EXAMPLE.COM"
	)
	mustExec(t, path,
		`UPDATE users SET email = '`+nfd+`', email_key = '`+strings.ToLower(nfd)+`' WHERE id = `+strconv.FormatInt(ids[0], 10),
		`UPDATE users SET email = '`+nfc+`', email_key = '`+strings.ToLower(nfc)+`' WHERE id = `+strconv.FormatInt(ids[1], 10),
		`UPDATE users SET email = '`+upperNF+`', email_key = '`+strings.ToLower(upperNF)+`' WHERE id = `+strconv.FormatInt(ids[2], 10),
		// As migration 9 left it: without what migrations 11, 12, 15, 20, 30 and 47 add (47 drops an index 6 made).
		`ALTER TABLE events DROP COLUMN alias`, `ALTER TABLE events DROP COLUMN actor`, `DROP TABLE events_purged`,
		`DROP TABLE webhook_attempts`, `DROP INDEX events_unhooked`, `ALTER TABLE events DROP COLUMN hooked_at`, `DROP TABLE webhook_deliveries`, `DROP TABLE webhooks`,
		`DROP TABLE idempotency_keys`,
		`DROP TABLE events_published`, `CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL`,
		`DELETE FROM goose_db_version WHERE version_id >= 10`)

	db = mustOpenPath(t, path)
	for id, want := range map[int64]string{ids[0]: nfd, ids[1]: nfc, ids[2]: "REN\u00c9@EXAMPLE.COM"} {
		rec, err := db.Get(ctx, resourceapi.Users, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec["email"] != want {
			t.Errorf("user %d: email %q, want %q", id, rec["email"], want)
		}
	}
	for email, want := range map[string]int64{nfc: ids[1], nfd: ids[1], "ren\u00e9@example.com": ids[2], "rene\u0301@example.com": ids[2]} {
		acct, err := db.AccountByEmail(ctx, email)
		if err != nil || acct.Caller().UserID != want {
			t.Errorf("AccountByEmail(%q) = user %d, %v; want user %d", email, acct.Caller().UserID, err, want)
		}
	}
	q, err := rhttp.ParseListQuery(resourceapi.Users, url.Values{"q": {"ren\u00e9"}})
	if err != nil {
		t.Fatal(err)
	}
	if page, err := db.List(ctx, resourceapi.Users, q); err != nil || len(page.Records) != 1 {
		t.Errorf("q=ren\u00e9: %v, %v; want user %d", page.Records, err, ids[2])
	}
}

// TestServiceUsersMigration runs migration 9 on a database whose OAuth
// client was registered before it: the client's service user is marked,
// so that it is hidden like the service users registered since.
func TestServiceUsersMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := resourceapi.NewService(db, nil)
	client, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.OAuthClients, 0,
		resourceapi.Record{"name": "Old", "grants": []string{resourceapi.GrantClientCredentials}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustExec(t, path, "DROP INDEX users_service", "ALTER TABLE users DROP COLUMN service",
		"ALTER TABLE events DROP COLUMN alias", "ALTER TABLE events DROP COLUMN actor", "DROP TABLE events_purged",
		"DROP TABLE webhook_attempts", "DROP INDEX events_unhooked", "ALTER TABLE events DROP COLUMN hooked_at", "DROP TABLE webhook_deliveries", "DROP TABLE webhooks",
		"DROP TABLE idempotency_keys", "DROP TABLE events_published", "CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL",
		"DELETE FROM goose_db_version WHERE version_id >= 9")
	db = mustOpenPath(t, path)
	u, err := db.Get(ctx, resourceapi.Users, client["user_id"].(int64))
	if err != nil {
		t.Fatal(err)
	}
	if u["service"] != true {
		t.Errorf("the old client's user: service = %v, want true", u["service"])
	}
	admin, err := db.Get(ctx, resourceapi.Users, client["user_id"].(int64)-1)
	if err == nil && admin["service"] != false {
		t.Errorf("another user: service = %v, want false", admin["service"])
	}
}

// TestServiceUserCreatedWithoutEvent registers an OAuth client: its service
// user is created hidden, so no userCreated event tells every subscriber
// about it, while a user created next has its event.
func TestServiceUserCreatedWithoutEvent(t *testing.T) {
	ctx := context.Background()
	db := mustOpenPath(t, filepath.Join(t.TempDir(), "ev.db"))
	svc := resourceapi.NewService(db, nil)
	if _, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.OAuthClients, 0,
		resourceapi.Record{"name": "Quiet", "grants": []string{resourceapi.GrantClientCredentials}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0,
		resourceapi.Record{"name": "Loud", "email": "loud@example.com"}); err != nil {
		t.Fatal(err)
	}
	var emails []string
	if _, err := db.PublishEvents(ctx, 100, func(_ context.Context, evs []resourceapi.Event) error {
		for _, ev := range evs {
			if ev.Alias == "userCreated" {
				emails = append(emails, ev.Record["email"].(string))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(emails) != 1 || emails[0] != "loud@example.com" {
		t.Errorf("userCreated events for %v, want only loud@example.com", emails)
	}
}
