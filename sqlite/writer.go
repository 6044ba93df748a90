package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// maxBatch bounds how many writes share one commit, so that one batch's
// latency stays bounded under any load.
const maxBatch = 128

// errClosed is returned for writes submitted after Close.
var errClosed = errors.New("sqlite: store is closed")

// groupWriter is the sqlstore.Writer of a SQLite file: one goroutine owns the
// writer connection and commits the writes that queue up while it is busy
// together. A commit in WAL mode with synchronous=FULL costs an fsync; sharing
// it between writers is what lets durable writes keep up with many clients.
// Each write runs in its own savepoint: a write that fails is rolled back to
// it alone, and the others still commit.
type groupWriter struct {
	conn *conn
	// watch shares conn, under its mutex, to find other processes' commits.
	watch *watch
	// beforeCommit runs at the end of every transaction (see ftsSync).
	beforeCommit []string
	// tx is the handle the jobs of the transaction under way are given.
	tx   tx
	jobs chan *job
	// beside receives the writes that wait to join others' transaction
	// (sqlstore.Beside).
	beside  chan *job
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
	// commits counts the transactions committed with a successful write
	// (DB.WriteTransactions).
	commits atomic.Int64
}

type job struct {
	ctx  context.Context
	fn   func(context.Context, sqlstore.Tx) error
	done chan error
	wait time.Duration // a beside write's: how long it waits for others
}

// tx is the sqlstore.Tx of the writer's transactions. Two kinds of
// statement of every write wait in it to run once for the whole batch, at
// its end (flush): the events (ExecAtCommit), as multi-row INSERTs, and the
// id counters of the sequences table (see dialect.NextID), which each
// write would otherwise bump with a statement of its own. Both are things
// no write reads back. A statement of a write that names the events or the
// sequences table first runs what waits for that table, so every statement
// sees them as if each had run when its write asked.
type tx struct {
	*conn
	after []func()
	// atCommit: the statements queued by ExecAtCommit, in order.
	atCommit []queued
	// ids: the id counters taken in this transaction, the database's row
	// behind by those that are dirty.
	ids []counter
	// rows caches the multi-row texts of queued statements (rowsText).
	rows map[rowsKey]string
	args []any
}

type queued struct {
	query string
	args  []any
}

type counter struct {
	resource string
	last     int64
	dirty    bool
}

type rowsKey struct {
	query string
	n     int
}

var (
	_ sqlstore.Tx         = (*tx)(nil)
	_ sqlstore.AtCommiter = (*tx)(nil)
)

// AfterEnd implements sqlstore.Tx.
func (t *tx) AfterEnd(f func()) { t.after = append(t.after, f) }

// ExecAtCommit implements sqlstore.AtCommiter: query runs at the end of the
// batch (or of the write, when writes run in savepoints), in the
// transaction, before the COMMIT; if it fails, the batch is run again with
// each write in its own savepoint, where it fails its write alone.
func (t *tx) ExecAtCommit(query string, args ...any) {
	t.atCommit = append(t.atCommit, queued{query, args})
}

func (t *tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.before(ctx, query); err != nil {
		return nil, err
	}
	return t.conn.ExecContext(ctx, query, args...)
}

func (t *tx) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if err := t.before(ctx, query); err != nil {
		return nil, err
	}
	return t.conn.QueryContext(ctx, query, args...)
}

func (t *tx) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	if err := t.before(ctx, query); err != nil {
		return errRow{err}
	}
	return t.conn.QueryRowContext(ctx, query, args...)
}

// errRow is the Row of a statement that could not run.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// before runs what waits for a table query names: the queued events before
// a statement on events, the counters before one on sequences (which then
// reads them from the table again).
func (t *tx) before(ctx context.Context, query string) error {
	if len(t.atCommit) > 0 && strings.Contains(query, "events") {
		if err := t.flushAtCommit(ctx); err != nil {
			return err
		}
	}
	if len(t.ids) > 0 && strings.Contains(query, "sequences") {
		if err := t.flushIDs(ctx); err != nil {
			return err
		}
		t.ids = t.ids[:0]
	}
	return nil
}

