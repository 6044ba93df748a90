package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// TestSearchMatchesILIKE checks that a search finds what ILIKE on the
// searchable columns found before it matched their lower-cased copies with
// LIKE (migration 33), in the same order, with the same total, through
// both of its plans (the walk of the sort's index for a q that matches
// often, the sort of the matches for a rare one, and the sort for
// status=all), by page number and by cursor, with the hidden records left
// out (as for a caller who is not an admin) and not: non-ASCII letters in
// either case, and LIKE's metacharacters, which q matches literally.
func TestSearchMatchesILIKE(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 2)
	odd := []string{"ÉCOLE Straße", "école", "ǅemal", "ΣΊΣΥΦΟΣ", "İstanbul", "ISTANBUL", "100% sure", "a_b", `back\slash`, `50%_off\`, "ÆØÅ", "æøå"}
	// 1,600 users, every 8th an Abc in some case, every 10th with no age,
	// every 13th deleted, every 24th hidden (a service user), and the odd
	// names above among them.
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at, deleted, service)
		 SELECT CASE WHEN i <= 12 THEN ($1::text[])[i] ELSE 'User ' || lpad(i::text, 5, '0') END
		        || CASE WHEN i % 8 = 0 THEN (ARRAY[' Abc', ' ABC', ' aBc'])[i % 3 + 1] ELSE '' END,
		        'user' || i || CASE WHEN i % 16 = 0 THEN '@Abc.example' ELSE '@example.com' END, 'user' || i || '@example.com',
		        CASE WHEN i % 10 = 0 THEN NULL ELSE 18 + i % 70 END,
		        timestamptz '2026-01-01' + (i * 7919 % 1600) * interval '1 minute', now(), i % 13 = 0, i % 24 = 0
		 FROM generate_series(1, 1600) i`, odd); err != nil {
		t.Fatal(err)
	}
	// The walk needs the table's size in the planner's statistics.
	if _, err := admin.ExecContext(ctx, `VACUUM ANALYZE users`); err != nil {
		t.Fatal(err)
	}
	status := &resourceapi.Users.Filters[0]
	if status.Kind != resourceapi.FilterSoftDelete {
		t.Fatal("the users' first filter is not the soft-delete state")
	}
	// The filter the service adds for a caller who is not an admin.
	var visible *resourceapi.Filter
	for i, f := range resourceapi.Users.Filters {
		if f.Internal && f.Kind == resourceapi.FilterEqual && f.Field == resourceapi.Users.Hidden {
			visible = &resourceapi.Users.Filters[i]
		}
	}
	if visible == nil {
		t.Fatal("the users have no internal filter of their hidden records")
	}
	type sort struct {
		field string
		desc  bool
	}
	sorts := []sort{{"name", true}, {"name", false}, {"age", false}, {"age", true}, {"created_at", true}, {"id", false}}
	for _, q := range []string{"abc", "ABC", "user", "école", "ÉCOLE", "straße", "STRASSE", "σίσυφος", "ǆemal", "ǄEMAL",
		"i̇stanbul", "istanbul", "æøå", "ÆØÅ", "%", "_", `\`, "100%", "a_b", `k\s`, `%_off\`, "0%", "qzx", "1", "ab"} {
		for mode := range 4 {
			all, hidden := mode%2 == 1, mode >= 2
			for _, so := range sorts {
				name := fmt.Sprintf("q=%s sort=%s desc=%v all=%v hidden=%v", q, so.field, so.desc, all, hidden)
				lq := resourceapi.ListQuery{Limit: 7, Sort: so.field, Desc: so.desc, Search: q}
				if !all {
					lq.Filters = append(lq.Filters, resourceapi.FilterValue{Filter: status, Value: resourceapi.StatusActive})
				}
				if !hidden {
					lq.Filters = append(lq.Filters, resourceapi.FilterValue{Filter: visible, Value: false})
				}
				want := mustILIKE(t, admin, q, so.field, so.desc, all, hidden)
				// Page by page number, then by cursor from page 2.
				var got []int64
				total := -2
				var cursor *resourceapi.Cursor
				for page := range 4 {
					p := lq
					if page < 2 {
						p.Offset = page * p.Limit
					} else {
						p.Cursor = cursor
					}
					res, err := db.List(ctx, resourceapi.Users, p)
					if err != nil {
						t.Fatalf("%s: page %d: %v", name, page+1, err)
					}
					if len(res.Records) == 0 {
						break
					}
					if total != -2 && res.Total != total {
						t.Errorf("%s: page %d total %d, page 1's %d", name, page+1, res.Total, total)
					}
					total = res.Total
					for _, r := range res.Records {
						got = append(got, r.ID())
					}
					c := p.CursorOf(res.Records[len(res.Records)-1], false)
					cursor = &c
				}
				if len(want) > 0 && total != len(want) {
					t.Errorf("%s: total %d, ILIKE matches %d", name, total, len(want))
				}
				if n := min(len(want), 4*lq.Limit); !slices.Equal(got, want[:n]) {
					t.Errorf("%s: ids %v, ILIKE's %v", name, got, want[:n])
				}
			}
		}
	}
}

// mustILIKE returns the ids of the users whose name or email contains q
// case-insensitively, with ILIKE on the columns themselves (as the store
// searched before migration 33), in the list's order: of every status when
// all, the hidden ones too when hidden.
func mustILIKE(t *testing.T, admin *sql.DB, q, sort string, desc, all, hidden bool) []int64 {
	t.Helper()
	dir, nulls := " ASC", " NULLS FIRST"
	if desc {
		dir, nulls = " DESC", " NULLS LAST"
	}
	order := sort + dir
	if sort == "age" {
		order += nulls
	}
	if sort != "id" {
		order += ", id" + dir
	}
	where := "(name ILIKE $1 OR email ILIKE $1)"
	if !all {
		where = "deleted = false AND " + where
	}
	if !hidden {
		where = "service = false AND " + where
	}
	return queryIDs(t, admin, "SELECT id FROM users WHERE "+where+" ORDER BY "+order, sqlstore.LikePattern(q))
}

// TestSearchWalksSortIndex checks, through PostgreSQL's statistics of the
// indexes of users, how a search of 5,000 users finds its page: q=abc (625
// matches, one in eight) walks the sort's index users_deleted_name and
// stops when its page is full, where the search sorted its 625 matches
// before; a q with 10 matches sorts them and never walks the index (which
// would read it all); both count through the trigram index users_search_trgm.
func TestSearchWalksSortIndex(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, now(), now()
		 FROM generate_series(1, 5000) i`,
		`VACUUM ANALYZE users, users_search`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	status := resourceapi.FilterValue{Filter: &resourceapi.Users.Filters[0], Value: resourceapi.StatusActive}
	for _, c := range []struct {
		q     string
		total int
		walks bool
	}{
		{"abc", 625, true},
		{"User 0001", 10, false},
	} {
		scans := mustIndexScans(t, admin)
		reads := mustTableReads(t, admin)
		page, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: c.q,
			Filters: []resourceapi.FilterValue{status}})
		if err != nil || page.Total != c.total || len(page.Records) != min(20, c.total) {
			t.Fatalf("q=%s: %d records of %d, %v; want %d of %d", c.q, len(page.Records), page.Total, err, min(20, c.total), c.total)
		}
		// The store's session reports its statistics when it goes idle,
		// within seconds: wait for the count's use of users_search_trgm.
		var after map[string]int64
		for deadline := time.Now().Add(30 * time.Second); ; {
			after = mustIndexScans(t, admin)
			if after["users_search_trgm"] > scans["users_search_trgm"] || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if after["users_search_trgm"] == scans["users_search_trgm"] {
			t.Errorf("q=%s: the search did not use the trigram index users_search_trgm", c.q)
		}
		if walked := after["users_deleted_name"] > scans["users_deleted_name"]; walked != c.walks {
			t.Errorf("q=%s: walked users_deleted_name %v, want %v", c.q, walked, c.walks)
		}
		// The count's matches (a bitmap heap scan of users_search), then the
		// walk's rows (about 161 for q=abc, each looked up in users_search)
		// or the matches again, and the page.
		if got, limit := mustTableReads(t, admin)-reads, int64(2*c.total+200); got > limit {
			t.Errorf("q=%s: read %d rows of users, want at most %d", c.q, got, limit)
		}
	}
}

