package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// TestDeepPagesMatchOffset checks that every page by number from the deep
// pages on (offset 200 and more, where the store walks the sort's index
// from whichever end is nearer) holds the rows, the total and the "more"
// of LIMIT/OFFSET over the table itself: 6 sorts (a nullable one among
// them), status active, deleted and all, with and without the hidden
// records (service users) left out, the last page, a short last page and
// past the end.
func TestDeepPagesMatchOffset(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 2)
	// 700 users (and the administrator a database may hold): every 10th
	// with no age, every 13th deleted, every 17th a service user, names
	// that repeat so that ties fall to the id.
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at, deleted, service)
		 SELECT 'User ' || (i % 97), 'user' || i || '@example.com', 'user' || i || '@example.com',
		        CASE WHEN i % 10 = 0 THEN NULL ELSE 18 + i % 70 END,
		        timestamptz '2026-01-01' + (i * 7919 % 700) * interval '1 minute', now(), i % 13 = 0, i % 17 = 0
		 FROM generate_series(1, 700) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, `VACUUM ANALYZE users`); err != nil {
		t.Fatal(err)
	}
	var status, hidden *resourceapi.Filter
	for i := range resourceapi.Users.Filters {
		f := &resourceapi.Users.Filters[i]
		switch {
		case f.Kind == resourceapi.FilterSoftDelete:
			status = f
		case f.Kind == resourceapi.FilterEqual && f.Field == resourceapi.Users.Hidden:
			hidden = f
		}
	}
	if status == nil || hidden == nil {
		t.Fatal("no soft-delete or hidden filter on users")
	}
	type sort struct {
		field string
		desc  bool
	}
	sorts := []sort{{"id", false}, {"id", true}, {"name", true}, {"age", false}, {"age", true}, {"created_at", false}}
	for _, st := range []string{resourceapi.StatusActive, resourceapi.StatusDeleted, "all"} {
		for _, noHidden := range []bool{false, true} {
			for _, so := range sorts {
				var filters []resourceapi.FilterValue
				if st != "all" {
					filters = append(filters, resourceapi.FilterValue{Filter: status, Value: st})
				}
				if noHidden {
					filters = append(filters, resourceapi.FilterValue{Filter: hidden, Value: false})
				}
				want := mustOrdered(t, admin, so.field, so.desc, st, noHidden)
				for _, limit := range []int{7, 20} {
					for offset := 200; offset <= len(want)+limit; offset += limit {
						name := fmt.Sprintf("status=%s hidden-out=%v sort=%s desc=%v limit=%d offset=%d", st, noHidden, so.field, so.desc, limit, offset)
						lq := resourceapi.ListQuery{Limit: limit, Offset: offset, Sort: so.field, Desc: so.desc, Filters: filters}
						page, err := db.List(ctx, resourceapi.Users, lq)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						var got []int64
						for _, r := range page.Records {
							got = append(got, r.ID())
						}
						end := min(offset+limit, len(want))
						var exp []int64
						if offset < len(want) {
							exp = want[offset:end]
						}
						if !slices.Equal(got, exp) {
							t.Errorf("%s: ids %v, want %v", name, got, exp)
						}
						if page.Total != len(want) {
							t.Errorf("%s: total %d, want %d", name, page.Total, len(want))
						}
						if more := end < len(want); page.More != more {
							t.Errorf("%s: more %v, want %v", name, page.More, more)
						}
					}
				}
			}
		}
	}
}

// mustOrdered returns the ids of the users of status st (active, deleted
// or all), without service users when noHidden, in the list's order.
func mustOrdered(t *testing.T, admin *sql.DB, sort string, desc bool, st string, noHidden bool) []int64 {
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
	where := "true"
	switch st {
	case resourceapi.StatusActive:
		where += " AND deleted = false"
	case resourceapi.StatusDeleted:
		where += " AND deleted = true"
	}
	if noHidden {
		where += " AND service = false"
	}
	return queryIDs(t, admin, "SELECT id FROM users WHERE "+where+" ORDER BY "+order)
}

// TestDeepPageWalksFromNearerEnd checks, through PostgreSQL's statistics
// of the index users_deleted_id, how many index entries a page by number
// of 5,000 users reads: the last page and the one before the middle's
// mirror read from the end of the index, not past every row before them
// (4,980 and 3,000 entries walked from the start, as before); a page
// before the middle still reads from the start.
func TestDeepPageWalksFromNearerEnd(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || lpad(i::text, 5, '0'), 'user' || lpad(i::text, 5, '0') || '@example.com',
		        'user' || lpad(i::text, 5, '0') || '@example.com', 18 + i % 70, now(), now()
		 FROM generate_series(1, 5000) i`,
		`VACUUM ANALYZE users`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var total int
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE deleted = false`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	status := resourceapi.FilterValue{Filter: &resourceapi.Users.Filters[0], Value: resourceapi.StatusActive}
	for _, c := range []struct {
		offset  int
		maxRead int64
	}{
		{total - 20, 100},                     // the last page: 20 entries and the next
		{total - 2000, 2000 + 100},            // 2,000 from the end
		{1000, 1000 + 100},                    // 1,000 from the start
		{total/2 - 100, int64(total/2 + 100)}, // just before the middle, from the start
	} {
		before := mustIndexReads(t, admin, "users_deleted_id", -1)
		page, err := db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 20, Offset: c.offset, Sort: "id", Filters: []resourceapi.FilterValue{status}})
		if err != nil || len(page.Records) != 20 || page.Total != total {
			t.Fatalf("offset %d: %d records of %d, %v; want 20 of %d", c.offset, len(page.Records), page.Total, err, total)
		}
		after := mustIndexReads(t, admin, "users_deleted_id", before[0])
		if got := after[1] - before[1]; got > c.maxRead || got < 20 {
			t.Errorf("offset %d: read %d entries of users_deleted_id, want 20 to %d", c.offset, got, c.maxRead)
		}
	}
}

