package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// TestSearchMatchesILIKE checks that a search finds what ILIKE on the
// searchable columns found before it matched their lower-cased copies with
// LIKE (migration 33), in the same order, with the same total, through
// both of its plans (the walk of the sort's index for a q that matches
// often, the sort of the matches for a rare one, and the sort for
// status=all), by page number and by cursor: non-ASCII letters in either
// case, and LIKE's metacharacters, which q matches literally.
func TestSearchMatchesILIKE(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 2)
	odd := []string{"ÉCOLE Straße", "école", "ǅemal", "ΣΊΣΥΦΟΣ", "İstanbul", "ISTANBUL", "100% sure", "a_b", `back\slash`, `50%_off\`, "ÆØÅ", "æøå"}
	// 1,600 users, every 8th an Abc in some case, every 10th with no age,
	// every 13th deleted, and the odd names above among them.
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at, deleted)
		 SELECT CASE WHEN i <= 12 THEN ($1::text[])[i] ELSE 'User ' || lpad(i::text, 5, '0') END
		        || CASE WHEN i % 8 = 0 THEN (ARRAY[' Abc', ' ABC', ' aBc'])[i % 3 + 1] ELSE '' END,
		        'user' || i || CASE WHEN i % 16 = 0 THEN '@Abc.example' ELSE '@example.com' END, 'user' || i || '@example.com',
		        CASE WHEN i % 10 = 0 THEN NULL ELSE 18 + i % 70 END,
		        timestamptz '2026-01-01' + (i * 7919 % 1600) * interval '1 minute', now(), i % 13 = 0
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
	type sort struct {
		field string
		desc  bool
	}
	sorts := []sort{{"name", true}, {"name", false}, {"age", false}, {"age", true}, {"created_at", true}, {"id", false}}
	for _, q := range []string{"abc", "ABC", "user", "école", "ÉCOLE", "straße", "STRASSE", "σίσυφος", "ǆemal", "ǄEMAL",
		"i̇stanbul", "istanbul", "æøå", "ÆØÅ", "%", "_", `\`, "100%", "a_b", `k\s`, `%_off\`, "0%", "qzx", "1", "ab"} {
		for _, all := range []bool{false, true} {
			for _, so := range sorts {
				name := fmt.Sprintf("q=%s sort=%s desc=%v all=%v", q, so.field, so.desc, all)
				lq := resourceapi.ListQuery{Limit: 7, Sort: so.field, Desc: so.desc, Search: q}
				if !all {
					lq.Filters = []resourceapi.FilterValue{{Filter: status, Value: resourceapi.StatusActive}}
				}
				want := mustILIKE(t, admin, q, so.field, so.desc, all)
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
// searched before migration 33), in the list's order.
func mustILIKE(t *testing.T, admin *sql.DB, q, sort string, desc, all bool) []int64 {
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
	return queryIDs(t, admin, "SELECT id FROM users WHERE "+where+" ORDER BY "+order, sqlstore.LikePattern(q))
}

// TestSearchWalksSortIndex checks, through PostgreSQL's statistics of the
// indexes of users, how a search of 5,000 users finds its page: q=abc (625
// matches, one in eight) walks the sort's index users_deleted_name and
// stops when its page is full, where the search sorted its 625 matches
// before; a q with 10 matches sorts them and never walks the index (which
// would read it all); both count through the trigram index users_search.
func TestSearchWalksSortIndex(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0') || CASE WHEN i % 8 = 0 THEN ' Abc' ELSE '' END,
		        'user' || lpad(i::text, 5, '0') || '@example.com', 'user' || lpad(i::text, 5, '0') || '@example.com',
		        18 + i % 70, now(), now()
		 FROM generate_series(1, 5000) i`,
		`VACUUM ANALYZE users`,
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
		// within seconds: wait for the count's use of users_search.
		var after map[string]int64
		for deadline := time.Now().Add(30 * time.Second); ; {
			after = mustIndexScans(t, admin)
			if after["users_search"] > scans["users_search"] || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if after["users_search"] == scans["users_search"] {
			t.Errorf("q=%s: the search did not use the trigram index users_search", c.q)
		}
		if walked := after["users_deleted_name"] > scans["users_deleted_name"]; walked != c.walks {
			t.Errorf("q=%s: walked users_deleted_name %v, want %v", c.q, walked, c.walks)
		}
		// The count's matches (a bitmap heap scan), then the walk's rows
		// (about 161 for q=abc) or the matches again, and the page.
		if got, limit := mustTableReads(t, admin)-reads, int64(2*c.total+200); got > limit {
			t.Errorf("q=%s: read %d rows of users, want at most %d", c.q, got, limit)
		}
	}
}

// mustIndexScans returns the scans of each index of users so far.
func mustIndexScans(t *testing.T, admin *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := admin.QueryContext(context.Background(), `SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname = 'users'`)
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
