package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.Outbox = (*Store)(nil)

// recordEvent writes into the outbox, in the write's transaction, the event
// of a write of op on a record of res (Resource.EventOf) by actor, from
// before (nil for a create) to after (nil for a delete), with the record as
// the write committed it (as it was, for a delete). Each write calls it once
// its record is written, so the event commits with the write or not at all,
// and last, right before the commit: on PostgreSQL the insert takes, shared,
// the lock the relay waits on to establish its horizon (migration 00028),
// held until the transaction ends, so the relay waits for the commit alone.
func (s *Store) recordEvent(ctx context.Context, tx Tx, res *resourceapi.Resource, op resourceapi.Op, before, after resourceapi.Record, actor int64) error {
	name, alias := res.EventOf(op, before, after)
	rec := after
	if rec == nil {
		rec = before
	}
	if res.Hidden != "" && (rec.Bool(res.Hidden) || before != nil && before.Bool(res.Hidden)) {
		return nil // a hidden record's events would reach every subscriber
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
	d := s.dialect
	// Nothing of the insert is needed before the commit: where the
	// transaction can, it sends it with its COMMIT, one round trip for both
	// (on SQLite, with the batch's other events, one statement for all).
	if err := execAtCommit(ctx, tx, s.eventInsert, d.Value(name), d.Value(alias), d.Value(actor), d.Value(res.Name),
		d.Value(rec.ID()), d.Value(string(payload)), d.Value(at)); err != nil {
		return fmt.Errorf("event %s: %w", name, err)
	}
	// After a rollback too: a wake-up that finds nothing costs one query.
	tx.AfterEnd(s.eventsWritten)
	return nil
}

// eventInsert returns the text of recordEvent's INSERT, the same for
// every event.
func eventInsert(d Dialect) string {
	ph := make([]string, 7)
	for i := range ph {
		ph[i] = d.Placeholder(i + 1)
	}
	payload := "payload"
	if t, ok := d.(EventPayloadText); ok {
		payload = t.EventPayloadColumn()
	}
	return "INSERT INTO events (name, alias, actor, resource, record_id, " + payload + ", created_at) VALUES (" + join(ph) + ")"
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
// What is published is every event up to an id, the outbox's cursor (the
// row of events_published, migration 00047): the relays publish in id
// order, and only final events. Where relays on several instances share
// the database (the dialect has SkipLocked), one transaction waits for the
// other relays' (Lock(LockPublish)), reads the events after the cursor up
// to the horizon, publishes them and moves the cursor past them, so that
// each event is published by one relay at a time, and every batch after
// the last in id order; a relay that dies before its commit leaves the
// cursor where it was, and another publishes the events again.
//
// Otherwise (SQLite) one process relays: see readAndPublish.
func (s *Store) PublishEvents(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var published int
	var err error
	if s.dialect.SkipLocked() != "" {
		published, err = s.claimAndPublish(ctx, limit, publish)
	} else {
		published, err = s.readAndPublish(ctx, limit, publish)
	}
	if pe := (publishError{}); errors.As(err, &pe) {
		return 0, fmt.Errorf("publish events: %w", pe.err)
	}
	if err != nil {
		// The events may have been published and not marked: they will be
		// published again, which subscribers' hubs drop.
		return published, fmt.Errorf("publish events: outbox: %w", err)
	}
	return published, nil
}

// markTimeout bounds marking published events and committing, which no
// cancellation interrupts (see claimAndPublish).
const markTimeout = 10 * time.Second

// claimAndPublish claims, publishes and marks events in one transaction.
// Until the events are published, ctx can end it (nothing is published, the
// claim is rolled back); once they are, marking them and committing go on
// whatever ctx does, within markTimeout: a relay stopped between publishing
// and committing would otherwise leave them unmarked, for another relay to
// publish again.
func (s *Store) claimAndPublish(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	// Where ids may commit out of order, first the horizon: every event up
	// to it is final, so the batch below has no gap that a commit still in
	// flight would fill in after it was published.
	through := int64(-1)
	if h, ok := s.dialect.(EventHorizon); ok {
		err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
			// NULL: it waited in the place of an interrupted relay, and
			// the next run establishes the horizon.
			for range 2 {
				var v sql.NullInt64
				if err := q.QueryRowContext(ctx, h.EstablishHorizon()).Scan(&v); err != nil || v.Valid {
					through = v.Int64
					return err
				}
			}
			return errors.New("no horizon after two runs")
		})
		if err != nil {
			return 0, fmt.Errorf("horizon: %w", err)
		}
	}
	var published int
	committing, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	err := s.writer.Write(committing, func(committing context.Context, tx Tx) error {
		published = 0
		// One relay at a time: two that published their batches at once
		// could hand a subscriber a later id before an earlier one, and a
		// stream cut in between would resume past the earlier.
		if pl := s.dialect.Lock(LockPublish); pl != "" {
			if _, err := tx.ExecContext(ctx, pl); err != nil {
				return err
			}
		}
		// The cursor is read under the lock, in the claim's statement: the
		// last relay's commit moved it before it released the lock.
		events, err := s.pendingEvents(ctx, tx, limit, -1, through)
		if err != nil || len(events) == 0 {
			return err
		}
		if err := publish(ctx, events); err != nil {
			return publishError{err}
		}
		// With the COMMIT where the transaction can: the relay's claim is
		// then two round trips, the claiming SELECT (with BEGIN) and this.
		if err := s.markPublished(committing, tx, events[len(events)-1].ID, true); err != nil {
			return err
		}
		published = len(events)
		return nil
	})
	return published, err
}

