package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestListReadsOnlyItsPage checks, through PostgreSQL's own statistics of
// the users table, what a search and a deep page read on 5,000 users: the
// search finds its matches through the trigram index users_search_trgm (before,
// the planner walked the name index and tested every row against the
// pattern, and the index was never used), and the last page walks its
// offset in an index alone, reading only the rows of its page (before,
// every skipped row was read from the table).
func TestListReadsOnlyItsPage(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	const n = 5000
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
	before := mustTableReads(t, admin)

	page, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Offset: n - 20, Sort: "id"})
	if err != nil || len(page.Records) != 20 || page.Records[19].ID() != n {
		t.Fatalf("last page = %d records, %v; want 20 ending with user %d", len(page.Records), err, n)
	}
	page, err = db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: "abc"})
	if err != nil || page.Total != n/8 || len(page.Records) != 20 {
		t.Fatalf("search = %d records of %d, %v; want 20 of %d", len(page.Records), page.Total, err, n/8)
	}

	// The store's session reports its statistics when it goes idle, within
	// seconds: wait for the search's use of the index to show.
	var searches int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := admin.QueryRowContext(ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'users_search_trgm'`).Scan(&searches); err != nil {
			t.Fatal(err)
		}
		if searches > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if searches == 0 {
		t.Errorf("the search did not use the trigram index users_search_trgm")
	}
	after := mustTableReads(t, admin)
	// The search (of every status: no index gives its order, so it sorts
	// its matches) counts its 625 matches in users_search (a bitmap heap
	// scan), reads them again with their names (users_search, then users
	// by id) and reads its page; the last page reads its 20 rows. Reading
	// the skipped rows would be 4,980 more.
	if got := after - before; got > 2000 {
		t.Errorf("the last page and the search read %d rows of users and users_search, want at most 2,000 (their matches and pages)", got)
	}
}

// mustTableReads returns the rows read from the users table and its
// search table so far, sequentially or through an index (index-only scans
// read none).
func mustTableReads(t *testing.T, admin *sql.DB) int64 {
	t.Helper()
	mustFlushStats(t, admin)
	var n int64
	if err := admin.QueryRowContext(context.Background(), `SELECT sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))
		FROM pg_stat_user_tables WHERE relname IN ('users', 'users_search')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mustFlushStats makes the admin's session report its own statistics (the
