package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// rowBatch sends the one-row statements of reads (Reader.Read's
// QueryRowContext: a GET's record, a record by key) that wait at the same
// time in one pipeline, on a few connections of its own. A statement alone
// costs the server a write to PostgreSQL and a read of its answer (on
// loopback the sender's system call does the receiver's work too: about a
// third of the server's CPU for a GET without the record cache); in a
// pipeline of n, those two system calls serve n statements, and PostgreSQL
// receives them in one read and runs them as one implicit transaction.
//
// No read waits for a batch to fill: a sender (one goroutine per
// connection of the batch) that is idle takes a read as soon as it is
// queued, with whatever else waits, and sends it at once; a read queues
// behind the batches in flight only while every sender is busy, which is
// when the round trips are what the server pays for. A sender that ends a
// batch takes the next one itself, without waiting to be woken.
//
// Each statement still starts after its caller asked for it, and sees every
// commit acknowledged before: the same freshness as a statement alone. A
// statement that fails makes PostgreSQL skip the rest of its pipeline; the
// reads it skipped run again, each alone, on the store's pool.
type rowBatch struct {
	pool *pgxpool.Pool // its own connections, one per sender
	max  int           // senders: the pool's size

	mu     sync.Mutex
	more   sync.Cond // signalled when a read is queued, or on close
	queue  []*rowRead
	closed bool
	wg     sync.WaitGroup
	// arrived and sent count the reads that came and the pipelines sent,
	// for the tests.
	arrived, sent int64
}

// maxBatch bounds the statements of one pipeline, so that one batch's
// answers stay a few kilobytes of the connection's buffer.
const maxBatch = 64

// rowRead is one statement of a batch and, once the batch has run, its
// answer: the first row's values, copied out of the connection's buffer.
type rowRead struct {
	query string
	args  []any
	done  sync.WaitGroup // done when the answer is here

	err   error // the statement's error, or errSkipped
	found bool
	fds   []pgconn.FieldDescription // shared with the reads of the same statement: read only
	raw   [][]byte
	// inline holds raw's slices for rows of up to len(inline) columns,
	// so that a read allocates once for itself and once for its values.
	inline [24][]byte
}

// errSkipped is the answer of a statement that did not run: one before it
// in its pipeline failed, or the batch could not get a connection.
var errSkipped = errors.New("postgres: skipped by the batch")

// newRowBatch starts the senders of a batch on pool's connections; close
// stops them.
func newRowBatch(pool *pgxpool.Pool) *rowBatch {
	b := &rowBatch{pool: pool, max: int(pool.Config().MaxConns)}
	b.more.L = &b.mu
	for range b.max {
		b.wg.Go(b.send)
	}
	return b
}

// close stops the senders once the reads queued are answered, and closes
// the pool.
func (b *rowBatch) close() {
	b.mu.Lock()
	b.closed = true
	b.more.Broadcast()
	b.mu.Unlock()
	b.wg.Wait()
	b.pool.Close()
}

// queryRow runs query in a batch and returns its first row. A statement the
// batch skipped runs alone, on alone's connections.
func (b *rowBatch) queryRow(ctx context.Context, alone *pgxpool.Pool, query string, args []any) sqlstore.Row {
	r := &rowRead{query: query, args: args}
	r.done.Add(1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		rows, err := alone.Query(ctx, query, args...)
		return row{rows, err}
	}
	b.arrived++
	b.queue = append(b.queue, r)
	b.more.Signal()
	b.mu.Unlock()
	r.done.Wait()
	if r.err == errSkipped {
		rows, err := alone.Query(ctx, query, args...)
		return row{rows, err}
	}
	return r
}

