package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// waitArrived waits until n one-row reads have come to db's batch.
func waitArrived(t *testing.T, db *postgres.DB, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if arrived, _ := db.BatchCounts(); arrived >= n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d reads arrived at the batch, want %d", arrived, n)
		}
	}
}

// TestGetsShareRoundTrips has 40 GETs wait at once while the batch's
// connections are busy, and checks that they go to PostgreSQL in a few
// pipelines (not one round trip each) and that each gets its own record,
// or not found, as a GET alone does. Before rowbatch.go every GET was a
// round trip of its own (the batch and its counts did not exist).
func TestGetsShareRoundTrips(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[int64]resourceapi.Record{}
	for i := range 30 {
		id := mustCreateUser(t, db, fmt.Sprintf("Batch %02d", i), fmt.Sprintf("batch%02d@example.com", i))
		rec, err := db.Get(ctx, resourceapi.Users, id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = rec
	}
	var ids []int64
	for id := range want {
		ids = append(ids, id)
	}
	for i := range 10 {
		ids = append(ids, 900_000+int64(i)) // not found
	}

	arrived0, sent0 := db.BatchCounts()
	release, err := db.HoldBatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]resourceapi.Record, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { got[i], errs[i] = db.Get(ctx, resourceapi.Users, id) })
	}
	waitArrived(t, db, arrived0+int64(len(ids)))
	release()
	wg.Wait()

	for i, id := range ids {
		if w, ok := want[id]; ok {
			if errs[i] != nil {
				t.Errorf("Get(%d): %v", id, errs[i])
				continue
			}
			if g, w := fmt.Sprint(got[i]), fmt.Sprint(w); g != w {
				t.Errorf("Get(%d) = %s, want %s", id, g, w)
			}
			continue
		}
		if code := resourceapi.ErrorCode(errs[i]); code != resourceapi.CodeNotFound {
			t.Errorf("Get(%d) = %v, %v; want %s", id, got[i], errs[i], resourceapi.CodeNotFound)
		}
	}
	if _, sent := db.BatchCounts(); sent-sent0 > int64(len(ids))/4 {
		t.Errorf("%d GETs waiting together went in %d pipelines, want at most %d", len(ids), sent-sent0, len(ids)/4)
	}
}

// TestBatchedStatementFails puts a statement that fails among others in one
// pipeline: it gets its own error, and the statements PostgreSQL skipped
// after it run again alone and get their rows.
func TestBatchedStatementFails(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	arrived0, sent0 := db.BatchCounts()
	release, err := db.HoldBatches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	got := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Statement 10 divides by zero.
			errs[i] = db.BatchedRow(ctx, "SELECT 100 / ($1::bigint - 10)", []any{int64(i)}, &got[i])
		})
	}
	waitArrived(t, db, arrived0+n)
	release()
	wg.Wait()
	for i := range n {
		if i == 10 {
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "division by zero") {
				t.Errorf("statement %d: error %v, want division by zero", i, errs[i])
			}
			continue
		}
		if errs[i] != nil || got[i] != 100/(int64(i)-10) {
			t.Errorf("statement %d = %d, %v; want %d", i, got[i], errs[i], 100/(int64(i)-10))
		}
	}
	if _, sent := db.BatchCounts(); sent-sent0 >= n {
		t.Errorf("%d statements went in %d pipelines: not batched", n, sent-sent0)
	}
}