// markEvery is how often, at most, the relay of a database that one process
// relays records in the outbox which events it has published.
const markEvery = time.Second

// serialOutbox is the relay's place in an outbox that one process relays:
// the last event it published, and the last one marked published in the
// database (the cursor), once read from there (loaded).
type serialOutbox struct {
	mu     sync.Mutex
	loaded bool
	last   int64
	// published is last, for OutboxState, which must not wait for mu
	// while a batch is being published.
	published atomic.Int64
	marked    int64
	markedAt  time.Time
}

// readAndPublish publishes the events of a database that one process
// relays (SQLite). They are read outside any write transaction: the
// writer's transaction may hold other writes of its batch that have not
// committed, whose events must not be published yet.
//
// The relay remembers the last event it published and reads only the
// events after it: the database serialises its write transactions, each
// takes its event ids after those of every earlier commit, so no event can
// commit later with a smaller id. It marks them published in the database
// at most once a second (markEvery): marking each batch would cost a
// transaction, with its fsync, after every write that has an event, which
// slowed one client's writes by a third. So after a crash, the events of
// the last second are published again when the server starts (to the
// subscribers of the new process, which never saw them); Close marks them.
func (s *Store) readAndPublish(ctx context.Context, limit int, publish func(context.Context, []resourceapi.Event) error) (int, error) {
	s.serial.mu.Lock()
	defer s.serial.mu.Unlock()
	var events []resourceapi.Event
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		if !s.serial.loaded {
			var through int64
			if err := q.QueryRowContext(ctx, "SELECT through FROM events_published").Scan(&through); err != nil {
				return err
			}
			s.serial.last, s.serial.marked, s.serial.loaded = max(s.serial.last, through), through, true
		}
		var err error
		events, err = s.pendingEvents(ctx, q, limit, s.serial.last, -1)
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(events) > 0 {
		if err := publish(ctx, events); err != nil {
			return 0, publishError{err}
		}
		s.serial.last = events[len(events)-1].ID
		s.serial.published.Store(s.serial.last)
	}
	if time.Since(s.serial.markedAt) >= markEvery {
		if err := s.markSerial(ctx, nil); err != nil {
			return len(events), err
		}
	}
	return len(events), nil
}

