package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// pool is the store's Reader and Writer on pgx's own pool and protocol,
// without database/sql between them: a statement is prepared once per
// connection and its rows are decoded straight into the store's values, and
// a write sends its BEGIN with its first statement and its last statements
// with its COMMIT (see tx), so that a POST is three round trips where
// database/sql made it six.
type pool struct {
	pool *pgxpool.Pool
	// slots has the capacity of the pool's connections: a read or write
	// takes one before it asks the pool for a connection, and a caller that
	// hangs up while it waits for one leaves without running anything (the
	// pool's own wait runs under sqlstore.Detach, which does not end when
	// the caller leaves).
	slots chan struct{}
	// reads caps the reads among them (lists, searches: statements that
	// keep PostgreSQL's CPU busy): a read takes one of reads before one of
	// slots, a write only one of slots. A write holds its connection
	// across round trips and the service's work between them, idle in its
	// transaction most of that time, so writes gain from more connections
	// than the server has cores; CPU-bound reads do not, they only queue
	// inside PostgreSQL and lose (split).
	reads chan struct{}
	// batch, when not nil, runs the one-row statements of reads
	// (rowbatch.go).
	batch *rowBatch
}

var (
	_ sqlstore.Reader = (*pool)(nil)
	_ sqlstore.Writer = (*pool)(nil)
)

