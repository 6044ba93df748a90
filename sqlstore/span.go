package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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
		t := spanTx{spanQuerier{tx, w.trace}, tx}
		if _, ok := tx.(AtCommiter); ok {
			return fn(ctx, spanAtCommitTx{t})
		}
		return fn(ctx, t)
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

func (s spanQuerier) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	ctx, end := s.trace(ctx, query)
	rows, err := s.q.QueryContext(ctx, query, args...)
	end(err)
	return rows, err
}

func (s spanQuerier) QueryRowContext(ctx context.Context, query string, args ...any) Row {
	ctx, end := s.trace(ctx, query)
	return spanRow{s.q.QueryRowContext(ctx, query, args...), end}
}

// spanRow ends its statement's span when it is scanned: a driver may run
// the statement only then (pgx does).
type spanRow struct {
	row Row
	end func(error)
}

func (r spanRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		r.end(nil) // no row is an answer, not a failure
	} else {
		r.end(err)
	}
	return err
}

type spanTx struct {
	spanQuerier
	tx Tx
}

func (t spanTx) AfterEnd(f func()) { t.tx.AfterEnd(f) }

// spanAtCommitTx is spanTx over a Tx that is an AtCommiter. A statement
// queued for the commit has no span of its own: it runs in the commit's
// round trip, which the write's span covers.
type spanAtCommitTx struct{ spanTx }

func (t spanAtCommitTx) ExecAtCommit(query string, args ...any) {
	t.tx.(AtCommiter).ExecAtCommit(query, args...)
}

// QueryRowAfterNext implements Follower when the Tx does. The statement has
// no span of its own: it runs in the round trip of the next one.
func (t spanAtCommitTx) QueryRowAfterNext(query string, args ...any) (Row, bool) {
	if f, ok := t.tx.(Follower); ok {
		return f.QueryRowAfterNext(query, args...)
	}
	return nil, false
}
