package sqlstore

import (
	"context"
	"database/sql"
)

// tracedReader and tracedWriter report every statement to Config.OnStatement.
type tracedReader struct {
	Reader
	on func(string)
}

func (r tracedReader) Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	return r.Reader.Read(ctx, func(ctx context.Context, q Querier) error {
		return fn(ctx, tracedQuerier{q, r.on})
	})
}

type tracedWriter struct {
	Writer
	on func(string)
}

func (w tracedWriter) Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return w.Writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		t := tracedTx{tracedQuerier{tx, w.on}, tx}
		if _, ok := tx.(AtCommiter); ok {
			return fn(ctx, tracedAtCommitTx{t})
		}
		return fn(ctx, t)
	})
}

type tracedQuerier struct {
	q  Querier
	on func(string)
}

func (t tracedQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t.on(query)
	return t.q.ExecContext(ctx, query, args...)
}

func (t tracedQuerier) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	t.on(query)
	return t.q.QueryContext(ctx, query, args...)
}

func (t tracedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) Row {
	t.on(query)
	return t.q.QueryRowContext(ctx, query, args...)
}

type tracedTx struct {
	tracedQuerier
	tx Tx
}

func (t tracedTx) AfterEnd(f func()) { t.tx.AfterEnd(f) }

// tracedAtCommitTx is tracedTx over a Tx that is an AtCommiter.
type tracedAtCommitTx struct{ tracedTx }

// ExecAtCommit counts the statement when it is queued: it runs, in the same
// round trip as the commit.
func (t tracedAtCommitTx) ExecAtCommit(query string, args ...any) {
	t.on(query)
	t.tx.(AtCommiter).ExecAtCommit(query, args...)
}

// QueryRowAfterNext implements Follower when the Tx does, and counts the
// statement when it is queued.
func (t tracedAtCommitTx) QueryRowAfterNext(query string, args ...any) (Row, bool) {
	f, ok := t.tx.(Follower)
	if !ok {
		return nil, false
	}
	t.on(query)
	return f.QueryRowAfterNext(query, args...)
}
