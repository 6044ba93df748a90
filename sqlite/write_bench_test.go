package sqlite_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
)

// BenchmarkConcurrentCreates creates users from 64 goroutines at once, as
// bench/peers.sh's sqlite-post does over HTTP (wrk -c64), on a file with
// synchronous=FULL: what the group writer commits per transaction
// (writes/commit), and the process's CPU per create (cpu-ns/op).
//
//	go test -run '^$' -bench ConcurrentCreates -benchtime 4000x ./sqlite
func BenchmarkConcurrentCreates(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Migrated(b), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	commits := db.WriteTransactions()
	cpu := processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			rec := resourceapi.Record{"name": fmt.Sprintf("Load %d", i), "email": fmt.Sprintf("load-%d@load.test", i), "age": int64(30)}
			if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
				b.Error(err)
				return
			}
			if _, err := db.Create(ctx, resourceapi.Users, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/float64(db.WriteTransactions()-commits), "writes/commit")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