// acquire takes a slot, or returns ctx's error if ctx ends first.
func (p *pool) acquire(ctx context.Context) (release func(), err error) {
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// acquireRead takes a read's slot (one of reads, then one of slots), or
// returns ctx's error if ctx ends first, holding neither.
func (p *pool) acquireRead(ctx context.Context) (release func(), err error) {
	select {
	case p.reads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	free, err := p.acquire(ctx)
	if err != nil {
		<-p.reads
		return nil, err
	}
	return func() { free(); <-p.reads }, nil
}

// lost reports whether err means that the connection a statement ran on is
// gone (the server ended it, or it broke): after a restart of the server
// every pooled connection is dead, and the pool only notices when it uses
// one.
func lost(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && (dialect{}).Unavailable(err)
}

// Read implements sqlstore.Reader. fn may run twice: a read that fails on a
// lost connection runs once more, after the pool has dropped its
// connections, so on a fresh one. A caller that is gone before the read
// starts gets its context's error; once started, the read's statements run
// under sqlstore.Detach(ctx), so that a caller hanging up does not
// interrupt them (pgx would close the connection of a statement it
// interrupts).
func (p *pool) Read(ctx context.Context, fn func(ctx context.Context, q sqlstore.Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx, cancel := sqlstore.Detach(ctx)
	defer cancel()
	q := &readQuerier{p: p, caller: ctx}
	defer q.release()
	err := fn(sctx, q)
	if !lost(sctx, err) {
		return err
	}
	p.pool.Reset()
	if p.batch != nil {
		p.batch.pool.Reset()
	}
	return fn(sctx, q)
}

// readQuerier is the Querier of a Read. A statement on the pool takes a
// read's slot first (acquireRead), once for the whole read, with the caller's context (a caller
// that hangs up while it waits leaves without running anything); a
// one-row statement goes to the batch of one-row reads when there is one
// (rowBatch), which needs no slot: it runs on the batch's connections.
type readQuerier struct {
	p      *pool
	caller context.Context
	free   func() // the slot's release, once taken
}

func (q *readQuerier) slot() error {
	if q.free != nil {
		return nil
	}
	free, err := q.p.acquireRead(q.caller)
	if err != nil {
		return err
	}
	q.free = free
	return nil
}

func (q *readQuerier) release() {
	if q.free != nil {
		q.free()
	}
}

func (q *readQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := q.slot(); err != nil {
		return nil, err
	}
	return querier{q: q.p.pool, plans: true}.ExecContext(ctx, query, args...)
}

func (q *readQuerier) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if err := q.slot(); err != nil {
		return nil, err
	}
	return querier{q: q.p.pool, plans: true}.QueryContext(ctx, query, args...)
}

func (q *readQuerier) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	if q.p.batch != nil && sqlstore.OneRow(ctx) {
		return q.p.batch.queryRow(ctx, q.p.pool, query, args)
	}
	if err := q.slot(); err != nil {
		return errRow{err}
	}
	return querier{q: q.p.pool, plans: true}.QueryRowContext(ctx, query, args...)
}

// Write implements sqlstore.Writer. The caller's context can end the write
// up to the commit, but not the commit itself: a commit cancelled in flight
// may or may not have happened, and the caller must always know which. A
// statement of the write is never interrupted by the caller's cancellation
// (it runs under sqlstore.Detach(ctx)); the write is rolled back at the next
// check instead. A write whose first round trip (its BEGIN) finds the
// connection lost runs again on a fresh one: nothing of it can have run.
func (p *pool) Write(ctx context.Context, fn func(ctx context.Context, tx sqlstore.Tx) error) error {
	release, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	sctx, cancel := sqlstore.Detach(ctx)
	defer cancel()
	err = p.write(ctx, sctx, fn)
	var b beginError
	if errors.As(err, &b) && lost(sctx, b.err) {
		p.pool.Reset()
		err = p.write(ctx, sctx, fn)
	}
	if errors.As(err, &b) {
		return fmt.Errorf("begin: %w", b.err)
	}
	return err
}

func (p *pool) write(ctx, sctx context.Context, fn func(ctx context.Context, tx sqlstore.Tx) error) (err error) {
	c, err := p.pool.Acquire(sctx)
	if err != nil {
		return beginError{err}
	}
	t := &tx{conn: c.Conn()}
	defer func() {
		if t.begun && !t.ended {
			// A connection whose transaction cannot be ended is closed
			// rather than returned to the pool in the middle of it.
			if _, rerr := t.conn.Exec(sctx, "ROLLBACK"); rerr != nil {
				c.Conn().Close(sctx)
			}
		}
		c.Release()
		for _, f := range t.after {
			f()
		}
	}()
	if err := fn(sctx, t); err != nil {
		if t.beginErr != nil {
			return beginError{t.beginErr}
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := t.commit(sctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// beginError is the error of a write's first round trip, which carried its
// BEGIN: nothing of the write ran.
type beginError struct{ err error }

func (e beginError) Error() string { return e.err.Error() }
func (e beginError) Unwrap() error { return e.err }

// querier is sqlstore.Querier on pgx: on the pool (each statement on a
// connection of its own, returned as soon as its rows are read) or on one
// connection.
type querier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	}
	// plans: a query whose context asks for a generic plan
	// (sqlstore.GenericPlan) gets one (a read's querier, outside any
	// transaction).
	plans bool
}

// genericPlan makes the statements that follow it in the same implicit
// transaction (a pipeline up to its Sync) use their prepared statement's
// generic plan. It is local to that transaction: the connection returns to
// the pool with PostgreSQL's default (auto), whatever happens.
const genericPlan = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"

// searchPlan is genericPlan for a search (sqlstore.SearchPlan), and
// searchCustomPlan the setting of a search whose filters' values choose its
// plan: either is planned without sequential scans, so that it takes the
// trigram index of the search table whatever the length of the index's
// pending list when it is planned (PostgreSQL prices the list's pages as
// random reads, and a longer list made a scan of the whole search table
// look cheaper: docs/performance.md, "pgpending"). The other scans of a
// search are by index already (the sort's, the primary keys'); a table
// without an index a scan could take is still scanned (the setting only
// prices a sequential scan out). That price is 10^10 added to the plan's
// cost: a search that reads identity_version (the caller's account
// checked), a table of one row with no index, then passed every JIT
// threshold, and PostgreSQL compiled, optimized and inlined the statement
// at every run (930 ms where the run took 2); so JIT is off for them too.
const (
	searchPlan       = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)"
	searchCustomPlan = "SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)"
)

func (q querier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tag, err := q.q.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return result{tag}, nil
}

func (q querier) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	// A statement without parameters needs no generic plan's setting:
	// PostgreSQL makes its plan once and always runs it (a custom plan is
	// made only for parameters' values).
	var setting string
	switch generic := sqlstore.GenericPlan(ctx) && len(args) > 0; {
	case !q.plans:
	case sqlstore.SearchPlan(ctx) && generic:
		setting = searchPlan
	case sqlstore.SearchPlan(ctx):
		setting = searchCustomPlan
	case generic:
		setting = genericPlan
	}
	if setting != "" {
		// One round trip: the setting and the query in one pipeline,
		// which PostgreSQL runs as one implicit transaction.
		b := &pgx.Batch{}
		b.Queue(setting)
		b.Queue(query, args...)
		br := q.q.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
		r, err := br.Query()
		if err != nil {
			br.Close()
			return nil, err
		}
		return &batchRows{rows{Rows: r, page: sqlstore.PageRows(ctx)}, br}, nil
	}
	r, err := q.q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return &rows{Rows: r, page: sqlstore.PageRows(ctx)}, nil
}

func (q querier) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	r, err := q.q.Query(ctx, query, args...)
	return row{r, err}
}

