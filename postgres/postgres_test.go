package postgres_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/storetest"
)

func TestStore(t *testing.T) {
	pgtest.URL(t) // skip the whole suite, with its reason, when PostgreSQL is not configured
	// Every store the suite opens is a copy of one migrated database: the
	// same schema as migrating each afresh (which TestSchema and the
	// migration tests do), at a fraction of the cost.
	template := pgtest.NewDatabase(t)
	migrated, err := postgres.Open(context.Background(), template, postgres.Options{})
	if err != nil {
		t.Fatalf("open the template: %v", err)
	}
	if err := migrated.Close(); err != nil {
		t.Fatalf("close the template: %v", err)
	}
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store {
		// As served (RESOURCEAPI_POSTGRES_SOLO on): the store is the solo
		// holder for most of each test, and serves from its record cache.
		db, err := postgres.Open(context.Background(), pgtest.Clone(t, template), postgres.Options{Solo: true})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

// TestConcurrentMigrations starts several stores on one empty database at
// once, as instances of a deployment do: the migration lock lets exactly one
// migrate and the others wait and find the schema ready.
func TestConcurrentMigrations(t *testing.T) {
	url := pgtest.NewDatabase(t)
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 2})
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

// TestIDsRunOut checks the one case where Create fails for want of an id:
// no id up to MaxID is free after the sequence. The suite cannot bring the
// sequence there (that takes 2^53 Creates), so the test sets it.
func TestIDsRunOut(t *testing.T) {
	ctx := context.Background()
	users := resourceapi.Users
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	valid := func(rec resourceapi.Record, mode resourceapi.WriteMode) resourceapi.Record {
		t.Helper()
		if err := resourceapi.Validate(users, rec, mode); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if _, _, err := db.Replace(ctx, users, resourceapi.MaxID, valid(resourceapi.Record{"name": "Last", "email": "last@example.com"}, resourceapi.ModeReplace), nil); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence('users', 'id'), $1)", resourceapi.MaxID-2); err != nil {
		t.Fatal(err)
	}

	rec, err := db.Create(ctx, users, valid(resourceapi.Record{"name": "A", "email": "a@example.com"}, resourceapi.ModeCreate))
	if err != nil {
		t.Fatalf("Create with MaxID-1 free: %v", err)
	}
	if got, want := rec.ID(), int64(resourceapi.MaxID-1); got != want {
		t.Fatalf("id = %d, want %d", got, want)
	}
	_, err = db.Create(ctx, users, valid(resourceapi.Record{"name": "B", "email": "b@example.com"}, resourceapi.ModeCreate))
	if got := resourceapi.ErrorCode(err); got != resourceapi.CodeUnprocessable {
		t.Fatalf("Create with no id left = %v (%s), want %s", err, got, resourceapi.CodeUnprocessable)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d users, %v; want 2 (the failed Create wrote nothing)", n, err)
	}
}

// TestPoolSize checks where the pool's size comes from: Options.MaxConns,
// else the URL's pool_max_conns (docs/operations.md), else the default.
func TestPoolSize(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for _, c := range []struct {
		url  string
		max  int
		want int
	}{
		{url, 3, 3},
		{url + "&pool_max_conns=5", 0, 5},
		{url + "&pool_max_conns=5", 2, 2},
	} {
		db, err := postgres.Open(context.Background(), c.url, postgres.Options{MaxConns: c.max})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Pools()["postgres"]().MaxOpenConnections; got != c.want {
			t.Errorf("Open(%s, MaxConns %d): pool of %d, want %d", c.url, c.max, got, c.want)
		}
		db.Close()
	}
}
