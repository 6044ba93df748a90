package postgres_test

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestSchema checks every declaration against the schema the migrations
// make.
func TestSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	if err := postgres.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	storetest.CheckSchema(t, db, introspection)
}

// introspection is what storetest's schema checks read of PostgreSQL.
var introspection = storetest.Introspection{
	Table: introspect,
	Types: map[resourceapi.FieldType][]string{
		// Counts and amounts with small bounds may be integer.
		resourceapi.TypeInt:     {"bigint", "integer"},
		resourceapi.TypeBool:    {"boolean"},
		resourceapi.TypeTime:    {"timestamp with time zone"},
		resourceapi.TypeString:  {"text"},
		resourceapi.TypeStrings: {"jsonb"},
	},
	IDTypes:     []string{"bigint"},
	SearchTable: postgres.SearchTable,
	SearchCopy:  postgres.SearchColumn,
}

// introspect reads a table of the public schema from PostgreSQL's catalog.
func introspect(ctx context.Context, db *sql.DB, name string) (*storetest.Table, error) {
	var oid sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('public.' || quote_ident($1))::oid`, name).Scan(&oid); err != nil {
		return nil, err
	}
	if !oid.Valid {
		return nil, nil
	}
	t := &storetest.Table{Name: name}
	err := each(ctx, db, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
			CASE WHEN a.attgenerated <> '' THEN pg_get_expr(d.adbin, d.adrelid) ELSE '' END
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, []any{oid.Int64}, func(rows *sql.Rows) error {
		var c storetest.Column
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &c.Generated); err != nil {
			return err
		}
		t.Columns = append(t.Columns, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Key columns with their option bits (1: DESC, 2: NULLS FIRST) and
	// operator classes; an expression has no column name.
	// The lists are joined with commas, which no name here holds.
	err = each(ctx, db, `SELECT c.relname, ix.indisunique, ix.indpred IS NOT NULL, am.amname,
			array_to_string(ARRAY(SELECT coalesce(a.attname, '') FROM generate_series(0, ix.indnkeyatts - 1) k
				LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = ix.indkey[k] ORDER BY k), ','),
			array_to_string(ARRAY(SELECT ix.indoption[k] & 3 FROM generate_series(0, ix.indnkeyatts - 1) k ORDER BY k), ','),
			array_to_string(ARRAY(SELECT op.opcname FROM generate_series(0, ix.indnkeyatts - 1) k
				JOIN pg_opclass op ON op.oid = ix.indclass[k] ORDER BY k), ',')
		FROM pg_index ix JOIN pg_class c ON c.oid = ix.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE ix.indrelid = $1`, []any{oid.Int64}, func(rows *sql.Rows) error {
		var ix storetest.Index
		var method, cols, opts, ops string
		if err := rows.Scan(&ix.Name, &ix.Unique, &ix.Partial, &method, &cols, &opts, &ops); err != nil {
			return err
		}
		columns, options, opclasses := strings.Split(cols, ","), strings.Split(opts, ","), strings.Split(ops, ",")
		if method == "gin" {
			// The trigram index q is answered with; other GIN
			// indexes (roles @>) serve filters of their own.
			for i, op := range opclasses {
				if op == "gin_trgm_ops" && columns[i] != "" {
					t.Search = append(t.Search, columns[i])
				}
			}
			return nil
		}
		if method != "btree" {
			return nil
		}
		ix.Columns = columns
		for _, o := range options {
			// PostgreSQL orders null as the largest value unless told
			// otherwise: ASC NULLS LAST, DESC NULLS FIRST.
			desc, nullsFirst := o == "1" || o == "3", o == "2" || o == "3"
			ix.NullsLow = append(ix.NullsLow, desc != nullsFirst)
		}
		t.Indexes = append(t.Indexes, ix)
		return nil
	})
	if err != nil {
		return nil, err
	}
	actions := map[string]string{"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
	err = each(ctx, db, `SELECT
			array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(att, n)
				JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.att ORDER BY k.n), ','),
			con.confrelid::regclass::text,
			array_to_string(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(att, n)
				JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.att ORDER BY k.n), ','),
			con.confdeltype
		FROM pg_constraint con WHERE con.contype = 'f' AND con.conrelid = $1`, []any{oid.Int64}, func(rows *sql.Rows) error {
		var fk storetest.ForeignKey
		var cols, refCols, action string
		if err := rows.Scan(&cols, &fk.Table, &refCols, &action); err != nil {
			return err
		}
		fk.Columns, fk.RefColumns = strings.Split(cols, ","), strings.Split(refCols, ",")
		fk.OnDelete = actions[action]
		t.ForeignKeys = append(t.ForeignKeys, fk)
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
// spelling finds them; of the colliding pair the one already in NFC keeps
// the key and the other stays as it was.
func TestNormalizeEmailsMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, email := range []string{"u0@example.com", "u1@example.com", "u2@example.com"} {
		rec := resourceapi.Record{"name": "U", "email": email}
		if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		out, err := db.Create(ctx, resourceapi.Users, rec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.ID())
	}
	db.Close()
	const nfd, nfc, upperNFD = "jose\u0301@example.com", "jos\u00e9@example.com", "RENE\u0301@EXAMPLE.COM"
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	for i, email := range []string{nfd, nfc, upperNFD} {
		if _, err := raw.ExecContext(ctx, "UPDATE users SET email = $1, email_key = $2 WHERE id = $3", email, strings.ToLower(email), ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// As migration 9 left it: without what migrations 11, 12, 15, 20, 25, 28, 30, 31, 35, 46, 47, 48 and 51 add (47 drops an index 6 made).
	if _, err := raw.ExecContext(ctx, "ALTER TABLE events DROP COLUMN alias, DROP COLUMN actor, DROP COLUMN hooked_at; DROP TABLE idempotency_keys, events_purged, webhook_attempts, webhook_deliveries, webhooks; "+
		"DROP TRIGGER events_commit_order ON events; DROP FUNCTION events_in_commit_order; DROP SEQUENCE events_commit_order; "+
		"DROP FUNCTION events_establish_horizon; DROP SEQUENCE events_horizon, events_epoch, events_epoch_waited; "+
		"DROP FUNCTION solo_guard CASCADE; DROP FUNCTION row_counts_truncated CASCADE; DROP SEQUENCE solo_holder; DROP FUNCTION identity_confirm; DROP FUNCTION identity_moved; "+
		"DROP TABLE events_published; CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL; ALTER TABLE events DROP COLUMN payload_text"); err != nil {
		t.Fatal(err)
	}
	// Nor the search tables of migration 38 (with the lower-cased copies
	// of 33) and the function that writes them and the counts (44): the
	// search indexes covered the columns themselves.
	for _, res := range resourceapi.Declared() {
		var ops []string
		for _, name := range res.SearchableFields() {
			ops = append(ops, name+" gin_trgm_ops")
		}
		if len(ops) == 0 {
			continue
		}
		side := postgres.SearchTable(res.Name)
		if _, err := raw.ExecContext(ctx, "DROP FUNCTION "+postgres.RowsFunction(res.Name)+"() CASCADE; DROP TABLE "+side+"; CREATE INDEX "+res.Name+"_search ON "+res.Name+
			" USING gin ("+strings.Join(ops, ", ")+") WITH (gin_pending_list_limit = 64)"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.ExecContext(ctx, "DELETE FROM goose_db_version WHERE version_id >= 10"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db, err = postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, want := range []string{nfd, nfc, "REN\u00c9@EXAMPLE.COM"} {
		rec, err := db.Get(ctx, resourceapi.Users, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if rec["email"] != want {
			t.Errorf("user %d: email %q, want %q", ids[i], rec["email"], want)
		}
	}
	for email, want := range map[string]int64{nfc: ids[1], nfd: ids[1], "ren\u00e9@example.com": ids[2], "rene\u0301@example.com": ids[2]} {
		acct, err := db.AccountByEmail(ctx, email)
		if err != nil || acct.Caller().UserID != want {
			t.Errorf("AccountByEmail(%q) = user %d, %v; want user %d", email, acct.Caller().UserID, err, want)
		}
	}
}

// TestTriggerFunctionsKeepTheirPlans checks that no function the migrations
// create is LANGUAGE sql. The triggers of every write call them, and
// PostgreSQL parses and plans a SQL function's body again in every
// transaction that calls it, where PL/pgSQL keeps its plans for the
// session: row_counts_add in SQL cost every POST a parse and plan of an
// INSERT ... ON CONFLICT (migration 00037; docs/performance.md).
func TestTriggerFunctionsKeepTheirPlans(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	rows, err := db.Query(`SELECT p.proname FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace
		JOIN pg_language l ON l.oid = p.prolang
		WHERE n.nspname = current_schema() AND l.lanname = 'sql'
		AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		t.Errorf("function %s is LANGUAGE sql: its plan is made again in every transaction; write it in PL/pgSQL", name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSequenceNames checks that the sequence of every declared resource's id
// is the one postgres.SequenceName names: a create takes its id from that
// name, resolved when the INSERT is planned, not looked up in the catalog on
// each execution (pg_get_serial_sequence).
func TestSequenceNames(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	for _, res := range resourceapi.Declared() {
		var got, want string
		if err := db.QueryRow("SELECT pg_get_serial_sequence($1, 'id'), current_schema() || '.' || $2",
			res.Name, postgres.SequenceName(res.Name)).Scan(&got, &want); err != nil {
			t.Fatalf("%s: %v", res.Name, err)
		}
		if got != want {
			t.Errorf("%s: the sequence of id is %s; postgres.SequenceName says %s", res.Name, got, want)
		}
	}
}

// TestCountTriggersCallNoFunction: a counted table's trigger writes
// row_counts itself, without a call of row_counts_add (a query and a
// PL/pgSQL function's setup of their own, migration 00041), and the counts
// stay right.
func TestCountTriggersCallNoFunction(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
		t.Fatal(err)
	}
	calls := func() (n int) {
		t.Helper()
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(pg_stat_get_xact_function_calls('row_counts_add'::regproc), 0)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := func(resource string, deleted bool) (n int) {
		t.Helper()
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(n), 0) FROM row_counts WHERE resource = $1 AND deleted = $2", resource, deleted).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, users, deleted, posts := calls(), count("users", false), count("users", true), count("posts", false)
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO users (name, email, email_key, created_at, updated_at)
		VALUES ('Counted', 'counted@example.com', 'counted@example.com', now(), now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"INSERT INTO posts (title, content, author_id, created_at, updated_at) VALUES ('t', 'c', $1, now(), now())",
		"UPDATE users SET deleted = true WHERE id = $1",
	} {
		if _, err := tx.ExecContext(ctx, stmt, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls() - before; n != 0 {
		t.Errorf("row_counts_add ran %d times for an insert, a soft delete and a post, want 0", n)
	}
	if got, want := count("users", false), users; got != want {
		t.Errorf("active users counted %d, want %d", got, want)
	}
	if got, want := count("users", true), deleted+1; got != want {
		t.Errorf("deleted users counted %d, want %d", got, want)
	}
	if got, want := count("posts", false), posts+1; got != want {
		t.Errorf("posts counted %d, want %d", got, want)
	}
}

// TestOneRowTriggerPerWrite: an insert into a searchable table runs one
// row trigger, postgres.RowsFunction, which counts the record and copies
// it into the search table, not a count trigger and a search trigger, two
// PL/pgSQL calls (migration 00044); TestSearchTablesFollowWrites and
// TestCountTriggersCallNoFunction check what they write.
func TestOneRowTriggerPerWrite(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	ctx := context.Background()
	for _, res := range resourceapi.Declared() {
		if len(sqlstore.SearchColumns(res)) == 0 {
			continue
		}
		var names []string
		rows, err := db.QueryContext(ctx, `SELECT tgfoid::regproc::text FROM pg_trigger
			WHERE tgrelid = $1::regclass AND NOT tgisinternal AND tgtype & 1 = 1 AND tgtype & 2 = 0 AND tgtype & 4 = 4 ORDER BY 1`, res.Name)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if want := []string{postgres.RowsFunction(res.Name)}; !slices.Equal(names, want) {
			t.Errorf("%s: an insert runs the row triggers %v, want %v", res.Name, names, want)
		}
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO users (name, email, email_key, created_at, updated_at)
		VALUES ('One Trigger', 'one@example.com', 'one@example.com', now(), now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO posts (title, content, author_id, created_at, updated_at) VALUES ('t', 'c', $1, now(), now())", id); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	rows, err := tx.QueryContext(ctx, "SELECT funcname, calls FROM pg_stat_xact_user_functions WHERE funcname <> 'solo_guard'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		got[name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{postgres.RowsFunction("users"): 1, postgres.RowsFunction("posts"): 1}; !maps.Equal(got, want) {
		t.Errorf("an insert of a user and one of a post called %v, want %v", got, want)
	}
}
