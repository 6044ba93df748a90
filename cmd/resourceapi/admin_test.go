package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
)

// TestConcurrentBootstrap starts the admin bootstrap of several instances at
// once on one fresh database, as a deployment's instances start: all
// succeed, exactly one admin exists and exactly one instance printed its
// password. Half the instances are configured with another admin email,
// which must not make a second admin. On PostgreSQL each instance has a pool
// of its own; a SQLite file is served by one process, whose concurrent
// callers are the instances.
func TestConcurrentBootstrap(t *testing.T) {
	const rounds, instances = 5, 4
	backends := []struct {
		name string
		open func(t *testing.T) []store
	}{
		{"sqlite", func(t *testing.T) []store {
			db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(t), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			stores := make([]store, instances)
			for i := range stores {
				stores[i] = db
			}
			return stores
		}},
		{"postgres", func(t *testing.T) []store {
			url := pgtest.NewDatabase(t)
			stores := make([]store, instances)
			for i := range stores {
				db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				stores[i] = db
			}
			return stores
		}},
	}
	hasher := &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for round := range rounds {
				stores := b.open(t)
				outs := make([]bytes.Buffer, instances)
				errs := make([]error, instances)
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i := range instances {
					cfg, err := loadConfig(env(map[string]string{"RESOURCEAPI_ADMIN_EMAIL": fmt.Sprintf("admin%d@localhost", i%2)}))
					if err != nil {
						t.Fatal(err)
					}
					first, err := firstAdminRecord(cfg)
					if err != nil {
						t.Fatal(err)
					}
					wg.Go(func() {
						<-gate
						errs[i] = bootstrapAdmin(context.Background(), cfg, first, resourceapi.NewService(stores[i], hasher), hasher, &outs[i], slog.New(slog.DiscardHandler))
					})
				}
				close(gate)
				wg.Wait()
				printed := 0
				for i := range instances {
					if errs[i] != nil {
						t.Fatalf("round %d: instance %d: bootstrap error = %v, want nil", round, i, errs[i])
					}
					if strings.Contains(outs[i].String(), "password: ") {
						printed++
					}
				}
				if printed != 1 {
					t.Fatalf("round %d: %d of %d instances printed an admin password, want 1", round, printed, instances)
				}
				lq, err := resourceapi.NewListQuery(resourceapi.Users, resourceapi.ListQuery{})
				if err != nil {
					t.Fatal(err)
				}
				page, err := stores[0].List(context.Background(), resourceapi.Users, lq)
				if err != nil {
					t.Fatal(err)
				}
				if page.Total != 1 || !resourceapi.Users.Holds(page.Records[0]) {
					t.Fatalf("round %d: users = %v, want one active admin", round, page.Records)
				}
			}
		})
	}
}
