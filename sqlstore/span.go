package sqlstore

import (
	"context"
	"database/sql"
)

// spanReader and spanWriter report every statement to Config.Trace, as it
// starts and once it has run.
type spanReader struct {
	Reader
	trace func(context.Context, string) (context.Context, func(error))
}

func (r spanReader) Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	return r.Reader.Read(ctx, func(ctx context.Context, q Querier) error {
		return fn(ctx, spanQuerier{q, r.trace})
	})
}

type spanWriter struct {
	Writer
	trace func(context.Context, string) (context.Context, func(error))
}

func (w spanWriter) Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return w.Writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		return fn(ctx, spanTx{spanQuerier{tx, w.trace}, tx})
	})
}

type spanQuerier struct {
	q     Querier
	trace func(context.Context, string) (context.Context, func(error))
}

func (s spanQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, end := s.trace(ctx, query)
	res, err := s.q.ExecContext(ctx, query, args...)
	end(err)
	return res, err
}

func (s spanQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, end := s.trace(ctx, query)
	rows, err := s.q.QueryContext(ctx, query, args...)
	end(err)
	return rows, err
}

func (s spanQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx, end := s.trace(ctx, query)
	row := s.q.QueryRowContext(ctx, query, args...)
	end(row.Err())
	return row
}

type spanTx struct {
	spanQuerier
	tx Tx
}

func (t spanTx) AfterEnd(f func()) { t.tx.AfterEnd(f) }