// mustIndexReads returns the scans and the entries read of index so far,
// once its scans exceed scans (the store's session reports its statistics
// when it goes idle, within seconds).
func mustIndexReads(t *testing.T, admin *sql.DB, index string, scans int64) [2]int64 {
	t.Helper()
	var out [2]int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := admin.QueryRowContext(context.Background(), `SELECT idx_scan, idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = $1`, index).Scan(&out[0], &out[1]); err != nil {
			t.Fatal(err)
		}
		if out[0] > scans || time.Now().After(deadline) {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestListAllocations bounds the allocations of a page of 20 users read
// from PostgreSQL: the destinations of a row's columns are made once per
// statement, not once per row, and an empty list is one value made once
// (16ec39e: 333 a page; 256 after). Since pgpage: the page's statement
// without parameters needs no generic-plan setting in its pipeline, and
// the strings of the rows after the first share arrays (textArena), a time
// equal to the one before it in the row its value: 257 on main, 168.
func TestListAllocations(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 1)
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, created_at, updated_at)
		 SELECT 'User ' || i, 'user' || i || '@example.com', 'user' || i || '@example.com', 18 + i, now(), now()
		 FROM generate_series(1, 30) i`); err != nil {
		t.Fatal(err)
	}
	lq := resourceapi.ListQuery{Limit: 20, Offset: 5, Sort: "id"}
	var page resourceapi.Page
	var err error
	allocs := testing.AllocsPerRun(50, func() {
		if page, err = db.List(ctx, resourceapi.Users, lq); err != nil {
			t.Fatal(err)
		}
	})
	if len(page.Records) != 20 {
		t.Fatalf("%d records, want 20", len(page.Records))
	}
	for _, r := range page.Records {
		if roles, ok := r["roles"].([]string); !ok || len(roles) != 0 {
			t.Errorf("user %d: roles %#v, want an empty list", r.ID(), r["roles"])
		}
	}
	t.Logf("%.0f allocations per page of 20", allocs)
	if allocs > 190 {
		t.Errorf("a page of 20 took %.0f allocations, want at most 190", allocs)
	}
}

// TestPageValuesMatchGet checks that the records of a page, whose strings,
// lists and equal times the rows after the first share (scanFields'
// textArena), hold what a Get of each reads, and that a list of one
// record grown by append leaves the others' alone.
func TestPageValuesMatchGet(t *testing.T) {
	ctx := context.Background()
	db, admin := mustSeeded(t, 2)
	if _, err := admin.ExecContext(ctx, `INSERT INTO users (name, email, email_key, age, roles, permissions, created_at, updated_at)
		 SELECT 'User ' || i || repeat('é', i % 7), 'user' || i || '@example.com', 'user' || i || '@example.com', 18 + i,
		        CASE WHEN i % 3 = 0 THEN '[]' WHEN i % 3 = 1 THEN '["user"]' ELSE '["editor", "user"]' END::jsonb,
		        CASE WHEN i % 4 = 0 THEN '["posts.write"]' ELSE '[]' END::jsonb,
		        now() - i * interval '1 hour', now() - (i % 2) * interval '1 minute'
		 FROM generate_series(1, 60) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, `UPDATE users SET name = repeat('long ', 80) || id WHERE id % 10 = 0`); err != nil {
		t.Fatal(err)
	}
	for _, lq := range []resourceapi.ListQuery{
		{Limit: 50, Offset: 3, Sort: "id"},
		{Limit: 20, Offset: 0, Sort: "name", Desc: true},
	} {
		page, err := db.List(ctx, resourceapi.Users, lq)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != lq.Limit {
			t.Fatalf("%d records, want %d", len(page.Records), lq.Limit)
		}
		for _, r := range page.Records {
			roles := r["roles"].([]string)
			_ = append(roles, "grown") // must not reach another record's list
		}
		for _, r := range page.Records {
			want, err := db.Get(ctx, resourceapi.Users, r.ID())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range resourceapi.Users.Fields {
				if f.WriteOnly {
					continue
				}
				if !reflect.DeepEqual(r[f.Name], want[f.Name]) {
					t.Errorf("user %d: %s = %#v in the page, %#v by Get", r.ID(), f.Name, r[f.Name], want[f.Name])
				}
			}
		}
	}
}
