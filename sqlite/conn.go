package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// maxStatements bounds each connection's statement cache. Statements are
// built from declarations, so their number is bounded already (filters ×
// sorts × search kinds); the bound only guards against a declaration that
// multiplies them.
const maxStatements = 1024

// conn is one SQLite connection held for the process's lifetime, with the
// statements it has prepared. The driver keeps no statement cache, and
// preparing costs more than running a simple query, so each statement is
// prepared once per connection. A conn serves one goroutine at a time.
type conn struct {
	c     *sql.Conn
	stmts map[string]*sql.Stmt
	// ran counts the statements run, for tests of how many a write costs.
	ran atomic.Int64
}

var _ sqlstore.Querier = (*conn)(nil)

func newConn(ctx context.Context, db *sql.DB) (*conn, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, stmts: make(map[string]*sql.Stmt)}, nil
}

// stmt returns query prepared, or nil when the cache is full and query should
// run unprepared.
func (c *conn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c.ran.Add(1)
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	if len(c.stmts) >= maxStatements {
		return nil, nil
	}
	st, err := c.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.c.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

func (c *conn) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if st == nil {
		rows, err = c.c.QueryContext(ctx, query, args...)
	} else {
		rows, err = st.QueryContext(ctx, args...)
	}
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (c *conn) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	st, err := c.stmt(ctx, query)
	if err != nil || st == nil {
		// database/sql builds Rows only itself: running the query unprepared
		// reports the same error through the Row.
		return c.c.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// exec runs a statement that must succeed for the connection to stay usable.
func (c *conn) exec(ctx context.Context, query string) error {
	if _, err := c.ExecContext(ctx, query); err != nil {
		return fmt.Errorf("%s: %w", query, err)
	}
	return nil
}

func (c *conn) close() error {
	for _, st := range c.stmts {
		st.Close()
	}
	return c.c.Close()
}

// readers is the pool of read connections, handed out one goroutine at a
// time. It implements sqlstore.Reader.
type readers struct {
	idle chan *conn
}

func newReaders(ctx context.Context, db *sql.DB, n int) (*readers, error) {
	r := &readers{idle: make(chan *conn, n)}
	for range n {
		c, err := newConn(ctx, db)
		if err != nil {
			r.close()
			return nil, err
		}
		r.idle <- c
	}
	return r, nil
}

// Read implements sqlstore.Reader.
func (r *readers) Read(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	var c *conn
	select {
	case c = <-r.idle:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { r.idle <- c }()
	return fn(ctx, c)
}

func (r *readers) close() {
	for {
		select {
		case c := <-r.idle:
			c.close()
		default:
			return
		}
	}
}
