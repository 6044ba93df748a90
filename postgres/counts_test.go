package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestCountShardByBackend checks, from the catalog of a migrated database,
// that every function that writes row_counts adds to the shard of its
// connection, postgres.CountShard (migration 00050), and none to the
// record's id % 16 (00001 to 00044), where 32 to 64 concurrent writers
// waited for each other's row lock on 16 rows until each commit.
func TestCountShardByBackend(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	mustCountShards(t, db, postgres.RowsFunction("users"), postgres.RowsFunction("posts"), "row_counts_trigger", "api_keys_count", "row_counts_add")
}

// mustCountShards checks that every function of db's schema that writes
// row_counts does so in postgres.CountShard, and that the functions named
// in want are among them (so that the check cannot pass on a schema whose
// counts it does not see).
func mustCountShards(t *testing.T, db *sql.DB, want ...string) {
	t.Helper()
	rows, err := db.Query(`SELECT p.proname, p.prosrc FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace AND p.prosrc LIKE '%INSERT INTO row_counts%'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	byID := regexp.MustCompile(`\bid\s*%\s*\d+`)
	found := map[string]bool{}
	for rows.Next() {
		var name, src string
		if err := rows.Scan(&name, &src); err != nil {
			t.Fatal(err)
		}
		found[name] = true
		if n, m := strings.Count(src, "INSERT INTO row_counts"), strings.Count(src, postgres.CountShard); n != m || byID.MatchString(src) {
			t.Errorf("%s writes row_counts %d times, %d of them in shard %s, shards by id: %q; want every count in %s",
				name, n, m, postgres.CountShard, byID.FindAllString(src, -1), postgres.CountShard)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !found[w] {
			t.Errorf("no function %s writing row_counts found; found %v", w, found)
		}
	}
}

// TestCountRowsNotShared: a transaction that inserts a record holds the
// lock of its count row until it commits; another connection's inserts of
// the same resource must not wait for it. With shards by id % 16, one in 16
// consecutive ids fell on the open transaction's row, and the second
// writer queued behind its commit.
func TestCountRowsNotShared(t *testing.T) {
	url := pgtest.Migrated(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	// Two connections whose backends' shards differ (two process ids
	// with one remainder share a row, by design: rare among a pool's).
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	shard := func(c *sql.Conn) (s int) {
		t.Helper()
		if err := c.QueryRowContext(ctx, "SELECT "+postgres.CountShard).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var b *sql.Conn
	for i := 0; b == nil; i++ {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if shard(c) != shard(a) {
			b = c
		} else if i > 64 {
			t.Fatal("no connection found in a shard of its own")
		}
	}
	insert := "INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ($1, $2, $2, now(), now())"
	txA, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback()
	if _, err := txA.ExecContext(ctx, insert, "Open", "open@count.example"); err != nil {
		t.Fatal(err)
	}

	done, errs := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(done)
		errs <- func() error {
			tx, err := b.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			for i := range 32 {
				if _, err := tx.ExecContext(ctx, insert, fmt.Sprint("Writer ", i), fmt.Sprintf("w%d@count.example", i)); err != nil {
					return err
				}
			}
			return tx.Commit()
		}()
	}()
	waited := pgtest.WaitLockedOr(t, db, done)
	if err := txA.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if waited {
		t.Error("32 inserts of users waited for the count row of another connection's open insert")
	}
	mustCountsExact(t, db, "users", "deleted")
}

// TestCountsConcurrent: users and posts inserted, soft deleted, restored
// and deleted from many connections at once are counted exactly, by
// soft-delete state.
func TestCountsConcurrent(t *testing.T) {
	url := pgtest.Migrated(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const writers, rounds = 16, 20
	db.SetMaxOpenConns(writers + 1)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := db.Conn(ctx)
				if err != nil {
					return err
				}
				defer c.Close()
				for r := range rounds {
					tx, err := c.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					email := fmt.Sprintf("w%d.r%d@count.example", w, r)
					var id int64
					if err := tx.QueryRowContext(ctx, "INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ('Counted', $1, $1, now(), now()) RETURNING id", email).Scan(&id); err != nil {
						tx.Rollback()
						return err
					}
					stmts := []string{"INSERT INTO posts (title, content, author_id, created_at, updated_at) VALUES ('t', 'c', $1, now(), now())"}
					switch r % 4 {
					case 1:
						stmts = append(stmts, "UPDATE users SET deleted = true WHERE id = $1")
					case 2:
						stmts = append(stmts, "UPDATE users SET deleted = true WHERE id = $1", "UPDATE users SET deleted = false WHERE id = $1",
							"DELETE FROM posts WHERE author_id = $1")
					case 3:
						stmts = append(stmts, "DELETE FROM posts WHERE author_id = $1", "DELETE FROM users WHERE id = $1")
					}
					for _, s := range stmts {
						if _, err := tx.ExecContext(ctx, s, id); err != nil {
							tx.Rollback()
							return err
						}
					}
					if r%5 == 4 {
						// Rolled back: counted nowhere.
						if err := tx.Rollback(); err != nil {
							return err
						}
						continue
					}
					if err := tx.Commit(); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustCountsExact(t, db, "users", "deleted")
	mustCountsExact(t, db, "posts", "")
}

// mustCountsExact checks that row_counts holds the number of table's rows
// in each soft-delete state (by the column del; "" where it has none).
func mustCountsExact(t *testing.T, db *sql.DB, table, del string) {
	t.Helper()
	state := "false"
	if del != "" {
		state = del
	}
	rows, err := db.Query(`SELECT s.deleted, coalesce(r.n, 0), coalesce(c.n, 0) FROM (VALUES (false), (true)) s (deleted)
		LEFT JOIN (SELECT deleted, sum(n) AS n FROM row_counts WHERE resource = $1 GROUP BY 1) r ON r.deleted = s.deleted
		LEFT JOIN (SELECT `+state+` AS deleted, count(*) AS n FROM `+table+` GROUP BY 1) c ON c.deleted = s.deleted`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var deleted bool
		var kept, counted int64
		if err := rows.Scan(&deleted, &kept, &counted); err != nil {
			t.Fatal(err)
		}
		if kept != counted {
			t.Errorf("%s, deleted %v: row_counts holds %d, the table %d rows", table, deleted, kept, counted)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCountsAfterTruncate: a TRUNCATE of a counted table, which fires no
// row trigger, empties its count as well (migration 00051): before, after
// TRUNCATE users CASCADE the counts went on counting every user, post and
// key. Every counted table of the released schema has the trigger.
func TestCountsAfterTruncate(t *testing.T) {
	t.Parallel()
	db := mustAdmin(t, pgtest.Migrated(t))
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO users (name, email, email_key, created_at, updated_at)
		 SELECT 'User ' || i, 'user' || i || '@example.com', 'user' || i || '@example.com', now(), now() FROM generate_series(1, 5) i`,
		`UPDATE users SET deleted = true WHERE id = (SELECT min(id) FROM users)`,
		`INSERT INTO posts (author_id, title, content, created_at, updated_at) SELECT id, 'Post', 'Text', now(), now() FROM users`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tables := mustCountsTruncate(t, db, "users", "posts", "api_keys", "orders")
	check := func(when string) {
		t.Helper()
		for _, table := range tables {
			var counted, rows int64
			if err := db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM row_counts WHERE resource = $1`, table).Scan(&counted); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if counted != rows {
				t.Errorf("%s: %s counts %d rows, holds %d", when, table, counted, rows)
			}
		}
	}
	check("before the truncate")
	if _, err := db.ExecContext(ctx, `TRUNCATE users CASCADE`); err != nil {
		t.Fatal(err)
	}
	check("after TRUNCATE users CASCADE")
}

// mustCountsTruncate checks that every table of db's schema that a count
// trigger counts has the trigger that empties its count after a TRUNCATE
// (row_counts_truncated, migration 00051), and that the tables named in
// want are among them; it returns those tables.
func mustCountsTruncate(t *testing.T, db *sql.DB, want ...string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT c.relname, bool_or(p.proname = 'row_counts_truncated' AND (g.tgtype & 32) <> 0)
		FROM pg_class c JOIN pg_trigger g ON g.tgrelid = c.oid JOIN pg_proc p ON p.oid = g.tgfoid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT g.tgisinternal
		GROUP BY c.relname
		HAVING bool_or(p.prosrc LIKE '%INSERT INTO row_counts%' OR p.prosrc LIKE '%row_counts_add(%')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var table string
		var truncated bool
		if err := rows.Scan(&table, &truncated); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, table)
		if !truncated {
			t.Errorf("%s is counted in row_counts, and no trigger empties its count after a TRUNCATE", table)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(tables, w) {
			t.Errorf("counted tables %v lack %s", tables, w)
		}
	}
	return tables
}