// nextID takes the next id of resource (see dialect.NextID): the first in
// a transaction by the statement, the others by counting on from it.
func (t *tx) nextID(ctx context.Context, resource string) (int64, error) {
	for i := range t.ids {
		if c := &t.ids[i]; c.resource == resource {
			c.last++
			c.dirty = true
			return c.last, nil
		}
	}
	var id int64
	if err := t.conn.QueryRowContext(ctx, nextIDQuery, resource).Scan(&id); err != nil {
		return 0, err
	}
	t.ids = append(t.ids, counter{resource: resource, last: id})
	return id, nil
}

// skipID moves resource's counter to at least id, and reports whether it
// had one in this transaction (otherwise the table's row is moved).
func (t *tx) skipID(resource string, id int64) bool {
	for i := range t.ids {
		if c := &t.ids[i]; c.resource == resource {
			if id > c.last {
				c.last, c.dirty = id, true
			}
			return true
		}
	}
	return false
}

// flush runs what waits for the end of the batch (or of a write in its
// savepoint): the counters' rows and the queued statements.
func (t *tx) flush(ctx context.Context) error {
	if err := t.flushIDs(ctx); err != nil {
		return err
	}
	return t.flushAtCommit(ctx)
}

func (t *tx) flushIDs(ctx context.Context) error {
	for i := range t.ids {
		c := &t.ids[i]
		if !c.dirty {
			continue
		}
		if _, err := t.conn.ExecContext(ctx, "UPDATE sequences SET last = ? WHERE resource = ?", c.last, c.resource); err != nil {
			return err
		}
		c.dirty = false
	}
	return nil
}

// maxRows bounds the rows of one multi-row statement; its texts are those
// of the powers of two up to it, so that few are prepared.
const maxRows = 64

// flushAtCommit runs the queued statements in order; a run of the same
// INSERT ... VALUES (...) runs as multi-row INSERTs.
func (t *tx) flushAtCommit(ctx context.Context) error {
	q := t.atCommit
	for len(q) > 0 {
		n := 1
		if tuple := valuesTuple(q[0].query); tuple != "" {
			for n < len(q) && n < maxRows && q[n].query == q[0].query {
				n++
			}
			// The largest power of two at most n.
			for n&(n-1) != 0 {
				n &= n - 1
			}
		}
		args := q[0].args
		query := q[0].query
		if n > 1 {
			query = t.rowsText(query, n)
			args = t.args[:0]
			for _, s := range q[:n] {
				args = append(args, s.args...)
			}
		}
		_, err := t.conn.ExecContext(ctx, query, args...)
		if n > 1 {
			clear(args)
			t.args = args[:0]
		}
		if err != nil {
			return err
		}
		clear(q[:n])
		q = q[n:]
	}
	t.atCommit = t.atCommit[:0]
	return nil
}

// rowsText returns query, an INSERT of one row, as the INSERT of n rows.
func (t *tx) rowsText(query string, n int) string {
	k := rowsKey{query, n}
	if s, ok := t.rows[k]; ok {
		return s
	}
	if t.rows == nil {
		t.rows = map[rowsKey]string{}
	}
	s := query + strings.Repeat(", "+valuesTuple(query), n-1)
	t.rows[k] = s
	return s
}

// valuesTuple returns the tuple of query when it is an INSERT of one row of
// placeholders and nothing after them ("INSERT INTO t (a, b) VALUES (?, ?)"),
// which more rows can follow; or "".
func valuesTuple(query string) string {
	i := strings.LastIndex(query, " VALUES (")
	if !strings.HasPrefix(query, "INSERT INTO ") || i < 0 {
		return ""
	}
	tuple := query[i+len(" VALUES "):]
	if strings.Trim(tuple, "(?, )") != "" || !strings.HasSuffix(tuple, ")") || strings.Count(tuple, "(") != 1 || strings.Count(tuple, ")") != 1 {
		return ""
	}
	return tuple
}

// reset forgets what waits, once the transaction has ended or been rolled
// back to before it.
func (t *tx) reset() {
	clear(t.atCommit)
	t.atCommit = t.atCommit[:0]
	t.ids = t.ids[:0]
}

