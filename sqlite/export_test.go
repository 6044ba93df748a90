package sqlite

import (
	"context"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// SetMigratingHook makes Migrate call fn while it holds the file's lock, until
// the returned function restores the default.
func SetMigratingHook(fn func()) (restore func()) {
	testHookMigrating = fn
	return func() { testHookMigrating = nil }
}

// Write runs fn as a write of the store's writer (sqlstore.Writer).
func (db *DB) Write(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	return db.writer.Write(ctx, fn)
}

// WriterStatements returns how many statements the writer's connection has
// run since Open.
func (db *DB) WriterStatements() int64 { return db.writer.conn.ran.Load() }
