package postgres_test

import (
	"context"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/storetest"
)

func TestStore(t *testing.T) {
	pgtest.URL(t) // skip the whole suite, with its reason, when PostgreSQL is not configured
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store {
		db, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), postgres.Options{})
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