// mustIndexScans returns the scans of each index of users and of its search
// table so far.
func mustIndexScans(t *testing.T, admin *sql.DB) map[string]int64 {
	t.Helper()
	mustFlushStats(t, admin)
	rows, err := admin.QueryContext(context.Background(), `SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname IN ('users', 'users_search')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSearchTablesFollowWrites checks what keeps each search table (migration
// 38) current, on writes made in SQL as much as by the store: the triggers
// of every searchable resource, and for users the copies after an insert,
// an update of a searched field and of the soft-delete state, and a
// delete; an update of a field that is not searched (age) leaves the
// search table's row as it was, so the trigram index gets no entry.
func TestSearchTablesFollowWrites(t *testing.T) {
	ctx := context.Background()
	_, admin := mustSeeded(t, 1)
	for _, res := range resourceapi.Declared() {
		mustSearchTriggers(t, admin, res)
	}

	var id int64
	if err := admin.QueryRowContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		VALUES ('Ada LOVELACE', 'Ada@Example.COM', 'ada@example.com', 36, now(), now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	type row struct {
		deleted     bool
		name, email string
		ctid, xmin  string
	}
	read := func() (r row, ok bool) {
		t.Helper()
		err := admin.QueryRowContext(ctx, `SELECT deleted, name_lower, email_lower, ctid::text, xmin::text FROM users_search WHERE id = $1`, id).
			Scan(&r.deleted, &r.name, &r.email, &r.ctid, &r.xmin)
		if err == sql.ErrNoRows {
			return r, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return r, true
	}
	exec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q, id); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	inserted, ok := read()
	if !ok || inserted.deleted || inserted.name != "ada lovelace" || inserted.email != "ada@example.com" {
		t.Fatalf("after the insert: %+v (found %v), want ada lovelace, ada@example.com, not deleted", inserted, ok)
	}
	exec(`UPDATE users SET age = 37, updated_at = now() WHERE id = $1`)
	if got, _ := read(); got != inserted {
		t.Errorf("an update of age rewrote the search row: %+v, was %+v", got, inserted)
	}
	exec(`UPDATE users SET name = 'Ada King', updated_at = now() WHERE id = $1`)
	if got, _ := read(); got.name != "ada king" || got.email != "ada@example.com" || got.deleted {
		t.Errorf("after an update of the name: %+v, want ada king", got)
	}
	exec(`UPDATE users SET deleted = true WHERE id = $1`)
	if got, _ := read(); !got.deleted || got.name != "ada king" {
		t.Errorf("after a soft delete: %+v, want deleted", got)
	}
	exec(`DELETE FROM users WHERE id = $1`)
	if got, ok := read(); ok {
		t.Errorf("after the delete: %+v, want no row", got)
	}

	// A truncate takes every copy along (the search tables have no
	// foreign key that would refuse it or cascade), so that a record
	// written afterwards has its own copy and no stale one matches q.
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ('Before Truncate', 'b@t.example', 'b@t.example', now(), now())`,
		`TRUNCATE users CASCADE`,
		`INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ('After Truncate', 'a@t.example', 'a@t.example', now(), now())`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var copies, orphans int
	if err := admin.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT FROM users u WHERE u.id = s.id)) FROM users_search s`).
		Scan(&copies, &orphans); err != nil {
		t.Fatal(err)
	}
	if copies != 1 || orphans != 0 {
		t.Errorf("after a truncate and an insert: %d search rows, %d without their user; want 1, 0", copies, orphans)
	}
}

// mustSearchTriggers checks the triggers that write res's search table and
// count its records (migration 44): one function, postgres.RowsFunction,
// run by one trigger after each insert or delete, one after a truncate,
// and one after an update of exactly the searchable columns and the
// soft-delete column; and none of the earlier form (a search trigger and
// a count trigger apart, each a PL/pgSQL call of its own). A resource
// without search keeps its count trigger.
func mustSearchTriggers(t *testing.T, admin *sql.DB, res *resourceapi.Resource) {
	t.Helper()
	cols := sqlstore.SearchColumns(res)
	side, fn := postgres.SearchTable(res.Name), postgres.RowsFunction(res.Name)
	got := map[string]string{}
	rows, err := admin.QueryContext(context.Background(), `SELECT t.tgname, t.tgtype, p.proname,
			array_to_string(ARRAY(SELECT a.attname FROM unnest(t.tgattr) k JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = k ORDER BY 1), ',')
		FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE t.tgrelid = $1::regclass AND (t.tgname LIKE $2 OR t.tgname LIKE $3 OR t.tgname LIKE $4)`,
		res.Name, side+"\\_%", fn+"%", res.Name+"\\_count%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, fn, attrs string
		var typ int
		if err := rows.Scan(&name, &typ, &fn, &attrs); err != nil {
			t.Fatal(err)
		}
		got[name] = fmt.Sprintf("type %d, %s(), of (%s)", typ, fn, attrs)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cols) == 0 {
		// The count triggers of a table without search (00005, 00041).
		for name := range got {
			if !strings.HasPrefix(name, res.Name+"_count") {
				t.Errorf("%s has no search, but trigger %s: %s", res.Name, name, got[name])
			}
		}
		return
	}
	watched := slices.Clone(cols)
	if res.SoftDelete != "" {
		watched = append(watched, res.SoftDelete)
	}
	slices.Sort(watched)
	// tgtype: 1 for each row, 4 insert, 8 delete, 16 update, 32
	// truncate (after: no 2).
	want := map[string]string{
		fn:               fmt.Sprintf("type 13, %s(), of ()", fn),
		fn + "_truncate": fmt.Sprintf("type 32, %s(), of ()", fn),
		// The count's truncate (00051).
		res.Name + "_counts_truncate": "type 32, row_counts_truncated(), of ()",
		fn + "_update":                fmt.Sprintf("type 17, %s(), of (%s)", fn, strings.Join(watched, ",")),
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s: search and count triggers %v, want %v", res.Name, got, want)
	}
}

// TestSearchTablesMigration takes a database with records back to before
// migration 38 (39's Down, the foreign keys again, then 38's: the copies as generated columns of each table,
// the trigram indexes on them), writes more records there, and migrates it
// again: every record, active or deleted, written before or after, is
// found by q in its state, and the copies as the Down made them were the
// lower-cased columns.
func TestSearchTablesMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	grace := mustCreateIn(t, db, resourceapi.Users, resourceapi.Record{"name": "Grace HOPPER", "email": "grace@navy.example"})
	product := mustCreateIn(t, db, resourceapi.Products, resourceapi.Record{"name": "Harvard Mark I", "price_cents": int64(100)})
	db.Close()

	// Back to 37: the Downs of 38 and of every later migration, the latest
	// first.
	back := downsFrom(t, 38)
	admin := mustAdmin(t, url)
	for _, q := range append(back,
		`INSERT INTO users (name, email, email_key, created_at, updated_at, deleted)
		 VALUES ('Hopper Two', 'two@navy.example', 'two@navy.example', now(), now(), false),
		        ('Gone Hopper', 'gone@navy.example', 'gone@navy.example', now(), now(), true)`,
		`UPDATE products SET name = 'Harvard MARK II'`,
	) {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var copied string
	if err := admin.QueryRowContext(ctx, `SELECT name_lower FROM users WHERE id = $1`, grace.ID()).Scan(&copied); err != nil || copied != "grace hopper" {
		t.Fatalf("after the Down, users.name_lower = %q, %v; want grace hopper", copied, err)
	}

	db, err = postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	status := &resourceapi.Users.Filters[0]
	for _, c := range []struct {
		res    *resourceapi.Resource
		q      string
		status string
		want   int
	}{
		{resourceapi.Users, "hopper", resourceapi.StatusActive, 2},
		{resourceapi.Users, "HOPPER", resourceapi.StatusDeleted, 1},
		{resourceapi.Users, "navy.EXAMPLE", resourceapi.StatusAll, 3},
		{resourceapi.Products, "mark ii", "", 1},
		{resourceapi.Products, "mark i", "", 1},
	} {
		lq := resourceapi.ListQuery{Limit: 10, Sort: "id", Search: c.q}
		if c.status != "" && c.status != resourceapi.StatusAll { // all: no filter
			lq.Filters = []resourceapi.FilterValue{{Filter: status, Value: c.status}}
		}
		page, err := db.List(ctx, c.res, lq)
		if err != nil || page.Total != c.want || len(page.Records) != c.want {
			t.Errorf("%s q=%s status=%s: %d records of %d, %v; want %d", c.res.Name, c.q, c.status, len(page.Records), page.Total, err, c.want)
		}
	}
	page, err := db.List(ctx, resourceapi.Products, resourceapi.ListQuery{Limit: 10, Sort: "id", Search: "MARK II"})
	if err != nil || len(page.Records) != 1 || page.Records[0].ID() != product.ID() {
		t.Errorf("products q=MARK II: %v, %v; want product %d", page.Records, err, product.ID())
	}
}

// downsFrom returns the statements that take a database migrated to the
// latest version back to from-1: the Down of from and of every later
// migration, the latest first, each followed by the removal of its row in
// goose_db_version.
func downsFrom(t *testing.T, from int) []string {
	t.Helper()
	entries, err := fs.ReadDir(postgres.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var back []string
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil || !strings.HasSuffix(name, ".sql") || v < from {
			continue
		}
		b, err := fs.ReadFile(postgres.Migrations(), name)
		if err != nil {
			t.Fatal(err)
		}
		_, down, ok := strings.Cut(string(b), "-- +goose Down\n")
		if !ok {
			t.Fatalf("migration %d has no Down", v)
		}
		back = append(back, down, fmt.Sprintf("DELETE FROM goose_db_version WHERE version_id = %d", v))
	}
	return back
}
