package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/resourceapi/resourceapi"
)

// Idempotency keys (resourceapi.Idempotency) live in the table
// idempotency_keys, one row per caller and key, which the primary key keeps
// unique: of requests that race with one key, on one instance or several,
// exactly one inserts its row, in the transaction of its write. The others
// find the row (or fail on it) and answer with its response instead of
// writing.

var _ resourceapi.IdempotencyStore = (*Store)(nil)

// errKeyTaken aborts a write whose key another transaction stored first;
// the write's caller then answers with that transaction's response
// (idempotentFailure).
var errKeyTaken = resourceapi.ErrIdempotencyInProgress

// idempotencyOf returns the Idempotency the write of ctx must honour: the
// one the Service completed (it sets the retention), else nil.
func idempotencyOf(ctx context.Context) *resourceapi.Idempotency {
	if idem := resourceapi.IdempotencyFrom(ctx); idem != nil && idem.Retention > 0 && idem.Response != nil {
		return idem
	}
	return nil
}

// Idempotent implements resourceapi.IdempotencyStore.
func (s *Store) Idempotent(ctx context.Context, caller int64, key string) (resourceapi.StoredIdempotency, bool, error) {
	var got resourceapi.StoredIdempotency
	var found bool
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		got, found, err = s.idempotent(ctx, q, caller, key)
		return err
	})
	if err != nil {
		return got, false, fmt.Errorf("idempotency key: %w", err)
	}
	return got, found, nil
}

func (s *Store) idempotent(ctx context.Context, db Querier, caller int64, key string) (resourceapi.StoredIdempotency, bool, error) {
	q := s.newQuery()
	q.WriteString("SELECT fingerprint, response FROM idempotency_keys WHERE caller = " + q.Arg(caller) +
		" AND idem_key = " + q.Arg(key) + " AND expires_at > " + q.Arg(s.now()))
	var got resourceapi.StoredIdempotency
	err := db.QueryRowContext(ctx, q.String(), q.args...).Scan(&got.Fingerprint, &got.Response)
	if errors.Is(err, sql.ErrNoRows) {
		return got, false, nil
	}
	return got, err == nil, err
}

// idempotentBefore, first in an idempotent write's transaction, aborts the
// write with the Outcome of its key when a transaction that committed since
// the Service looked (on another instance) stored it.
func (s *Store) idempotentBefore(ctx context.Context, tx Querier, idem *resourceapi.Idempotency) error {
	if idem == nil {
		return nil
	}
	stored, found, err := s.idempotent(ctx, tx, idem.Caller, idem.Key)
	if err != nil {
		return fmt.Errorf("idempotency key: %w", err)
	}
	if found {
		return idem.Outcome(stored)
	}
	return nil
}

// keepIdempotent, last in an idempotent write's transaction but for its
// events (which take a lock on PostgreSQL, held to the end), stores the key
// with the response to out, the record written. A row of the key that has
// expired is replaced; a live one means that another transaction stored the
// key first (errKeyTaken). It then purges up to purgeBatch expired keys,
// skipping those other transactions hold, so the table cannot outgrow the
// purge: every write adds one key and may remove that many.
func (s *Store) keepIdempotent(ctx context.Context, tx Querier, idem *resourceapi.Idempotency, out resourceapi.Record) error {
	if idem == nil {
		return nil
	}
	response, err := idem.Response(out)
	if err != nil {
		return fmt.Errorf("idempotency key: response: %w", err)
	}
	now := s.now()
	q := s.newQuery()
	q.WriteString("INSERT INTO idempotency_keys (caller, idem_key, fingerprint, response, created_at, expires_at) VALUES (" +
		q.Arg(idem.Caller) + ", " + q.Arg(idem.Key) + ", " + q.Arg(idem.Fingerprint) + ", " + q.Arg(response) + ", " +
		q.Arg(now) + ", " + q.Arg(now.Add(idem.Retention)) + ")" +
		" ON CONFLICT (caller, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, response = excluded.response," +
		" created_at = excluded.created_at, expires_at = excluded.expires_at WHERE idempotency_keys.expires_at <= " + q.Arg(now))
	r, err := tx.ExecContext(ctx, q.String(), q.args...)
	if err != nil {
		return fmt.Errorf("idempotency key: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return errKeyTaken
	}
	q = s.newQuery()
	lock := s.dialect.ForUpdate()
	if lock != "" {
		lock += " SKIP LOCKED"
	}
	q.WriteString("DELETE FROM idempotency_keys WHERE (caller, idem_key) IN (SELECT caller, idem_key FROM idempotency_keys" +
		" WHERE expires_at <= " + q.Arg(now) + " LIMIT " + q.Arg(purgeBatch) + lock + ")")
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("purge idempotency keys: %w", err)
	}
	return nil
}

// idempotentFailure returns what an idempotent write that failed with err
// answers: the Outcome of its key when another request stored the key
// meanwhile (its write may be why this one failed: a unique value it took),
// else err.
func (s *Store) idempotentFailure(ctx context.Context, idem *resourceapi.Idempotency, err error) error {
	if idem == nil || err == nil {
		return err
	}
	if _, ok := errors.AsType[*resourceapi.Replay](err); ok {
		return err
	}
	stored, found, lookErr := s.Idempotent(ctx, idem.Caller, idem.Key)
	if lookErr != nil || !found {
		return err
	}
	return idem.Outcome(stored)
}