// rows of users its seeding statements read: the foreign key of each row
// of users_search looks its user up) before the next statement reads
// them: a session reports them when it goes idle, at most once a second.
func mustFlushStats(t *testing.T, admin *sql.DB) {
	t.Helper()
	if _, err := admin.ExecContext(context.Background(), `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
}

// TestSearchAfterWrites checks that a search still finds its matches through
// the trigram index after thousands of writes that no vacuum followed:
// their entries waited in the index's pending list (4 MB by default), which
// every search read through and which made the planner price the index
// above a sequential scan that tested every row with ILIKE (migration 00027
// bounded it to 64 kB; 00049 lets it grow to 1 MB, and the store plans its
// searches without sequential scans: TestSearchFullPendingList).
func TestSearchAfterWrites(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	for _, q := range []string{
		`ALTER TABLE users SET (autovacuum_enabled = false)`,
		`ALTER TABLE users_search SET (autovacuum_enabled = false)`,
		`INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, now(), now()
		 FROM generate_series(1, 5000) i`,
		`VACUUM ANALYZE users, users_search`,
		// The writes after the vacuum, as a day of POSTs leaves them.
		`INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'Load ' || i, 'load-' || i || '@load.test', 'load-' || i || '@load.test', 30, now(), now()
		 FROM generate_series(1, 5000) i`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	before := mustTableReads(t, admin)
	page, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: "abc"})
	if err != nil || page.Total != 5000/8 || len(page.Records) != 20 {
		t.Fatalf("search = %d records of %d, %v; want 20 of %d", len(page.Records), page.Total, err, 5000/8)
	}
	var reads int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		// The store's session reports its statistics when it goes idle.
		if reads = mustTableReads(t, admin) - before; reads > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The 625 matches (a bitmap heap scan), then again with their names,
	// and the page (see TestListReadsOnlyItsPage), not the 10,000 rows.
	if reads > 2000 {
		t.Errorf("the search read %d rows of users and users_search, want at most 2,000 (its matches)", reads)
	}
}

// TestSearchFullPendingList checks that a search takes the trigram index
// when its plan is made with the index's pending list full: 1 MB (migration
// 00049, on every search table), the entries of about 1,900 users written
// since the last vacuum, which PostgreSQL prices as 128 random reads per
// bitmap scan of the index, two per search (name, e-mail). Over 10,000
// users the planner then priced a sequential scan of users_search below
// the index and read its every row, in a generic plan (no filter but the
// status) and in a custom one (a role), until the store planned its
// searches without sequential scans (searchPlan in pool.go).
func TestSearchFullPendingList(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	// The list's size, on every search table of a declared resource.
	for _, res := range resourceapi.Declared() {
		if len(res.SearchableFields()) == 0 {
			continue
		}
		var options string
		if err := admin.QueryRowContext(ctx, `SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = $1::regclass`,
			postgres.SearchTable(res.Name)+"_trgm").Scan(&options); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(options, ","), "gin_pending_list_limit=1024") {
			t.Errorf("%s_trgm: options %v, want gin_pending_list_limit=1024", postgres.SearchTable(res.Name), options)
		}
	}
	for _, q := range []string{
		`ALTER TABLE users SET (autovacuum_enabled = false)`,
		`ALTER TABLE users_search SET (autovacuum_enabled = false)`,
		`INSERT INTO users (name, email, email_key, age, roles, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, '["user"]', now(), now()
		 FROM generate_series(1, 10000) i`,
		`VACUUM ANALYZE users, users_search`,
		// 1,800 POSTs since: about 120 of the list's 128 pages, which one
		// statement fills without moving them into the index.
		`INSERT INTO users (name, email, email_key, age, roles, created_at, updated_at)
		 SELECT 'Load ' || i, 'load-' || i || '@load.test', 'load-' || i || '@load.test', 30, '["user"]', now(), now()
		 FROM generate_series(1, 1800) i`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var role, status *resourceapi.Filter
	for i, f := range resourceapi.Users.Filters {
		switch f.Param {
		case "role":
			role = &resourceapi.Users.Filters[i]
		case "status":
			status = &resourceapi.Users.Filters[i]
		}
	}
	for _, c := range []struct {
		q      string
		active bool   // status=active, as a request has by default: the walk
		role   string // a filter whose value chooses the plan: not a generic one
	}{
		{"abc", false, ""},
		{"abc", true, ""},
		{"load-1", false, ""},
		{"load-17", false, "user"},
	} {
		var total int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE name ILIKE $1 OR email ILIKE $1`, "%"+c.q+"%").Scan(&total); err != nil {
			t.Fatal(err)
		}
		lq := resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: c.q}
		if c.active {
			lq.Filters = append(lq.Filters, resourceapi.FilterValue{Filter: status, Value: resourceapi.StatusActive})
		}
		if c.role != "" {
			lq.Filters = append(lq.Filters, resourceapi.FilterValue{Filter: role, Value: c.role})
		}
		before := mustSearchTableReads(t, admin)
		page, err := db.List(ctx, resourceapi.Users, lq)
		if err != nil || page.Total != total || len(page.Records) != 20 {
			t.Fatalf("q=%s role=%s: %d records of %d, %v; want 20 of %d", c.q, c.role, len(page.Records), page.Total, err, total)
		}
		var reads int64
		for deadline := time.Now().Add(30 * time.Second); ; {
			// The store's session reports its statistics when it goes idle.
			if reads = mustSearchTableReads(t, admin) - before; reads > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		// The matches, counted then sorted (no status filter: no index
		// gives the order) or walked: not the 11,800 rows of a sequential
		// scan, once for the count and once for the sort.
		if limit := int64(2*total + 200); reads > limit {
			t.Errorf("q=%s role=%s read %d rows of users_search, want at most %d (its matches)", c.q, c.role, reads, limit)
		}
	}
}

// TestSearchSettingsNoJIT checks that a search planned without sequential
// scans is not compiled: the price of a scan PostgreSQL cannot avoid (10^10
// added to the cost of identity_version's, a table of one row and no index,
// which a search reads when the caller's account is checked) passed every
// JIT threshold, and each run compiled, optimized and inlined the statement
// (930 ms where it took 2; the first benchmark without the record cache
// served 12 searches in 5 seconds).
func TestSearchSettingsNoJIT(t *testing.T) {
	ctx := context.Background()
	_, admin := mustSeeded(t, 1)
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, setting := range postgres.SearchSettings {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, setting); err != nil {
			t.Fatal(err)
		}
		var plan []string
		rows, err := tx.QueryContext(ctx, `EXPLAIN (ANALYZE, TIMING off) SELECT id, (SELECT version FROM identity_version) FROM users
			WHERE id = ANY(ARRAY(SELECT id FROM users_search WHERE name_lower LIKE '%abc%'))`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		if text := strings.Join(plan, "\n"); strings.Contains(text, "JIT:") {
			t.Errorf("after %s, the search was compiled:\n%s", setting, text)
		}
	}
}

