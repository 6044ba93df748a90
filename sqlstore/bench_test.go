package sqlstore_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite"
)

// benchStore returns a SQLite store holding n users, with the cache on.
func benchStore(b *testing.B, n int) *sqlite.DB {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for i := range n {
		rec := resourceapi.Record{"name": fmt.Sprintf("User %d", i), "email": fmt.Sprintf("user%05d@example.com", i), "age": int64(i % 90)}
		if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkGetCached is a Get the cache serves: the store's share of the
// GET one user request.
func BenchmarkGetCached(b *testing.B) {
	db := benchStore(b, 100)
	ctx := context.Background()
	for id := int64(1); id <= 100; id++ {
		if _, err := db.Get(ctx, resourceapi.Users, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := int64(0)
		for pb.Next() {
			id = id%100 + 1
			if _, err := db.Get(ctx, resourceapi.Users, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkListCached is a list page the cache serves.
func BenchmarkListCached(b *testing.B) {
	db := benchStore(b, 100)
	ctx := context.Background()
	lq, err := rhttp.ParseListQuery(resourceapi.Users, url.Values{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.List(ctx, resourceapi.Users, lq); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.List(ctx, resourceapi.Users, lq); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAccountByAPIKeyCached is the store's share of authenticating a
// request by API key when the cache holds its account.
func BenchmarkAccountByAPIKeyCached(b *testing.B) {
	db := benchStore(b, 1)
	ctx := context.Background()
	secret, _ := resourceapi.NewAPIKey(nil)
	rec := resourceapi.Record{"user_id": int64(1), "key": secret}
	if err := resourceapi.Validate(resourceapi.APIKeys, rec, resourceapi.ModeCreate); err != nil {
		b.Fatal(err)
	}
	rec["prefix"], rec["key"] = secret[:12], resourceapi.HashToken(secret) // as the Service stores it
	if _, err := db.Create(ctx, resourceapi.APIKeys, rec); err != nil {
		b.Fatal(err)
	}
	hash := resourceapi.HashTokenBytes(secret)
	for range 2 {
		if _, err := db.AccountByAPIKey(ctx, hash); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.AccountByAPIKey(ctx, hash); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
