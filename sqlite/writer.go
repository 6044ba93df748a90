package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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
	db      *sql.DB
	jobs    chan *job
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

type job struct {
	ctx  context.Context
	fn   func(context.Context, *sql.Tx) error
	done chan error
}

func newGroupWriter(db *sql.DB) *groupWriter {
	w := &groupWriter{
		db:      db,
		jobs:    make(chan *job),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go w.run()
	return w
}

// Write implements sqlstore.Writer. It returns once the write is committed
// (or failed); if ctx ends first it returns ctx's error, and the write may
// still commit or not, as with any database whose client stops waiting.
func (w *groupWriter) Write(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case w.jobs <- j:
	case <-w.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *groupWriter) close() {
	w.once.Do(func() { close(w.quit) })
	<-w.stopped
}

func (w *groupWriter) run() {
	defer close(w.stopped)
	batch := make([]*job, 0, maxBatch)
	for {
		select {
		case j := <-w.jobs:
			batch = append(batch[:0], j)
		case <-w.quit:
			return
		}
		// Take whatever else is already waiting, without waiting for more:
		// under light load a write commits at once, under heavy load batches
		// grow by themselves while the previous commit syncs.
	fill:
		for len(batch) < maxBatch {
			select {
			case j := <-w.jobs:
				batch = append(batch, j)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

// commit runs batch in one transaction and tells each job its outcome.
func (w *groupWriter) commit(batch []*job) {
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
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		failAll(fmt.Errorf("begin: %w", err))
		return
	}
	for i, j := range batch {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		var txErr error
		errs[i], txErr = runOne(ctx, tx, j)
		if txErr != nil {
			tx.Rollback()
			failAll(txErr)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		failAll(fmt.Errorf("commit: %w", err))
		return
	}
	for i, j := range batch {
		j.done <- errs[i]
	}
}

// runOne runs one job inside a savepoint of tx, so that its failure undoes
// only its own changes. It returns the job's error, and a transaction error
// when the savepoint itself failed, which leaves the transaction unusable.
func runOne(ctx context.Context, tx *sql.Tx, j *job) (jobErr, txErr error) {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT job"); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	jobErr = runJob(ctx, tx, j)
	if jobErr != nil {
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO job"); err != nil {
			return jobErr, fmt.Errorf("rollback to savepoint: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE job"); err != nil {
		return jobErr, fmt.Errorf("release savepoint: %w", err)
	}
	return jobErr, nil
}

// runJob runs j's function, turning a panic into an error: the writer
// goroutine serves every request and must survive one bad write.
func runJob(ctx context.Context, tx *sql.Tx, j *job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return j.fn(ctx, tx)
}