// result is sql.Result of a command tag.
type result struct{ tag pgconn.CommandTag }

func (r result) LastInsertId() (int64, error) {
	return 0, errors.New("postgres: LastInsertId is not supported, use RETURNING")
}

func (r result) RowsAffected() (int64, error) { return r.tag.RowsAffected(), nil }

// rows is sqlstore.Rows of pgx.Rows; a row that holds a record's columns
// is scanned by scanFields; the rows of a page after the first, with their
// strings in text (the first row's alone: a page of one row needs no
// array).
type rows struct {
	pgx.Rows
	page    bool // the rows of a page (sqlstore.PageRows): text may be used
	scanned bool
	text    textArena
}

func (r *rows) Scan(dest ...any) error {
	if hasFields(dest) {
		var text *textArena
		if r.page && r.scanned {
			text = &r.text
		}
		r.scanned = true
		return scanFields(r.Rows, dest, text)
	}
	return r.Rows.Scan(dest...)
}

func (r *rows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// tx is the sqlstore.Tx of pool.Write, on one connection. Its BEGIN goes
// with its first statement, in one round trip, and the statements queued
// with ExecAtCommit go with its COMMIT: PostgreSQL runs a pipeline's
// statements in order, and one that fails makes the server skip the rest,
// the COMMIT included, so the transaction commits only when each of them
// has succeeded.
type tx struct {
	conn     *pgx.Conn
	begun    bool // BEGIN was sent
	ended    bool // COMMIT or ROLLBACK was answered
	beginErr error
	atCommit []queued
	after    []func()
	follow   *rowRead // sent right after the next statement (QueryRowAfterNext)
}

type queued struct {
	query string
	args  []any
}

var (
	_ sqlstore.Tx         = (*tx)(nil)
	_ sqlstore.AtCommiter = (*tx)(nil)
	_ sqlstore.Follower   = (*tx)(nil)
)

// errNotSent is the answer of a statement queued to follow another that was
// never sent.
var errNotSent = errors.New("postgres: the statement was not sent")

// QueryRowAfterNext implements sqlstore.Follower, for a next statement that
// is a QueryRowContext (the only one that takes it along).
func (t *tx) QueryRowAfterNext(query string, args ...any) (sqlstore.Row, bool) {
	if t.follow != nil {
		return nil, false
	}
	t.follow = &rowRead{query: query, args: args, err: errNotSent}
	return t.follow, true
}

// queryRowFollowed sends query and the statement that follows it (f), with
// BEGIN when the transaction has not begun, in one round trip.
func (t *tx) queryRowFollowed(ctx context.Context, query string, args []any, f *rowRead) sqlstore.Row {
	b := &pgx.Batch{}
	begun := t.begun
	if !begun {
		b.Queue("BEGIN")
	}
	t.begun = true
	b.Queue(query, args...)
	b.Queue(f.query, f.args...)
	br := t.conn.SendBatch(ctx, b)
	if !begun {
		if _, err := br.Exec(); err != nil {
			t.beginErr = err
			br.Close()
			return errRow{err}
		}
	}
	r, err := br.Query()
	return followedRow{row{r, err}, br, f}
}

// followedRow is the row of a statement sent with the one that follows it:
// reading it reads the other's answer too, into f, and ends the batch.
type followedRow struct {
	row row
	br  pgx.BatchResults
	f   *rowRead
}

func (r followedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		r.f.err = nil
		rows, ferr := r.br.Query()
		if ferr == nil {
			if rows.Next() {
				r.f.found = true
				r.f.fds = append([]pgconn.FieldDescription(nil), rows.FieldDescriptions()...)
				r.f.raw = copyValues(rows.RawValues())
			}
			rows.Close()
			ferr = rows.Err()
		}
		r.f.err = ferr
	} else {
		r.f.err = err // PostgreSQL skipped the statement that follows
	}
	// Close's error is the last statement's, the one that follows, when it
	// failed: that one is f's, not this row's.
	if cerr := r.br.Close(); err == nil && r.f.err == nil {
		err = cerr
	}
	return err
}