func newGroupWriter(c *conn, watch *watch, beforeCommit []string) *groupWriter {
	w := &groupWriter{
		conn:         c,
		watch:        watch,
		beforeCommit: beforeCommit,
		tx:           tx{conn: c},
		jobs:         make(chan *job),
		beside:       make(chan *job),
		quit:         make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	go w.run()
	return w
}

// Write implements sqlstore.Writer. It returns once the write has committed
// or failed. A write whose ctx ends while it waits in the queue is not run;
// once taken, Write waits for the outcome even if ctx ends, so that its
// caller always knows whether the write happened (and the store's cache is
// never left stale by a write that committed after its caller gave up).
//
// A write whose ctx is marked sqlstore.Beside waits, up to its wait, for
// another write, and commits in that write's transaction, sharing its
// fsync; or alone, once the wait has passed without one.
func (w *groupWriter) Write(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	queue := w.jobs
	if wait, ok := sqlstore.BesideOf(ctx); ok {
		j.wait, queue = wait, w.beside
	}
	select {
	case queue <- j:
	case <-w.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done
}

// close stops the writer once the batch under way has committed.
func (w *groupWriter) close() {
	w.once.Do(func() { close(w.quit) })
	<-w.stopped
}

func (w *groupWriter) run() {
	defer close(w.stopped)
	batch := make([]*job, 0, maxBatch)
	// beside: the writes waiting for another (sqlstore.Beside); due fires
	// when the first of them has waited its wait.
	var beside []*job
	var due *time.Timer
	var dueC <-chan time.Time
	for {
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case j := <-w.beside:
			beside = append(beside, j)
			if due == nil {
				due = time.NewTimer(j.wait)
				dueC = due.C
			}
			continue
		case <-dueC:
			batch = batch[:0]
		case <-w.quit:
			if due != nil {
				due.Stop()
			}
			for _, j := range beside {
				j.done <- errClosed
			}
			return
		}
		if due != nil {
			due.Stop()
			due, dueC = nil, nil
		}
		batch = append(batch, beside...)
		beside = beside[:0]
		// Take whatever else is already waiting, without waiting for more:
		// under light load a write commits at once, under heavy load batches
		// grow by themselves while the previous commit syncs, and while
		// this one runs (see tryCommit).
		batch = w.take(batch)
		batch = w.commit(batch)
	}
}

// take appends to batch the writes already waiting, without waiting for
// more, up to maxBatch.
func (w *groupWriter) take(batch []*job) []*job {
	for len(batch) < maxBatch {
		select {
		case j := <-w.jobs:
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

// commit runs batch in one transaction and tells each job its outcome.
//
// It first runs the jobs one after the other with no savepoints, which is
// what almost every batch needs: a savepoint makes the FTS5 index flush its
// buffered terms to disk at every release, which cost 40% of the writer's
// time. If any job fails, the transaction is rolled back and the batch runs
// again with each job in its own savepoint, so that only the failed job's
// changes are undone.
//
// It returns batch, with the writes that joined it while it ran.
func (w *groupWriter) commit(batch []*job) []*job {
	batch, ok := w.tryCommit(batch)
	if ok {
		return batch
	}
	errs := make([]error, len(batch))
	failAll := func(err error) {
		for _, j := range batch {
			j.done <- err
		}
	}
	// Statements run under a context no request can cancel: the driver
	// answers a cancellation by interrupting SQLite, and an interrupted write
	// rolls back the whole transaction, other requests' writes included.
	ctx := context.Background()
	if err := w.begin(ctx); err != nil {
		failAll(err)
		return batch
	}
	wrote := false
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		var txErr error
		errs[i], txErr = w.runOne(ctx, j)
		if txErr != nil {
			failAll(errors.Join(txErr, w.end(ctx, false, false)))
			return batch
		}
		wrote = wrote || errs[i] == nil
	}
	if err := w.end(ctx, true, wrote); err != nil {
		failAll(err)
		return batch
	}
	for i, j := range batch {
		j.done <- errs[i]
	}
	return batch
}

// tryCommit runs batch without savepoints and commits it if every job
// succeeds, telling each job. Writes that arrive while the batch runs join
// it, up to maxBatch: under load the clients told of the last commit come
// back while this one runs, and would otherwise wait for the next commit
// and its fsync; so more writes share each fsync, and the writer never
// waits for them. It returns the batch with the writes that joined, and
// false, having changed nothing and told no job, when a job failed or the
// transaction could not start.
func (w *groupWriter) tryCommit(batch []*job) ([]*job, bool) {
	ctx := context.Background()
	if err := w.begin(ctx); err != nil {
		return batch, false
	}
	ran := make([]bool, 0, maxBatch)
	for i := 0; i < len(batch); i++ {
		j := batch[i]
		ran = append(ran, false)
		// A job whose caller has gone is not run: it is told below.
		if j.ctx.Err() == nil {
			if err := w.runJob(j); err != nil {
				w.end(ctx, false, false)
				return batch, false
			}
			ran[i] = true
		}
		if i == len(batch)-1 {
			batch = w.take(batch)
		}
	}
	if err := w.end(ctx, true, slices.Contains(ran, true)); err != nil {
		return batch, false
	}
	for i, j := range batch {
		if ran[i] {
			j.done <- nil
		} else {
			j.done <- j.ctx.Err()
		}
	}
	return batch, true
}

// begin starts a write transaction, and makes sure inside it that other
// processes' commits are counted (see watch.begun). Until end, the writer
// holds the connection's mutex.
func (w *groupWriter) begin(ctx context.Context) error {
	w.watch.mu.Lock()
	if err := w.conn.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		w.watch.mu.Unlock()
		return err
	}
	if err := w.watch.begun(ctx); err != nil {
		err = errors.Join(err, w.conn.exec(ctx, "ROLLBACK"))
		w.watch.mu.Unlock()
		return err
	}
	return nil
}

// end ends the transaction begin started: it commits it, running the
// end-of-transaction statements first, or rolls it back; on failure to
// commit it rolls back and returns why. Then it runs the jobs' AfterEnd
// functions, whatever happened, and after a commit brings the watch up to
// date (see watch.committed; wrote says whether a job succeeded, and every
// write of the store that succeeds changes a row).
func (w *groupWriter) end(ctx context.Context, commit, wrote bool) error {
	defer w.watch.mu.Unlock()
	defer w.watch.ended()
	w.watch.ending(commit && wrote)
	var err error
	if commit {
		err = w.finish(ctx)
	} else {
		err = w.conn.exec(ctx, "ROLLBACK")
	}
	w.tx.reset()
	for _, f := range w.tx.after {
		f()
	}
	clear(w.tx.after)
	w.tx.after = w.tx.after[:0]
	if commit && err == nil {
		if wrote {
			w.commits.Add(1)
		}
		// Should the check fail, reads run their own.
		w.watch.committed(ctx, wrote)
	}
	return err
}

// finish runs the end-of-transaction statements and commits, or rolls back
// and returns why not.
func (w *groupWriter) finish(ctx context.Context) error {
	if err := w.tx.flush(ctx); err != nil {
		return errors.Join(err, w.conn.exec(ctx, "ROLLBACK"))
	}
	for _, stmt := range w.beforeCommit {
		if err := w.conn.exec(ctx, stmt); err != nil {
			return errors.Join(err, w.conn.exec(ctx, "ROLLBACK"))
		}
	}
	if err := w.conn.exec(ctx, "COMMIT"); err != nil {
		return errors.Join(err, w.conn.exec(ctx, "ROLLBACK"))
	}
	return nil
}

// runOne runs one job inside a savepoint, so that its failure undoes only its
// own changes. It returns the job's error, and a transaction error when the
// savepoint itself failed, which leaves the transaction unusable.
func (w *groupWriter) runOne(ctx context.Context, j *job) (jobErr, txErr error) {
	if err := w.conn.exec(ctx, "SAVEPOINT job"); err != nil {
		return nil, err
	}
	jobErr = w.runJob(j)
	if jobErr == nil {
		// What the write queued fails it alone.
		jobErr = w.tx.flush(ctx)
	}
	if jobErr != nil {
		// The table's counters are back to before the write.
		w.tx.reset()
		if err := w.conn.exec(ctx, "ROLLBACK TO job"); err != nil {
			return jobErr, err
		}
	}
	if err := w.conn.exec(ctx, "RELEASE job"); err != nil {
		return jobErr, err
	}
	return jobErr, nil
}

// runJob runs j's function, turning a panic into an error: the writer
// goroutine serves every request and must survive one bad write. The
// function runs in its caller's context without its cancellation (see
// commit): the caller's values, such as its trace span, stay with its
// statements.
func (w *groupWriter) runJob(j *job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return j.fn(context.WithoutCancel(j.ctx), &w.tx)
}
