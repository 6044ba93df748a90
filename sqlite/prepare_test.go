package sqlite

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// countingDialect counts the placeholders the store asks for while inside
// is set: each is a statement's argument being built.
type countingDialect struct {
	dialect
	inside *atomic.Bool
	built  *atomic.Int64
}

func (d countingDialect) Placeholder(n int) string {
	if d.inside.Load() {
		d.built.Add(1)
	}
	return d.dialect.Placeholder(n)
}

// insideWriter sets inside while its writes run.
type insideWriter struct {
	sqlstore.Writer
	inside *atomic.Bool
}

func (w insideWriter) Write(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	return w.Writer.Write(ctx, func(ctx context.Context, tx sqlstore.Tx) error {
		w.inside.Store(true)
		defer w.inside.Store(false)
		return fn(ctx, tx)
	})
}

// TestCreateBuiltBeforeItsWrite: a create's statements are built in its
// caller's goroutine, before its write; the writer's goroutine, which runs
// every write one after the other, only binds and runs them.
func TestCreateBuiltBeforeItsWrite(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "test.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var inside atomic.Bool
	var built atomic.Int64
	store := sqlstore.New(sqlstore.Config{
		Reader:  db.readers,
		Writer:  insideWriter{db.writer, &inside},
		Dialect: countingDialect{inside: &inside, built: &built},
	})
	for i, email := range []string{"one@example.com", "two@example.com"} {
		rec := resourceapi.Record{"name": "Built", "email": email}
		if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		out, err := store.Create(ctx, resourceapi.Users, rec)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := out.ID(), int64(i+1); got != want {
			t.Fatalf("id = %d, want %d", got, want)
		}
	}
	if n := built.Load(); n != 0 {
		t.Fatalf("the writes built %d arguments of their statements, want 0", n)
	}
}