// AfterEnd implements sqlstore.Tx.
func (t *tx) AfterEnd(f func()) { t.after = append(t.after, f) }

// ExecAtCommit implements sqlstore.AtCommiter.
func (t *tx) ExecAtCommit(query string, args ...any) {
	t.atCommit = append(t.atCommit, queued{query, args})
}

// first sends BEGIN and the write's first statement in one batch, and
// returns the batch to read the statement's result from; when BEGIN failed
// it closes the batch and returns the error (also kept in beginErr).
func (t *tx) first(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	t.begun = true
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(query, args...)
	br := t.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.beginErr = err
		br.Close()
		return nil, err
	}
	return br, nil
}

func (t *tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t.begun {
		return querier{q: t.conn}.ExecContext(ctx, query, args...)
	}
	br, err := t.first(ctx, query, args)
	if err != nil {
		return nil, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return result{tag}, nil
}

func (t *tx) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if t.begun {
		return querier{q: t.conn}.QueryContext(ctx, query, args...)
	}
	br, err := t.first(ctx, query, args)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{rows{Rows: r}, br}, nil
}

func (t *tx) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	if f := t.follow; f != nil {
		t.follow = nil
		return t.queryRowFollowed(ctx, query, args, f)
	}
	if t.begun {
		return querier{q: t.conn}.QueryRowContext(ctx, query, args...)
	}
	br, err := t.first(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	r, err := br.Query()
	return batchRow{row{r, err}, br}
}

// commit sends the queued statements and COMMIT in one batch.
func (t *tx) commit(ctx context.Context) error {
	if !t.begun && len(t.atCommit) == 0 {
		return nil // nothing ran: nothing to commit
	}
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
	}
	for _, q := range t.atCommit {
		b.Queue(q.query, q.args...)
	}
	b.Queue("COMMIT")
	n := b.Len()
	begun := t.begun
	t.begun = true
	br := t.conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	for i := 0; i < n && err == nil; i++ {
		tag, err = br.Exec()
		if err != nil && i == 0 && !begun {
			err = beginError{err}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	t.ended = true
	if tag.String() != "COMMIT" {
		// The server ended the transaction without committing it.
		return fmt.Errorf("the transaction was rolled back (%s)", tag)
	}
	return nil
}

// batchRow is the row of a write's first statement: reading it ends the
// batch that carried the BEGIN. Its row is scanned as every other
// statement's (row, scanFields): a record's columns decoded straight into
// their fields, where pgx's own row (br.QueryRow) would plan a scan and box
// a value for each column (a POST's INSERT ... RETURNING is a write's first
// statement).
type batchRow struct {
	row row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are the rows of a write's first statement: reading the last
// of them ends the batch that carried the BEGIN, as database/sql's rows
// close themselves, so that the transaction's next statement can run
// before the rows are closed.
type batchRows struct {
	rows
	br pgx.BatchResults
}

func (r *batchRows) Next() bool {
	if r.rows.Next() {
		return true
	}
	// The rows first: closing the batch gives the connection back to the
	// pool, and the rows must not touch it after that.
	r.rows.Rows.Close()
	r.br.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.rows.Err(); err != nil {
		return err
	}
	r.rows.Rows.Close() // before the batch gives the connection back
	return r.br.Close() // closed already: the batch's error, if any
}

func (r *batchRows) Close() error {
	err := r.rows.Close()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
