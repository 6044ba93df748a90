package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// BenchmarkConcurrentCreates creates users from 8 goroutines a core at once:
// what ordering event ids costs writers (migration 00025 made event-bearing
// commits happen one at a time; since 00028 they take the order lock shared
// and share WAL flushes).
//
//	go test -run '^$' -bench ConcurrentCreates -benchtime 2000x ./postgres
func BenchmarkConcurrentCreates(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.NewDatabase(b), postgres.Options{MaxConns: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := resourceapi.Record{"name": "B", "email": fmt.Sprintf("b%d@example.com", n.Add(1))}
			if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
				b.Error(err)
				return
			}
			if _, err := db.Create(context.Background(), resourceapi.Users, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