// mustSearchTableReads returns the rows of users_search read so far, by
// any scan.
func mustSearchTableReads(t *testing.T, admin *sql.DB) int64 {
	t.Helper()
	mustFlushStats(t, admin)
	var n int64
	if err := admin.QueryRowContext(context.Background(), `SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)
		FROM pg_stat_user_tables WHERE relname = 'users_search'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListEachOneStatement: a batched list (the posts of a GraphQL page of
// users) is one statement text whatever its values and their number, so
// that each connection prepares it once: with each value bound on its own,
// every number of values was another statement to parse, plan and keep in
// the connection's statement cache.
func TestListEachOneStatement(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var texts []string
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 1, OnStatement: func(q string) {
		mu.Lock()
		defer mu.Unlock()
		texts = append(texts, q)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var authors []int64
	for i := range 3 {
		u, err := db.Create(ctx, resourceapi.Users, resourceapi.Record{"name": fmt.Sprintf("Author %d", i),
			"email": fmt.Sprintf("author%d@example.com", i), "email_key": fmt.Sprintf("author%d@example.com", i)})
		if err != nil {
			t.Fatal(err)
		}
		authors = append(authors, u.ID())
		for j := range i + 1 {
			if _, err := db.Create(ctx, resourceapi.Posts, resourceapi.Record{"author_id": u.ID(), "title": fmt.Sprintf("Post %d", j), "content": "C"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	q, err := resourceapi.NewListQuery(resourceapi.Posts, resourceapi.ListQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, values := range [][]int64{authors[:1], authors, authors[1:]} {
		mu.Lock()
		texts = nil
		mu.Unlock()
		recs, err := db.ListEach(ctx, resourceapi.Posts, "author_id", values, q)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range values {
			n += min(2, int(values[i]-authors[0])+1)
		}
		if len(recs) != n {
			t.Fatalf("ListEach of %v = %d posts, want %d", values, len(recs), n)
		}
		mu.Lock()
		got = append(got, texts...)
		mu.Unlock()
	}
	if len(got) != 3 || got[0] != got[1] || got[1] != got[2] {
		t.Fatalf("ListEach of 1, 3 and 2 values ran %d statements, of texts:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// TestListsUseGenericPlans checks that pages and searches run their
// prepared statement's generic plan, made once, where PostgreSQL's default
// (plan_cache_mode = auto) made a plan for the values of every run: it
// priced the generic plan of a LIMIT or an ILIKE pattern it could not see
// above the custom ones, and planning cost more than running (about 100 µs
// of 200 for page 3, four fifths of a search that matches nothing). A
// filter whose value can decide the plan (a role) keeps custom plans.
func TestListsUseGenericPlans(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, now(), now()
		 FROM generate_series(1, 500) i`); err != nil {
		t.Fatal(err)
	}
	var role *resourceapi.Filter
	for i, f := range resourceapi.Users.Filters {
		if f.Param == "role" {
			role = &resourceapi.Users.Filters[i]
		}
	}
	for _, c := range []struct {
		name, like string
		lq         resourceapi.ListQuery
		generic    bool
	}{
		{"page 3", "% OFFSET %", resourceapi.ListQuery{Limit: 20, Offset: 40, Sort: "id"}, true},
		{"a deep page", "% OFFSET %", resourceapi.ListQuery{Limit: 20, Offset: 300, Sort: "id"}, true},
		{"a search", "%name_lower LIKE%", resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: "abc"}, true},
		{"a search matching nothing", "%name_lower LIKE%", resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: "qzx"}, true},
		{"a role", "%@>%", resourceapi.ListQuery{Limit: 20, Sort: "id", Filters: []resourceapi.FilterValue{{Filter: role, Value: "admin"}}}, false},
	} {
		c0, g0, err := db.PlansOf(ctx, c.like)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := db.List(ctx, resourceapi.Users, c.lq); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		c1, g1, err := db.PlansOf(ctx, c.like)
		if err != nil {
			t.Fatal(err)
		}
		custom, generic := c1-c0, g1-g0
		if c.generic && (custom != 0 || generic == 0) {
			t.Errorf("%s: %d custom plans and %d generic in 3 runs, want only generic ones", c.name, custom, generic)
		}
		if !c.generic && custom != 3 {
			t.Errorf("%s: %d custom plans and %d generic in 3 runs, want 3 custom", c.name, custom, generic)
		}
	}
}

