package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestPatchStampKeepsOrder checks that a PATCH whose UPDATE goes with the
// read of the record (sqlstore.Follower: its stamp is taken before the
// record's lock) never stamps the record earlier than the version it
// replaces. The clock steps back between two PATCHes, as the stamp of a
// PATCH that waited for the lock behind another is earlier than the
// other's: the second PATCH keeps the first one's time.
func TestPatchStampKeepsOrder(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	db, err := postgres.Open(ctx, pgtest.Migrated(t), postgres.Options{MaxConns: 4, Now: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := mustCreateUser(t, db, "Stamp", "stamp@example.com")
	first, err := db.Update(ctx, resourceapi.Users, id, resourceapi.Record{"age": int64(30)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now.Store(t0.Add(-time.Hour).UnixNano())
	second, err := db.Update(ctx, resourceapi.Users, id, resourceapi.Record{"age": int64(31)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := first["updated_at"].(time.Time), second["updated_at"].(time.Time)
	if b.Before(a) {
		t.Errorf("the second PATCH stamped %v, before the first's %v", b, a)
	}
	got, err := db.Get(ctx, resourceapi.Users, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := got["updated_at"].(time.Time); !s.Equal(b) || got["age"] != int64(31) {
		t.Errorf("stored: updated_at %v, age %v; want %v, 31", s, got["age"], b)
	}
}
