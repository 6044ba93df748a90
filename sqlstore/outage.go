package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// RetryAfter is how long a client told that the database is unavailable
// should wait before it tries again: a restart of PostgreSQL takes seconds.
const RetryAfter = time.Second

// unavailableMessage is what a client is told while the database cannot be
// reached. It names no internals.
const unavailableMessage = "The service is temporarily unavailable; try again shortly"

// outage follows whether the database answers, so that an outage is logged
// once, when it begins, and once more when it ends, however many requests
// fail in between: a restart under load used to log an ERROR line for each
// request.
type outage struct {
	down  atomic.Bool
	since atomic.Int64 // Unix nanoseconds when the outage began
	log   *slog.Logger
}

// failed notes a failure that means the database is unavailable, logging it
// when it begins an outage.
func (o *outage) failed(err error) {
	if o.down.Load() || !o.down.CompareAndSwap(false, true) {
		return
	}
	o.since.Store(time.Now().UnixNano())
	o.log.Warn("database unavailable: requests that need it are answered 503 UNAVAILABLE until it answers again", "err", err.Error())
}

// answered notes a statement the database answered, which ends an outage.
func (o *outage) answered() {
	if !o.down.Load() || !o.down.CompareAndSwap(true, false) {
		return
	}
	o.log.Info("database available again", "outage", time.Since(time.Unix(0, o.since.Load())).Round(time.Millisecond).String())
}

// unavailable is the error of a call that failed because the database
// could not be reached: the client sees CodeUnavailable with RetryAfter, the
// log the cause.
func unavailable(cause error) error {
	return fmt.Errorf("%w: %w", &resourceapi.Error{Code: resourceapi.CodeUnavailable, Message: unavailableMessage, RetryAfter: RetryAfter}, cause)
}

// outcome turns err, the result of a read or write that reached the
// database's driver, into the store's error: a failure that means the
// database is unavailable becomes CodeUnavailable (and is noted), anything
// else stays as it is. A nil err means the database answered.
func (s *Store) outcome(err error) error {
	if err == nil {
		s.outage.answered()
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !s.dialect.Unavailable(err) {
		return err
	}
	if _, ok := errors.AsType[*resourceapi.Error](err); ok {
		return err // a Condition's error, or one already translated
	}
	s.outage.failed(err)
	return unavailable(err)
}

// guardedReader and guardedWriter translate the errors of every read and
// write with Store.outcome.
type guardedReader struct {
	Reader
	s *Store
}

func (r guardedReader) Read(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	return r.s.outcome(r.Reader.Read(ctx, fn))
}

type guardedWriter struct {
	Writer
	s *Store
}

func (w guardedWriter) Write(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	return w.s.outcome(w.Writer.Write(ctx, fn))
}