// TestGetAllocations: reading a record decodes its columns from the row's
// bytes straight into their Go types (scanFields). Through pgx's own scan
// each column was planned, decoded into a value of its own and converted
// again by the field's sql.Scanner: a user's Get took 68 allocations in
// the store; now 35.
func TestGetAllocations(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.Create(ctx, resourceapi.Users, resourceapi.Record{"name": "Ann", "email": "ann@example.com",
		"email_key": "ann@example.com", "age": int64(30), "roles": []string{resourceapi.RoleUser}})
	if err != nil {
		t.Fatal(err)
	}
	var got resourceapi.Record
	allocs := testing.AllocsPerRun(50, func() {
		if got, err = db.Get(ctx, resourceapi.Users, u.ID()); err != nil {
			t.Fatal(err)
		}
	})
	for _, f := range resourceapi.Users.Fields {
		if v, ok := u[f.Name]; ok && fmt.Sprint(got[f.Name]) != fmt.Sprint(v) {
			t.Errorf("%s = %#v, want %#v", f.Name, got[f.Name], v)
		}
	}
	t.Logf("%.0f allocations per Get", allocs)
	if allocs > 40 {
		t.Errorf("a Get took %.0f allocations, want at most 40", allocs)
	}
}

// TestCreateAllocations: the row a create's INSERT ... RETURNING answers
// (a write's first statement, sent with its BEGIN) is decoded as every
// other row is (scanFields), and its placeholders are made once: a user's
// Create took 209 allocations (the record and e-mail this test makes
// included), 154 after.
func TestCreateAllocations(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage counters allocate")
	}
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops a quarter of what is put back, which changes the counts; .ci/run runs this test without it")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	create := func() resourceapi.Record {
		n++
		email := fmt.Sprintf("ann%d@example.com", n)
		u, err := db.Create(ctx, resourceapi.Users, resourceapi.Record{"name": "Ann", "email": email,
			"email_key": email, "age": int64(30), "roles": []string{resourceapi.RoleUser}})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := create()
	if u.ID() == 0 || u["name"] != "Ann" || u["age"] != int64(30) || fmt.Sprint(u["roles"]) != "[user]" {
		t.Fatalf("created %#v", u)
	}
	allocs := testing.AllocsPerRun(50, func() { create() })
	t.Logf("%.0f allocations per Create", allocs)
	if allocs > 170 {
		t.Errorf("a Create took %.0f allocations, want at most 170", allocs)
	}
}

// TestSearchWithoutTrigram: a q in which pg_trgm finds no trigram (one or
// two characters, or characters apart) is matched without the trigram
// index, whose search for such a pattern reads every entry it holds
// (seconds on a large table), while a q with a trigram takes it; both find
// what a substring test of the lower-cased name or email finds. The index's
// scans are counted from PostgreSQL's statistics, which a session reports
// when it goes idle (at once, or within 10 s when it reported less than a
// second before): what searches without a trigram and one with add must be
// what the one with a trigram adds alone.
func TestSearchWithoutTrigram(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, admin := mustSeeded(t, 1, `INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, now(), now()
		 FROM generate_series(1, 2000) i`, `VACUUM ANALYZE users, users_search`)
	search := func(q string, total int) {
		t.Helper()
		page, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Sort: "name", Desc: true, Search: q})
		if err != nil || page.Total != total {
			t.Fatalf("q=%s: %d records of %d, %v; want a total of %d", q, len(page.Records), page.Total, err, total)
		}
	}
	scans := func() (n int64) {
		t.Helper()
		mustFlushStats(t, admin)
		if err := admin.QueryRowContext(ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'users_search_trgm'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// settled waits for the store's session to report what it did, then
	// for what it may report later, and returns the index's scans.
	settled := func(above int64) int64 {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); scans() <= above; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the trigram index's scans stayed at %d", above)
			}
		}
		time.Sleep(11 * time.Second)
		return scans()
	}
	search("abc", 2000/8)
	alone := settled(0)
	search("ab", 2000/8)  // " Abc"
	search("Ab", 2000/8)  // lower-cased as the copies are
	search("1@", 2000/10) // the emails of users 1, 11, 21...
	search("r 0", 2000)   // "user 00042": words of one character
	search("a.b.c", 0)
	search("example", 2000) // every user's email: another q, the same plan
	if with := settled(alone) - alone; with != alone {
		t.Errorf("searches without a trigram took the trigram index: %d scans with one search with a trigram, %d for it alone", with, alone)
	}
}
