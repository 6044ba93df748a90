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
		return fn(ctx, tracedTx{tracedQuerier{tx, w.on}, tx})
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

func (t tracedQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	t.on(query)
	return t.q.QueryContext(ctx, query, args...)
}

func (t tracedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	t.on(query)
	return t.q.QueryRowContext(ctx, query, args...)
}

type tracedTx struct {
	tracedQuerier
	tx Tx
}

func (t tracedTx) AfterEnd(f func()) { t.tx.AfterEnd(f) }
