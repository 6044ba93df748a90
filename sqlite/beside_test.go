package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// TestBesideWrite: a write marked sqlstore.Beside commits in the
// transaction of another write, adding no commit (no fsync) of its own,
// and alone once its wait has passed without one. The webhook worker's
// rounds are such writes.
func TestBesideWrite(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})

	// Alone: it waits, then commits.
	before := db.WriteTransactions()
	if _, err := db.Create(sqlstore.Beside(ctx, 10*time.Millisecond), resourceapi.Users, mustValidUser(t, "Alone", "alone@example.com")); err != nil {
		t.Fatal(err)
	}
	if got := db.WriteTransactions() - before; got != 1 {
		t.Fatalf("a beside write alone: %d commits, want 1", got)
	}

	// Beside others: it joins one of theirs.
	before = db.WriteTransactions()
	done := make(chan error, 1)
	go func() {
		_, err := db.Create(sqlstore.Beside(ctx, time.Hour), resourceapi.Users, mustValidUser(t, "Beside", "beside@example.com"))
		done <- err
	}()
	writes := 0
	for joined := false; !joined; {
		if writes == 1000 {
			t.Fatal("the beside write did not join any of 1,000 writes")
		}
		time.Sleep(5 * time.Millisecond)
		if _, err := db.Create(ctx, resourceapi.Users, mustValidUser(t, "W", fmt.Sprintf("w%d@example.com", writes))); err != nil {
			t.Fatal(err)
		}
		writes++
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			joined = true
		default:
		}
	}
	if got := db.WriteTransactions() - before; got != int64(writes) {
		t.Fatalf("%d writes and one beside them: %d commits, want %d", writes, got, writes)
	}
}