// send is a sender: it takes the reads queued (up to maxBatch), sends them
// in one pipeline, answers them, and takes the next, until close.
func (b *rowBatch) send() {
	ctx := context.Background()
	batch := make([]*rowRead, 0, maxBatch)
	sb := &sender{queued: make([]pgx.QueuedQuery, maxBatch)}
	for {
		b.mu.Lock()
		for len(b.queue) == 0 && !b.closed {
			b.more.Wait()
		}
		if len(b.queue) == 0 {
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.sent++
		b.mu.Unlock()

		b.run(ctx, sb, batch)
		for i, r := range batch {
			r.done.Done()
			batch[i] = nil
		}
	}
}

// sender is what a sender reuses from one batch to the next: pgx's batch
// and its statements, and the field descriptions of the statement it last
// answered.
type sender struct {
	batch  pgx.Batch
	queued []pgx.QueuedQuery // maxBatch of them, reset for each batch
	query  string            // the statement that fds describes
	fds    []pgconn.FieldDescription
}

// fieldsOf returns a copy of the field descriptions of query's rows that
// outlives the connection's buffer: the last one made, while the same
// statement describes its rows the same way (a GET after a GET).
func (sb *sender) fieldsOf(query string, fds []pgconn.FieldDescription) []pgconn.FieldDescription {
	if query != sb.query || !slices.Equal(fds, sb.fds) {
		sb.query, sb.fds = query, slices.Clone(fds)
	}
	return sb.fds
}

// run sends batch's statements in one pipeline and stores each one's
// answer in it.
func (b *rowBatch) run(ctx context.Context, sb *sender, batch []*rowRead) {
	c, err := b.pool.Acquire(ctx)
	if err != nil {
		for _, r := range batch {
			r.err = errSkipped
		}
		return
	}
	defer c.Release()
	pb := &sb.batch
	pb.QueuedQueries = pb.QueuedQueries[:0]
	for i, r := range batch {
		q := &sb.queued[i]
		*q = pgx.QueuedQuery{SQL: r.query, Arguments: r.args}
		pb.QueuedQueries = append(pb.QueuedQueries, q)
	}
	defer func() {
		// Drop the references to the reads' arguments.
		clear(sb.queued[:len(batch)])
		clear(pb.QueuedQueries)
	}()
	br := c.Conn().SendBatch(ctx, pb)
	failed := false
	for _, r := range batch {
		if failed {
			r.err = errSkipped
			continue
		}
		rows, err := br.Query()
		if err == nil {
			if rows.Next() {
				r.found = true
				r.fds = sb.fieldsOf(r.query, rows.FieldDescriptions())
				r.raw = copyValuesInto(r.inline[:0], rows.RawValues())
			}
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			// The statement's own error, unless the connection is gone:
			// then no statement of the batch can be trusted to have run,
			// and each runs again alone.
			r.err = err
			if lost(ctx, err) || c.Conn().IsClosed() {
				r.err = errSkipped
			}
			failed = true
		}
	}
	// An error here comes after every answer was read: the answers stand.
	_ = br.Close()
}

// copyValues copies a row's values out of the connection's buffer, which
// the next message overwrites, into one allocation.
func copyValues(raw [][]byte) [][]byte { return copyValuesInto(nil, raw) }

// copyValuesInto is copyValues with the values' slices in out's room (a new
// slice when it has too little).
func copyValuesInto(out, raw [][]byte) [][]byte {
	size := 0
	for _, v := range raw {
		size += len(v)
	}
	buf := make([]byte, 0, size)
	out = slices.Grow(out[:0], len(raw))[:len(raw)]
	for i, v := range raw {
		if v == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, v...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// typeMaps lends pgx's type maps to the scans of batched rows that need
// one (a null, a type decodeField does not decode): a map memoises its
// plans and is not safe for concurrent use.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// Scan implements sqlstore.Row.
func (r *rowRead) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.found {
		return pgx.ErrNoRows
	}
	if len(r.fds) != len(dest) {
		return pgx.ScanArgError{ColumnIndex: 0, Err: errors.New("number of field descriptions must equal number of destinations")}
	}
	var m *pgtype.Map
	defer func() {
		if m != nil {
			typeMaps.Put(m)
		}
	}()
	for i, d := range dest {
		if fv, ok := d.(sqlstore.FieldValue); ok && r.raw[i] != nil {
			if v, ok := decodeField(fv.Field(), &r.fds[i], r.raw[i], nil); ok {
				fv.Set(v)
				continue
			}
		}
		if m == nil {
			m = typeMaps.Get().(*pgtype.Map)
		}
		if err := m.Scan(r.fds[i].DataTypeOID, r.fds[i].Format, r.raw[i], d); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: r.fds[i].Name, Err: err}
		}
	}
	return nil
}
