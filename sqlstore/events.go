package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.Outbox = (*Store)(nil)

// recordEvent writes into the outbox, in the write's transaction, the event
// res declares for op, if any, with rec: the record as the write committed it
// (as it was, for a delete). Each write calls it once its record is written,
// so the event commits with the write or not at all.
func (s *Store) recordEvent(ctx context.Context, tx Tx, res *resourceapi.Resource, op resourceapi.Op, rec resourceapi.Record) error {
	name := res.Events[op]
	if name == "" {
		return nil
	}
	payload, err := resourceapi.MarshalRecord(res, rec)
	if err != nil {
		return fmt.Errorf("event %s: %w", name, err)
	}
	// The event happened when the write stamped the record.
	at, ok := rec["updated_at"].(time.Time)
	if !ok || op == resourceapi.OpDelete {
		at = resourceapi.Timestamp(s.now())
	}
	q := s.newQuery()
	q.WriteString("INSERT INTO events (name, resource, record_id, payload, created_at) VALUES (" +
		join([]string{q.Arg(name), q.Arg(res.Name), q.Arg(rec.ID()), q.Arg(string(payload)), q.Arg(at)}) + ")")
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fmt.Errorf("event %s: %w", name, err)
	}
	// After a rollback too: a wake-up that finds nothing costs one query.
	tx.AfterEnd(s.eventsWritten)
	return nil
}

// eventsWritten tells the relay, without blocking, that events committed.
func (s *Store) eventsWritten() {
	select {
	case s.events <- struct{}{}:
	default: // a wake-up is pending already: it covers this commit too
	}
}

// EventsWritten implements resourceapi.Outbox.
func (s *Store) EventsWritten() <-chan struct{} { return s.events }

// PublishEvents implements resourceapi.Outbox.
//
// Where relays on several instances share the database (the dialect has
// SkipLocked), one transaction claims the oldest unpublished events that no
// other relay holds, publishes them and marks them, so that each event is
// published by one relay at a time; a relay that dies before its commit
// releases its claim, and another publishes the events again.
//
// Otherwise (SQLite) one process relays, and the events are read outside any
// write transaction: the writer's transaction may hold other writes of its
// batch that have not committed, whose events must not be published yet.
func (s *Store) PublishEvents(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var published int
	var err error
	if lock := s.dialect.SkipLocked(); lock != "" {
		published, err = s.claimAndPublish(ctx, limit, lock, publish)
	} else {
		published, err = s.readAndPublish(ctx, limit, publish)
	}
	if pe := (publishError{}); errors.As(err, &pe) {
		return 0, fmt.Errorf("publish events: %w", pe.err)
	}
	if err != nil {
		// The events may have been published and not marked: they will be
		// published again, which subscribers' hubs drop.
		return 0, fmt.Errorf("publish events: outbox: %w", err)
	}
	return published, nil
}

// claimAndPublish claims, publishes and marks events in one transaction.
func (s *Store) claimAndPublish(ctx context.Context, limit int, lock string, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	var published int
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		published = 0
		events, err := s.pendingEvents(ctx, tx, limit, lock)
		if err != nil || len(events) == 0 {
			return err
		}
		if err := publish(ctx, events); err != nil {
			return publishError{err}
		}
		if err := s.markPublished(ctx, tx, events); err != nil {
			return err
		}
		published = len(events)
		return nil
	})
	return published, err
}

// readAndPublish reads committed events, publishes them, and then marks
// them in a write transaction of their own.
func (s *Store) readAndPublish(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	var events []resourceapi.Event
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		events, err = s.pendingEvents(ctx, q, limit, "")
		return err
	})
	if err != nil || len(events) == 0 {
		return 0, err
	}
	if err := publish(ctx, events); err != nil {
		return 0, publishError{err}
	}
	err = s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		return s.markPublished(ctx, tx, events)
	})
	if err != nil {
		return 0, err
	}
	return len(events), nil
}

// publishError carries a Publisher's error out of the outbox's transaction.
type publishError struct{ err error }

func (e publishError) Error() string { return e.err.Error() }

// pendingEvents reads the oldest unpublished events, at most limit, in id
// order; suffix ends the query (the clause that claims them).
func (s *Store) pendingEvents(ctx context.Context, q Querier, limit int, suffix string) ([]resourceapi.Event, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, name, resource, payload, created_at FROM events WHERE published_at IS NULL ORDER BY id LIMIT "+
		s.dialect.Placeholder(1)+suffix, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var events []resourceapi.Event
	for rows.Next() {
		var ev resourceapi.Event
		var payload []byte
		at := value{f: timeField}
		if err := rows.Scan(&ev.ID, &ev.Name, &ev.Resource, &payload, &at); err != nil {
			return nil, err
		}
		ev.At, _ = at.v.(time.Time)
		// An event this version cannot read (of a resource only a newer
		// version declares) is published without its record rather than
		// block every event after it.
		if res := resourceapi.ResourceNamed(ev.Resource); res != nil {
			ev.Record, _ = resourceapi.UnmarshalRecord(res, payload)
		}
		events = append(events, ev)
	}
	return events, rows.Err()
}

// markPublished marks events published. The ids go in an IN list padded to
// a power of two (repeating the last id), so that a connection's statement
// cache holds a handful of these statements, not one per batch size.
func (s *Store) markPublished(ctx context.Context, tx Execer, events []resourceapi.Event) error {
	q := s.newQuery()
	q.WriteString("UPDATE events SET published_at = " + q.Arg(resourceapi.Timestamp(s.now())) + " WHERE id IN (")
	n := 1
	for n < len(events) {
		n *= 2
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = q.Arg(events[min(i, len(events)-1)].ID)
	}
	q.WriteString(strings.Join(ids, ", ") + ")")
	_, err := tx.ExecContext(ctx, q.String(), q.args...)
	return err
}

// PurgeEvents implements resourceapi.Outbox. Where relays on several
// instances purge, each skips the rows another is deleting.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		q := s.newQuery()
		q.WriteString("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE published_at < " + q.Arg(resourceapi.Timestamp(before)) +
			" ORDER BY id LIMIT " + q.Arg(int64(limit)) + s.dialect.SkipLocked() + ")")
		res, err := tx.ExecContext(ctx, q.String(), q.args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return int(n), nil
}