// markSerial marks published, in a transaction of its own, the events the
// relay has published and not yet marked, and then runs then, if not nil,
// in the same transaction. The caller holds s.serial.mu.
func (s *Store) markSerial(ctx context.Context, then func(context.Context, Tx) error) error {
	last := s.serial.last
	if last == s.serial.marked && then == nil {
		return nil
	}
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		if last > s.serial.marked {
			if err := s.markPublished(ctx, tx, last, false); err != nil {
				return fmt.Errorf("mark published: %w", err)
			}
		}
		if then != nil {
			return then(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.serial.marked, s.serial.markedAt = last, time.Now()
	return nil
}

// FlushEvents marks published, where one process relays (SQLite), the
// events published since the last mark, so that a server that stops cleanly
// does not publish them again when it starts. Call it once the relay has
// stopped.
func (s *Store) FlushEvents(ctx context.Context) error {
	if s.dialect.SkipLocked() != "" {
		return nil
	}
	s.serial.mu.Lock()
	defer s.serial.mu.Unlock()
	return s.markSerial(ctx, nil)
}

// publishError carries a Publisher's error out of the outbox's transaction.
type publishError struct{ err error }

func (e publishError) Error() string { return e.err.Error() }

// publishedThrough is the outbox's cursor: every event up to it is
// published (migration 00047).
const publishedThrough = "(SELECT through FROM events_published)"

// pendingEvents reads the oldest events after id after (-1: after the
// cursor, read in the same statement) and up to through (the horizon; -1
// for no bound), at most limit, in id order.
func (s *Store) pendingEvents(ctx context.Context, q Querier, limit int, after, through int64) ([]resourceapi.Event, error) {
	b := s.newQuery()
	b.WriteString("SELECT " + s.eventColumns + " FROM events WHERE id > ")
	if after < 0 {
		b.WriteString(publishedThrough)
	} else {
		b.WriteString(b.Arg(after))
	}
	if through >= 0 {
		b.WriteString(" AND id <= " + b.Arg(through))
	}
	b.WriteString(" ORDER BY id LIMIT " + b.Arg(int64(limit)))
	rows, err := q.QueryContext(ctx, b.String(), b.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanEvents(rows)
}

// eventColumns returns the columns scanEvents reads.
func eventColumns(d Dialect) string {
	payload := "payload"
	if t, ok := d.(EventPayloadText); ok {
		payload = t.EventPayload()
	}
	return "id, name, alias, actor, resource, " + payload + ", created_at"
}

// scanEvents reads the rows of a query of Store.eventColumns.
func scanEvents(rows Rows) ([]resourceapi.Event, error) {
	var events []resourceapi.Event
	for rows.Next() {
		var ev resourceapi.Event
		var payload []byte
		at := value{f: timeField}
		if err := rows.Scan(&ev.ID, &ev.Name, &ev.Alias, &ev.Actor, &ev.Resource, &payload, &at); err != nil {
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

// markPublished moves the outbox's cursor to through; atCommit: with the
// COMMIT, where the transaction can send it there.
func (s *Store) markPublished(ctx context.Context, tx Tx, through int64, atCommit bool) error {
	mark := "UPDATE events_published SET through = " + s.dialect.Placeholder(1) + " WHERE through < " + s.dialect.Placeholder(2)
	if atCommit {
		return execAtCommit(ctx, tx, mark, through, through)
	}
	_, err := tx.ExecContext(ctx, mark, through, through)
	return err
}

// PurgeEvents implements resourceapi.Outbox. Where relays on several
// instances purge, each skips the rows another is deleting; where one
// process relays, the purge first marks what it has published.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	purge := func(ctx context.Context, tx Tx) error {
		q := s.newQuery()
		q.WriteString("DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id <= " + publishedThrough +
			" AND created_at < " + q.Arg(resourceapi.Timestamp(before)) + " ORDER BY id LIMIT " + q.Arg(int64(limit)) + s.dialect.SkipLocked() + ") RETURNING id")
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var through int64
		for n = 0; rows.Next(); n++ {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			through = max(through, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if through == 0 {
			return nil
		}
		// What resuming streams compare with (PurgedThrough), in the
		// purge's transaction.
		_, err = tx.ExecContext(ctx, "UPDATE events_purged SET through = "+s.dialect.Placeholder(1)+
			" WHERE through < "+s.dialect.Placeholder(2), through, through)
		return err
	}
	var err error
	if s.dialect.SkipLocked() != "" {
		err = s.writer.Write(ctx, purge)
	} else {
		s.serial.mu.Lock()
		err = s.markSerial(ctx, purge)
		s.serial.mu.Unlock()
	}
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return int(n), nil
}

var _ resourceapi.EventLog = (*Store)(nil)

// EventsAfter implements resourceapi.EventLog. It reads committed events,
// published or not: a client that resumes hears events its live stream
// would hear later, and drops the repeats by id. It reads only final
// events, so that nothing committed later can come before after: on
// SQLite, which runs one write transaction at a time, every committed one;
// on PostgreSQL, whose writers may commit ids out of order, those up to
// the horizon the relay last established (EventHorizon, migration 00028),
// which it records before it publishes anything after it: what is above
// it reaches a listener live.
func (s *Store) EventsAfter(ctx context.Context, after int64, limit int) ([]resourceapi.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	bound := ""
	if h, ok := s.dialect.(EventHorizon); ok {
		bound = " AND id <= " + h.Horizon()
	}
	var events []resourceapi.Event
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		rows, err := q.QueryContext(ctx, "SELECT "+s.eventColumns+" FROM events WHERE id > "+s.dialect.Placeholder(1)+bound+
			" ORDER BY id LIMIT "+s.dialect.Placeholder(2), after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		events, err = scanEvents(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	return events, nil
}

// PurgedThrough implements resourceapi.EventLog.
func (s *Store) PurgedThrough(ctx context.Context) (int64, error) {
	var through int64
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRowContext(ctx, "SELECT through FROM events_purged").Scan(&through)
	})
	if err != nil {
		return 0, fmt.Errorf("events purged: %w", err)
	}
	return through, nil
}
