package postgres

import "context"

// PlansOf returns how many custom and generic plans the prepared statements
// of the pool's sessions whose text contains like (a LIKE pattern) have
// made: pg_prepared_statements shows a session's own statements only, so
// the pool should have one connection.
func (db *DB) PlansOf(ctx context.Context, like string) (custom, generic int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT coalesce(sum(custom_plans), 0)::bigint, coalesce(sum(generic_plans), 0)::bigint
		FROM pg_prepared_statements WHERE statement LIKE $1`, like).Scan(&custom, &generic)
	return custom, generic, err
}

// HoldBatches takes every connection of the batch of one-row reads
// (rowbatch.go), so that the batches that follow wait for one; release
// gives them back.
func (db *DB) HoldBatches(ctx context.Context) (release func(), err error) {
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for range db.batch.max {
		c, err := db.batch.pool.Acquire(ctx)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, c.Release)
	}
	return release, nil
}

// BatchCounts returns how many one-row reads have come to the batch and
// how many pipelines it has sent.
func (db *DB) BatchCounts() (arrived, sent int64) {
	db.batch.mu.Lock()
	defer db.batch.mu.Unlock()
	return db.batch.arrived, db.batch.sent
}

// BatchedRow runs query through the batch of one-row reads and scans its
// row into dest.
func (db *DB) BatchedRow(ctx context.Context, query string, args []any, dest ...any) error {
	return db.batch.queryRow(ctx, db.pool, query, args).Scan(dest...)
}

// HoldReads takes every read's slot of the pool (pool.reads), so that the
// reads that follow wait for one; release gives them back.
func (db *DB) HoldReads(ctx context.Context) (release func(), err error) {
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for range cap(db.rw.reads) {
		free, err := db.rw.acquireRead(ctx)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, free)
	}
	return release, nil
}

// Split returns how the store's connections are divided: the batch of
// one-row reads', the most the pool's reads take at once, and the pool's
// (which writes may all take).
func (db *DB) Split() (batch, reads, pool int) {
	if db.batch != nil {
		batch = db.batch.max
	}
	return batch, cap(db.rw.reads), cap(db.rw.slots)
}

// Placeholder is the dialect's placeholder of the nth parameter.
func Placeholder(n int) string { return dialect{}.Placeholder(n) }

// ConfirmIdentityStatement is the statement a confirmed write runs with its
// commit (sqlstore.IdentityConfirm).
var ConfirmIdentityStatement = dialect{}.ConfirmIdentity()

// SearchSettings are the statements that go before a search's in its
// pipeline: with a generic plan, and with custom plans.
var SearchSettings = []string{searchPlan, searchCustomPlan}
