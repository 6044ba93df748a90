package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.WebhookStore = (*Store)(nil)

// errWebhookNotFound is the error of an id that names no endpoint.
var errWebhookNotFound = resourceapi.Errorf(resourceapi.CodeNotFound, "Webhook not found")

// errDeliveryNotFound is the error of an id that names no delivery of the
// endpoint.
var errDeliveryNotFound = resourceapi.Errorf(resourceapi.CodeNotFound, "Delivery not found")

const webhookColumns = "id, url, types, enabled, disabled_reason, failing_since, secret, previous_secret, previous_until, created_at, updated_at"

// optTime binds a time that may be zero (NULL).
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return resourceapi.Timestamp(t)
}

func timeOf(v value) time.Time {
	t, _ := v.v.(time.Time)
	return t
}

func scanWebhook(row interface{ Scan(...any) error }) (resourceapi.Webhook, error) {
	var w resourceapi.Webhook
	var types string
	failing, prev, created, updated := value{f: timeField}, value{f: timeField}, value{f: timeField}, value{f: timeField}
	if err := row.Scan(&w.ID, &w.URL, &types, &w.Enabled, &w.DisabledReason, &failing, &w.Secret, &w.PreviousSecret, &prev, &created, &updated); err != nil {
		return w, err
	}
	list := value{f: &resourceapi.Field{Type: resourceapi.TypeStrings}}
	if err := list.Scan(types); err != nil {
		return w, err
	}
	w.Types = list.v.([]string)
	w.FailingSince, w.PreviousUntil, w.CreatedAt, w.UpdatedAt = timeOf(failing), timeOf(prev), timeOf(created), timeOf(updated)
	return w, nil
}

// CreateWebhook implements resourceapi.WebhookStore.
func (s *Store) CreateWebhook(ctx context.Context, w resourceapi.Webhook) (resourceapi.Webhook, error) {
	var out resourceapi.Webhook
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		now := resourceapi.Timestamp(s.now())
		if w.Enabled {
			if err := s.forgetUnhooked(ctx, tx, now); err != nil {
				return err
			}
		}
		q := s.newQuery()
		q.WriteString("INSERT INTO webhooks (url, types, enabled, disabled_reason, failing_since, secret, previous_secret, previous_until, created_at, updated_at) VALUES (" +
			join([]string{q.Arg(w.URL), q.Arg(w.Types), q.Arg(w.Enabled), q.Arg(w.DisabledReason), q.Arg(optTime(w.FailingSince)),
				q.Arg(w.Secret), q.Arg(w.PreviousSecret), q.Arg(optTime(w.PreviousUntil)), q.Arg(now), q.Arg(now)}) +
			") RETURNING " + webhookColumns)
		var err error
		out, err = scanWebhook(tx.QueryRowContext(ctx, q.String(), q.args...))
		return err
	})
	if err != nil {
		return resourceapi.Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	return out, nil
}

// forgetUnhooked marks fanned out, when no endpoint is enabled, the events
// that were not (none was there to take them): an endpoint about to be
// enabled receives the events after it, not a backlog from before.
func (s *Store) forgetUnhooked(ctx context.Context, tx Tx, now time.Time) error {
	q := s.newQuery()
	q.WriteString("UPDATE events SET hooked_at = " + q.Arg(now) + " WHERE hooked_at IS NULL AND NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled = " +
		s.dialect.Bool(true) + ")")
	_, err := tx.ExecContext(ctx, q.String(), q.args...)
	return err
}

// Webhooks implements resourceapi.WebhookStore.
func (s *Store) Webhooks(ctx context.Context, limit int) ([]resourceapi.Webhook, error) {
	var out []resourceapi.Webhook
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		out, err = s.webhooks(ctx, q, "", limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return out, nil
}

// webhooks reads the endpoints matching where (after WHERE; "" for all),
// in id order, at most limit.
func (s *Store) webhooks(ctx context.Context, q Querier, where string, limit int) ([]resourceapi.Webhook, error) {
	if where != "" {
		where = " WHERE " + where
	}
	rows, err := q.QueryContext(ctx, "SELECT "+webhookColumns+" FROM webhooks"+where+" ORDER BY id LIMIT "+s.dialect.Placeholder(1), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []resourceapi.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Webhook implements resourceapi.WebhookStore.
func (s *Store) Webhook(ctx context.Context, id int64) (resourceapi.Webhook, error) {
	var w resourceapi.Webhook
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		w, err = scanWebhook(q.QueryRowContext(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = "+s.dialect.Placeholder(1), id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return resourceapi.Webhook{}, errWebhookNotFound
	}
	if err != nil {
		return resourceapi.Webhook{}, fmt.Errorf("webhook %d: %w", id, err)
	}
	return w, nil
}

// UpdateWebhook implements resourceapi.WebhookStore.
func (s *Store) UpdateWebhook(ctx context.Context, id int64, change func(*resourceapi.Webhook) error) (resourceapi.Webhook, error) {
	var out resourceapi.Webhook
	var outcome error
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		outcome = nil
		w, err := scanWebhook(tx.QueryRowContext(ctx, "SELECT "+webhookColumns+" FROM webhooks WHERE id = "+s.dialect.Placeholder(1)+s.dialect.ForUpdate(), id))
		if errors.Is(err, sql.ErrNoRows) {
			outcome = errWebhookNotFound
			return outcome
		}
		if err != nil {
			return err
		}
		was := w.Enabled
		if err := change(&w); err != nil {
			outcome = err
			return err
		}
		if w.Enabled && !was {
			if err := s.forgetUnhooked(ctx, tx, resourceapi.Timestamp(s.now())); err != nil {
				return err
			}
		}
		q := s.newQuery()
		q.WriteString("UPDATE webhooks SET url = " + q.Arg(w.URL) + ", types = " + q.Arg(w.Types) + ", enabled = " + q.Arg(w.Enabled) +
			", disabled_reason = " + q.Arg(w.DisabledReason) + ", failing_since = " + q.Arg(optTime(w.FailingSince)) +
			", secret = " + q.Arg(w.Secret) + ", previous_secret = " + q.Arg(w.PreviousSecret) +
			", previous_until = " + q.Arg(optTime(w.PreviousUntil)) + ", updated_at = " + q.Arg(resourceapi.Timestamp(s.now())) +
			" WHERE id = " + q.Arg(id) + " RETURNING " + webhookColumns)
		out, err = scanWebhook(tx.QueryRowContext(ctx, q.String(), q.args...))
		return err
	})
	if outcome != nil && errors.Is(err, outcome) {
		return resourceapi.Webhook{}, outcome
	}
	if err != nil {
		return resourceapi.Webhook{}, fmt.Errorf("update webhook %d: %w", id, err)
	}
	return out, nil
}

// DeleteWebhook implements resourceapi.WebhookStore.
func (s *Store) DeleteWebhook(ctx context.Context, id int64) error {
	var n int64
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		// The attempts and deliveries first: SQLite enforces the cascade
		// only where foreign keys are on.
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = "+
			s.dialect.Placeholder(1)+")", id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE webhook_id = "+s.dialect.Placeholder(1), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM webhooks WHERE id = "+s.dialect.Placeholder(1), id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("delete webhook %d: %w", id, err)
	}
	if n == 0 {
		return errWebhookNotFound
	}
	return nil
}

const deliveryColumns = "id, webhook_id, event_id, event_type, message_id, record_key, body, state, attempts, last_status, last_latency_ms, " +
	"last_response, last_attempt_at, first_attempt_at, next_attempt_at, delivered_at, replay_of, created_at"

func scanDeliveries(rows Rows) ([]resourceapi.WebhookDelivery, error) {
	defer rows.Close()
	out := []resourceapi.WebhookDelivery{}
	for rows.Next() {
		var d resourceapi.WebhookDelivery
		var body string
		var latency int64
		last, first, next, delivered, created := value{f: timeField}, value{f: timeField}, value{f: timeField}, value{f: timeField}, value{f: timeField}
		if err := rows.Scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.MessageID, &d.RecordKey, &body, &d.State, &d.Attempts,
			&d.LastStatus, &latency, &d.LastResponse, &last, &first, &next, &delivered, &d.ReplayOf, &created); err != nil {
			return nil, err
		}
		d.Body, d.LastLatency = []byte(body), time.Duration(latency)*time.Millisecond
		d.LastAttemptAt, d.FirstAttemptAt, d.NextAttemptAt, d.DeliveredAt, d.CreatedAt = timeOf(last), timeOf(first), timeOf(next), timeOf(delivered), timeOf(created)
		out = append(out, d)
	}
	return out, rows.Err()
}

// webhookExists returns errWebhookNotFound when there is no endpoint id.
func (s *Store) webhookExists(ctx context.Context, q Querier, id int64) error {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM webhooks WHERE id = "+s.dialect.Placeholder(1), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errWebhookNotFound
	}
	return err
}

// WebhookDeliveries implements resourceapi.WebhookStore.
func (s *Store) WebhookDeliveries(ctx context.Context, id, before int64, limit int) ([]resourceapi.WebhookDelivery, error) {
	if before <= 0 {
		before = resourceapi.MaxID + 1
	}
	var out []resourceapi.WebhookDelivery
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		if err := s.webhookExists(ctx, q, id); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, "SELECT "+deliveryColumns+" FROM webhook_deliveries WHERE webhook_id = "+s.dialect.Placeholder(1)+
			" AND id < "+s.dialect.Placeholder(2)+" ORDER BY id DESC LIMIT "+s.dialect.Placeholder(3), id, before, limit)
		if err != nil {
			return err
		}
		if out, err = scanDeliveries(rows); err != nil {
			return err
		}
		return s.attemptHistory(ctx, q, out)
	})
	if errors.Is(err, errWebhookNotFound) {
		return nil, errWebhookNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("webhook %d deliveries: %w", id, err)
	}
	return out, nil
}

// WebhookAttemptsKept returns how many attempts the delivery log keeps,
// all endpoints together: they go with their deliveries (purged after
// their retention, or with their endpoint), so this stays bounded.
func (s *Store) WebhookAttemptsKept(ctx context.Context) (int64, error) {
	var n int64
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_attempts").Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("webhook attempts kept: %w", err)
	}
	return n, nil
}

// attemptHistory fills the History of deliveries.
func (s *Store) attemptHistory(ctx context.Context, q Querier, deliveries []resourceapi.WebhookDelivery) error {
	if len(deliveries) == 0 {
		return nil
	}
	ids := make([]string, len(deliveries))
	at := make(map[int64]int, len(deliveries))
	for i, d := range deliveries {
		ids[i] = strconv.FormatInt(d.ID, 10)
		at[d.ID] = i
	}
	rows, err := q.QueryContext(ctx, "SELECT delivery_id, attempted_at, status, latency_ms, response, state FROM webhook_attempts WHERE delivery_id IN ("+
		strings.Join(ids, ", ")+") ORDER BY delivery_id, id")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a resourceapi.WebhookAttempt
		var latency int64
		when := value{f: timeField}
		if err := rows.Scan(&a.DeliveryID, &when, &a.Status, &latency, &a.Response, &a.State); err != nil {
			return err
		}
		a.At, a.Latency = timeOf(when), time.Duration(latency)*time.Millisecond
		d := &deliveries[at[a.DeliveryID]]
		d.History = append(d.History, a)
	}
	return rows.Err()
}

// ReplayWebhookDeliveries implements resourceapi.WebhookStore.
func (s *Store) ReplayWebhookDeliveries(ctx context.Context, id, delivery int64, from, to time.Time, limit int) ([]resourceapi.WebhookDelivery, error) {
	var out []resourceapi.WebhookDelivery
	var outcome error
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		out, outcome = []resourceapi.WebhookDelivery{}, nil
		if err := s.webhookExists(ctx, tx, id); err != nil {
			outcome = err
			return err
		}
		q := s.newQuery()
		q.WriteString("SELECT " + deliveryColumns + " FROM webhook_deliveries WHERE webhook_id = " + q.Arg(id))
		if delivery != 0 {
			q.WriteString(" AND id = " + q.Arg(delivery))
		} else {
			q.WriteString(" AND created_at >= " + q.Arg(resourceapi.Timestamp(from)) + " AND created_at < " + q.Arg(resourceapi.Timestamp(to)))
		}
		q.WriteString(" ORDER BY id LIMIT " + q.Arg(int64(limit)))
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return err
		}
		src, err := scanDeliveries(rows)
		if err != nil {
			return err
		}
		if delivery != 0 && len(src) == 0 {
			outcome = errDeliveryNotFound
			return outcome
		}
		now := resourceapi.Timestamp(s.now())
		for _, d := range src {
			q := s.newQuery()
			q.WriteString("INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, message_id, record_key, body, state, next_attempt_at, replay_of, created_at) VALUES (" +
				join([]string{q.Arg(d.WebhookID), q.Arg(d.EventID), q.Arg(d.EventType), q.Arg(d.MessageID), q.Arg(d.RecordKey), q.Arg(string(d.Body)),
					q.Arg(resourceapi.DeliveryPending), q.Arg(now), q.Arg(d.ID), q.Arg(now)}) + ") RETURNING " + deliveryColumns)
			rows, err := tx.QueryContext(ctx, q.String(), q.args...)
			if err != nil {
				return err
			}
			one, err := scanDeliveries(rows)
			if err != nil {
				return err
			}
			out = append(out, one...)
		}
		return nil
	})
	if outcome != nil && errors.Is(err, outcome) {
		return nil, outcome
	}
	if err != nil {
		return nil, fmt.Errorf("replay webhook %d deliveries: %w", id, err)
	}
	return out, nil
}

// FanOutWebhookEvents implements resourceapi.WebhookStore: a round that
// only fans out (see RunWebhookRound and fanOut).
func (s *Store) FanOutWebhookEvents(ctx context.Context, limit int, fan func([]resourceapi.Webhook, []resourceapi.Event) ([]resourceapi.WebhookDelivery, error)) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.runWebhookRound(ctx, resourceapi.WebhookRound{FanOut: limit, Fan: fan}, 0)
	if err != nil {
		return 0, fmt.Errorf("fan out events to webhooks: %w", err)
	}
	return res.FannedOut, nil
}

// ClaimWebhookDeliveries implements resourceapi.WebhookStore: a round that
// only claims.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, room func(int64) int) ([]resourceapi.WebhookDelivery, error) {
	res, err := s.runWebhookRound(ctx, resourceapi.WebhookRound{Owner: owner, Room: room, Now: now, Lease: lease}, 0)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return res.Claimed, nil
}

// FinishWebhookDeliveries implements resourceapi.WebhookStore: a round
// that only records attempts.
func (s *Store) FinishWebhookDeliveries(ctx context.Context, attempts []resourceapi.WebhookAttempt) error {
	if _, err := s.runWebhookRound(ctx, resourceapi.WebhookRound{Attempts: attempts}, 0); err != nil {
		return fmt.Errorf("finish %d webhook deliveries: %w", len(attempts), err)
	}
	return nil
}

// ReleaseWebhookDeliveries implements resourceapi.WebhookStore: a round
// that only gives deliveries back.
func (s *Store) ReleaseWebhookDeliveries(ctx context.Context, owner string, ids []int64) error {
	if _, err := s.runWebhookRound(ctx, resourceapi.WebhookRound{Owner: owner, Release: ids}, 0); err != nil {
		return fmt.Errorf("release webhook deliveries: %w", err)
	}
	return nil
}

// roundBeside is how long a worker's round waits to join the transaction
// of other writes (Beside): on SQLite, a round then adds no commit, and no
// fsync, to the requests' writes; it commits alone when none comes.
const roundBeside = 25 * time.Millisecond

// RunWebhookRound implements resourceapi.WebhookStore. A round with
// nothing to record reads first whether there is anything to fan out or
// claim (an endpoint enabled and an event not fanned out; an endpoint with
// a claimable delivery and room for it), and writes nothing when there is
// not: a write transaction per event would cost every write its share of
// an fsync. Otherwise one transaction does it all, which on SQLite waits
// up to roundBeside for a request's write to commit with (Beside).
func (s *Store) RunWebhookRound(ctx context.Context, r resourceapi.WebhookRound) (resourceapi.WebhookRoundResult, error) {
	return s.runWebhookRound(ctx, r, roundBeside)
}

// runWebhookRound is RunWebhookRound, whose write waits up to beside to
// join others' (0: it does not wait).
func (s *Store) runWebhookRound(ctx context.Context, r resourceapi.WebhookRound, beside time.Duration) (resourceapi.WebhookRoundResult, error) {
	now := resourceapi.Timestamp(r.Now)
	if r.Fan == nil {
		r.FanOut = 0
	}
	// Room is called once per endpoint, though a read or a write may run
	// more than once.
	rooms := map[int64]int{}
	room := func(hook int64) int {
		n, ok := rooms[hook]
		if !ok {
			n = max(r.Room(hook), 0)
			rooms[hook] = n
		}
		return n
	}
	var res resourceapi.WebhookRoundResult
	// The round reads first what there is to fan out (fanWork) and which
	// endpoints have a delivery to claim (claimHooks), outside the write.
	// Inside it, it claims from those, and from the endpoints where an
	// attempt it records lets a record's next delivery go (unblocked),
	// rather than from every enabled endpoint: on SQLite the claim runs
	// in a request's transaction, and it is the round's dearest
	// statement (it walks the endpoint's pending deliveries, those under
	// way included). Given-back deliveries may be claimed by any
	// endpoint's claim, so a round that gives some back claims from all.
	// A delivery that comes due between the read and the write is
	// claimed by the next round (at the latest at the next poll).
	writes := len(r.Attempts) > 0 || len(r.Release) > 0
	claimAll := len(r.Release) > 0
	var claimHooks []int64
	fanWork := false
	if !writes && r.FanOut == 0 && r.Room == nil {
		return res, nil
	}
	if r.FanOut > 0 || (r.Room != nil && !claimAll) {
		err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
			claimHooks, fanWork = nil, false
			var err error
			if r.FanOut > 0 {
				if fanWork, err = s.fanOutWork(ctx, q); err != nil {
					return err
				}
			}
			if r.Room != nil && !claimAll {
				claimHooks, err = s.claimWork(ctx, q, now, room)
			}
			return err
		})
		if err != nil {
			return res, fmt.Errorf("webhook round: %w", err)
		}
	}
	if !writes && !fanWork && len(claimHooks) == 0 {
		return res, nil
	}
	// The events to fan out, the endpoints and the deliveries are read and
	// made before the write, so that the transaction, which on SQLite is
	// a request's, only checks that they are still the ones to fan out
	// (fanOut) and writes.
	var pre *fanned
	if r.FanOut > 0 && fanWork {
		var err error
		if pre, err = s.preFan(ctx, r.FanOut, r.Fan); err != nil {
			return res, fmt.Errorf("webhook round: %w", err)
		}
	}
	wctx := ctx
	if beside > 0 {
		wctx = Beside(ctx, beside)
	}
	err := s.writer.Write(wctx, func(ctx context.Context, tx Tx) error {
		res = resourceapi.WebhookRoundResult{Wrote: true}
		// left: what remains of each endpoint's room in this run.
		left := map[int64]int{}
		take := func(hook int64, n int) int {
			if r.Room == nil {
				return 0
			}
			if _, ok := left[hook]; !ok {
				left[hook] = room(hook)
			}
			n = min(n, left[hook])
			left[hook] -= n
			return n
		}
		unblocked, err := s.finishAttempts(ctx, tx, r.Attempts)
		if err != nil {
			return err
		}
		if err := s.releaseDeliveries(ctx, tx, r.Owner, r.Release); err != nil {
			return err
		}
		claimNow := now
		if r.FanOut > 0 {
			n, at, claimed, err := s.fanOut(ctx, tx, r.FanOut, r.Fan, pre, r.Owner, r.Lease, take)
			if err != nil {
				return err
			}
			// The deliveries just made are due when they were made, by
			// the store's clock.
			res.FannedOut, res.Claimed = n, claimed
			if at.After(claimNow) {
				claimNow = at
			}
		}
		if r.Room == nil {
			return nil
		}
		hooks := claimHooks
		for _, h := range unblocked {
			if !slices.Contains(hooks, h) && room(h) > 0 {
				hooks = append(hooks, h)
			}
		}
		slices.Sort(hooks)
		if claimAll {
			if hooks, err = s.enabledWebhooks(ctx, tx); err != nil {
				return err
			}
		}
		more, err := s.claimDeliveries(ctx, tx, r.Owner, claimNow, r.Lease, hooks, take)
		if err != nil {
			return err
		}
		res.Claimed = append(res.Claimed, more...)
		// RETURNING gives no order.
		slices.SortFunc(res.Claimed, func(a, b resourceapi.WebhookDelivery) int { return cmp.Compare(a.ID, b.ID) })
		return nil
	})
	if err != nil {
		return resourceapi.WebhookRoundResult{}, fmt.Errorf("webhook round: %w", err)
	}
	return res, nil
}

// fanned is a fan-out read and made before its write transaction: the
// enabled endpoints, the oldest events not fanned out, and their
// deliveries.
type fanned struct {
	hooks      []resourceapi.Webhook
	events     []resourceapi.Event
	deliveries []resourceapi.WebhookDelivery
}

// preFan reads the enabled endpoints and the oldest events not fanned out,
// at most limit, and makes their deliveries with fan, outside any write
// transaction; nil when there is nothing to fan out.
func (s *Store) preFan(ctx context.Context, limit int, fan func([]resourceapi.Webhook, []resourceapi.Event) ([]resourceapi.WebhookDelivery, error)) (*fanned, error) {
	var f fanned
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if f.hooks, err = s.webhooks(ctx, q, "enabled = "+s.dialect.Bool(true), resourceapi.MaxWebhooks); err != nil || len(f.hooks) == 0 {
			return err
		}
		rows, err := q.QueryContext(ctx, "SELECT "+s.eventColumns+" FROM events WHERE hooked_at IS NULL ORDER BY id LIMIT "+s.dialect.Placeholder(1), limit)
		if err != nil {
			return err
		}
		f.events, err = scanEvents(rows)
		rows.Close()
		return err
	})
	if err != nil || len(f.hooks) == 0 || len(f.events) == 0 {
		return nil, err
	}
	if f.deliveries, err = fan(f.hooks, f.events); err != nil {
		return nil, err
	}
	return &f, nil
}

// still says, in tx (which holds the fan-out's lock), whether f is still
// what fanOut would read: the same enabled endpoints with the same types,
// and its events the oldest not fanned out, none before or between them
// (on PostgreSQL an event can commit after a greater id). Then its
// deliveries are the ones to make; otherwise fanOut reads and makes them
// again. Both reads are of ids and types only.
func (f *fanned) still(ctx context.Context, s *Store, tx Querier) (bool, error) {
	if f == nil {
		return false, nil
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, types FROM webhooks WHERE enabled = "+s.dialect.Bool(true)+" ORDER BY id")
	if err != nil {
		return false, err
	}
	i, same := 0, true
	for rows.Next() {
		var id int64
		types := value{f: &resourceapi.Field{Type: resourceapi.TypeStrings}}
		if err := rows.Scan(&id, &types); err != nil {
			rows.Close()
			return false, err
		}
		if list, _ := types.v.([]string); i >= len(f.hooks) || f.hooks[i].ID != id || !slices.Equal(list, f.hooks[i].Types) {
			same = false
		}
		i++
	}
	rows.Close()
	if err := rows.Err(); err != nil || !same || i != len(f.hooks) {
		return false, err
	}
	rows, err = tx.QueryContext(ctx, "SELECT id FROM events WHERE hooked_at IS NULL ORDER BY id LIMIT "+s.dialect.Placeholder(1), len(f.events))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	i = 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return false, err
		}
		if i >= len(f.events) || f.events[i].ID != id {
			same = false
		}
		i++
	}
	return same && i == len(f.events), rows.Err()
}

// fanOutWork says whether an endpoint is enabled and an event waits to be
// fanned out.
func (s *Store) fanOutWork(ctx context.Context, q Querier) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM webhooks WHERE enabled = "+s.dialect.Bool(true)+
		" AND EXISTS (SELECT 1 FROM events WHERE hooked_at IS NULL) LIMIT 1").Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// enabledWebhooks returns the ids of the enabled endpoints, in id order.
func (s *Store) enabledWebhooks(ctx context.Context, q Querier) ([]int64, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM webhooks WHERE enabled = "+s.dialect.Bool(true)+" ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// fanOut takes the oldest events not yet fanned out, at most limit, calls
// fan with them and the enabled endpoints, stores the deliveries it returns
// (due at once) and marks the events fanned out, in tx. It leases to owner
// as it inserts them, until lease from now, the deliveries that may be
// claimed at once (each the oldest pending delivery of its record to its
// endpoint), as many of each endpoint's as take(endpoint, n) grants: a
// delivery claimed as it is made costs no update of its row. It returns
// how many events it took, when the deliveries are due, and those it
// leased.
//
// One transaction fans out at a time, across instances (Lock(LockFanOut) on
// PostgreSQL; SQLite serialises write transactions), and reads the events
// after it has the lock, so that a record's deliveries are created in the
// order of its events: with instances taking distinct events at once (SKIP
// LOCKED), one could fan out a record's update while another still held
// its creation, and the update's delivery, with the lower id, would go
// first. Events are read in the transaction that marks them, so an event
// that commits after a later one is taken when it is there, never skipped
// (a record's own events commit in id order: its row lock orders them).
func (s *Store) fanOut(ctx context.Context, tx Tx, limit int, fan func([]resourceapi.Webhook, []resourceapi.Event) ([]resourceapi.WebhookDelivery, error),
	pre *fanned, owner string, lease time.Duration, take func(int64, int) int) (int, time.Time, []resourceapi.WebhookDelivery, error) {
	fail := func(err error) (int, time.Time, []resourceapi.WebhookDelivery, error) {
		return 0, time.Time{}, nil, err
	}
	// Without work, no lock: a round that records attempts does not hold
	// other instances' fan-outs back.
	if work, err := s.fanOutWork(ctx, tx); err != nil || !work {
		return fail(err)
	}
	if lock := s.dialect.Lock(LockFanOut); lock != "" {
		if _, err := tx.ExecContext(ctx, lock); err != nil {
			return fail(err)
		}
	}
	now := resourceapi.Timestamp(s.now())
	var events []resourceapi.Event
	var deliveries []resourceapi.WebhookDelivery
	if same, err := pre.still(ctx, s, tx); err != nil {
		return fail(err)
	} else if same {
		events, deliveries = pre.events, pre.deliveries
	} else {
		hooks, err := s.webhooks(ctx, tx, "enabled = "+s.dialect.Bool(true), resourceapi.MaxWebhooks)
		if err != nil || len(hooks) == 0 {
			return fail(err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+s.eventColumns+" FROM events WHERE hooked_at IS NULL ORDER BY id LIMIT "+
			s.dialect.Placeholder(1), limit)
		if err != nil {
			return fail(err)
		}
		events, err = scanEvents(rows)
		rows.Close()
		if err != nil || len(events) == 0 {
			return fail(err)
		}
		if deliveries, err = fan(hooks, events); err != nil {
			return fail(err)
		}
	}
	// waiting: the records (endpoint and record key) whose next delivery
	// must wait for one pending before it, in the table or made earlier
	// in this batch.
	type key struct {
		hook   int64
		record string
	}
	waiting := map[key]bool{}
	if len(deliveries) > 0 {
		q := s.newQuery()
		var hookIDs []int64
		var records []string
		seen := map[string]bool{}
		for _, d := range deliveries {
			if !slices.Contains(hookIDs, d.WebhookID) {
				hookIDs = append(hookIDs, d.WebhookID)
			}
			if !seen[d.RecordKey] {
				seen[d.RecordKey] = true
				records = append(records, d.RecordKey)
			}
		}
		// The index of pending deliveries leads with the endpoint.
		// Placeholders are positional on SQLite: the values are bound in
		// the order of the text (the keys bound before the endpoints
		// matched nothing, and a record's next event was claimed while
		// its earlier delivery was pending).
		q.WriteString("SELECT DISTINCT webhook_id, record_key FROM webhook_deliveries WHERE webhook_id IN (" + q.ints(hookIDs) + ") AND record_key IN (")
		keys := make([]string, len(records))
		for i, k := range records {
			keys[i] = q.Arg(k)
		}
		q.WriteString(strings.Join(keys, ", ") + ") AND state = " + pending)
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return fail(err)
		}
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.hook, &k.record); err != nil {
				rows.Close()
				return fail(err)
			}
			waiting[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	// One statement inserts a chunk of deliveries, those claimed leased
	// as they are inserted.
	type made struct{ hook, event int64 }
	var claimed []resourceapi.WebhookDelivery
	at := map[made]int{} // the claimed deliveries, by endpoint and event
	for chunk := range slices.Chunk(deliveries, deliveryChunk) {
		q := s.newQuery()
		q.WriteString("INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, message_id, record_key, body, state, next_attempt_at, created_at, lease_owner, lease_until) VALUES ")
		for i, d := range chunk {
			k := key{d.WebhookID, d.RecordKey}
			claim := !waiting[k] && take(d.WebhookID, 1) == 1
			waiting[k] = true
			owned, until := "", any(nil)
			if claim {
				owned, until = owner, resourceapi.Timestamp(now.Add(lease))
				d.State, d.NextAttemptAt, d.CreatedAt = resourceapi.DeliveryPending, now, now
				at[made{d.WebhookID, d.EventID}] = len(claimed)
				claimed = append(claimed, d)
			}
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + join([]string{q.Arg(d.WebhookID), q.Arg(d.EventID), q.Arg(d.EventType), q.Arg(d.MessageID), q.Arg(d.RecordKey), q.Arg(string(d.Body)),
				pending, q.Arg(now), q.Arg(now), q.Arg(owned), q.Arg(until)}) + ")")
		}
		// RETURNING gives no order: the rows are told apart by endpoint
		// and event (a fan-out makes one delivery of each pair).
		q.WriteString(" RETURNING id, webhook_id, event_id")
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return fail(err)
		}
		for rows.Next() {
			var id int64
			var m made
			if err := rows.Scan(&id, &m.hook, &m.event); err != nil {
				rows.Close()
				return fail(err)
			}
			if i, ok := at[m]; ok {
				claimed[i].ID = id
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = strconv.FormatInt(ev.ID, 10)
	}
	q := s.newQuery()
	q.WriteString("UPDATE events SET hooked_at = " + q.Arg(now) + " WHERE id IN (" + strings.Join(ids, ", ") + ")")
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return fail(err)
	}
	return len(events), now, claimed, nil
}

// deliveryChunk bounds the deliveries one statement inserts (10 values
// each: SQLite binds at most 32,766, PostgreSQL 65,535).
const deliveryChunk = 500

// pending is the pending state as a literal, not a bound value: SQLite
// uses a partial index (WHERE state = 'pending') only for a query that
// names that state literally, and a bound one made every claim walk the
// whole delivery log of its endpoint (webhook_deliveries_log), delivered
// deliveries included (TestClaimPlans).
const pending = "'" + resourceapi.DeliveryPending + "'"

// claimable is the condition (on webhook_deliveries d) of a delivery that
// may be claimed at now: pending, due, leased to no one (or its lease
// expired), of an enabled endpoint, and the oldest pending delivery of its
// record to its endpoint (so that a record's deliveries go in order).
// Placeholders are positional on SQLite: every value is bound where it is
// used. d is to be read through the index of pending deliveries
// (pendingDeliveries).
func (s *Store) claimable(q *Query, now time.Time) string {
	return "d.state = " + pending +
		" AND d.next_attempt_at <= " + q.Arg(now) + " AND (d.lease_until IS NULL OR d.lease_until < " + q.Arg(now) + ")" +
		" AND EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.enabled = " + s.dialect.Bool(true) + ")" +
		" AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id AND e.record_key = d.record_key" +
		" AND e.state = " + pending + " AND e.id < d.id)"
}

// pendingDeliveries is webhook_deliveries d read through the index of its
// pending deliveries: without statistics SQLite prefers the log's index
// (webhook_id, id), which spares it a sort of the few pending deliveries
// but walks all the endpoint's delivered ones.
func (s *Store) pendingDeliveries() string {
	return "webhook_deliveries d" + s.dialect.IndexedBy("webhook_deliveries_pending")
}

// claimWork returns the enabled endpoints that have a delivery to claim at
// now and room for it.
func (s *Store) claimWork(ctx context.Context, tx Querier, now time.Time, room func(int64) int) ([]int64, error) {
	q := s.newQuery()
	q.WriteString("SELECT w.id FROM webhooks w WHERE w.enabled = " + s.dialect.Bool(true) +
		" AND EXISTS (SELECT 1 FROM " + s.pendingDeliveries() + " WHERE d.webhook_id = w.id AND " + s.claimable(q, now) + ") ORDER BY w.id")
	rows, err := tx.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if room(id) > 0 {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// claimDeliveries leases to owner, in tx, the claimable deliveries of each
// of hooks, as many as take(hook, all) grants, and returns them.
func (s *Store) claimDeliveries(ctx context.Context, tx Tx, owner string, now time.Time, lease time.Duration, hooks []int64, take func(int64, int) int) ([]resourceapi.WebhookDelivery, error) {
	var out []resourceapi.WebhookDelivery
	for _, hook := range hooks {
		n := take(hook, maxClaim)
		if n <= 0 {
			continue
		}
		q := s.newQuery()
		q.WriteString("UPDATE webhook_deliveries SET lease_owner = " + q.Arg(owner) + ", lease_until = " + q.Arg(now.Add(lease)) +
			" WHERE id IN (SELECT d.id FROM " + s.pendingDeliveries() + " WHERE d.webhook_id = " + q.Arg(hook) + " AND " + s.claimable(q, now) +
			" ORDER BY d.id LIMIT " + q.Arg(int64(n)) + s.dialect.SkipLocked() + ") RETURNING " + deliveryColumns)
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return nil, err
		}
		got, err := scanDeliveries(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		// What the claim did not find is room left.
		take(hook, -(n - len(got)))
	}
	return out, nil
}

// maxClaim bounds the deliveries of one endpoint one claim takes.
const maxClaim = 10000

// finishAttempts records attempts in tx: each updates its delivery (state,
// count, last attempt) and releases its lease, is kept in the attempt log,
// and moves its endpoint's failing_since. An attempt whose lease is no
// longer its Owner's records nothing.
func (s *Store) finishAttempts(ctx context.Context, tx Tx, attempts []resourceapi.WebhookAttempt) (unblocked []int64, err error) {
	if len(attempts) == 0 {
		return nil, nil
	}
	attempts = slices.Clone(attempts)
	slices.SortStableFunc(attempts, func(a, b resourceapi.WebhookAttempt) int { return a.At.Compare(b.At) })
	// failing: what the batch does to each endpoint's FailingSince, in
	// the order of the attempts: cleared by a success, set by the
	// first failure after it (or by the first, when none succeeded
	// and it is not set yet).
	type failing struct {
		succeeded bool
		since     time.Time
	}
	hooks := map[int64]*failing{}
	var order []int64
	recorded := map[int64]int64{} // delivery -> endpoint, of the attempts whose lease held
	ended := map[int64][]string{} // endpoint -> the records of its deliveries that ended (delivered, dead)
	for chunk := range slices.Chunk(attempts, attemptChunk) {
		if err := s.recordAttempts(ctx, tx, chunk, recorded, ended); err != nil {
			return nil, err
		}
	}
	log := s.newQuery()
	log.WriteString("INSERT INTO webhook_attempts (delivery_id, attempted_at, status, latency_ms, response, state) VALUES ")
	logged := 0
	for _, a := range attempts {
		hook, ok := recorded[a.DeliveryID]
		if !ok {
			continue // the lease expired and another instance took it
		}
		if logged == attemptChunk {
			if _, err := tx.ExecContext(ctx, log.String(), log.args...); err != nil {
				return nil, err
			}
			log = s.newQuery()
			log.WriteString("INSERT INTO webhook_attempts (delivery_id, attempted_at, status, latency_ms, response, state) VALUES ")
			logged = 0
		}
		at := resourceapi.Timestamp(a.At)
		if logged > 0 {
			log.WriteString(", ")
		}
		logged++
		log.WriteString("(" + join([]string{log.Arg(a.DeliveryID), log.Arg(at), log.Arg(int64(a.Status)), log.Arg(a.Latency.Milliseconds()),
			log.Arg(a.Response), log.Arg(a.State)}) + ")")
		f := hooks[hook]
		if f == nil {
			f = &failing{}
			hooks[hook] = f
			order = append(order, hook)
		}
		switch {
		case a.State == resourceapi.DeliveryDelivered:
			f.succeeded, f.since = true, time.Time{}
		case f.since.IsZero():
			f.since = at
		}
	}
	if logged > 0 {
		if _, err := tx.ExecContext(ctx, log.String(), log.args...); err != nil {
			return nil, err
		}
	}
	// In id order: two instances' rounds lock endpoints in the same order.
	slices.Sort(order)
	for _, hook := range order {
		f := hooks[hook]
		q := s.newQuery()
		switch {
		case f.since.IsZero():
			q.WriteString("UPDATE webhooks SET failing_since = NULL WHERE failing_since IS NOT NULL AND id = " + q.Arg(hook))
		case f.succeeded:
			q.WriteString("UPDATE webhooks SET failing_since = " + q.Arg(f.since) + " WHERE id = " + q.Arg(hook))
		default:
			q.WriteString("UPDATE webhooks SET failing_since = " + q.Arg(f.since) + " WHERE failing_since IS NULL AND id = " + q.Arg(hook))
		}
		if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
			return nil, err
		}
	}
	return s.pendingBehind(ctx, tx, ended)
}

// pendingBehind returns, in id order, the endpoints of ended (endpoint ->
// records whose delivery ended) that have a pending delivery of one of
// those records: a delivery that waited for the one that ended, and may
// now be claimed.
func (s *Store) pendingBehind(ctx context.Context, tx Querier, ended map[int64][]string) ([]int64, error) {
	var out []int64
	for _, hook := range slices.Sorted(maps.Keys(ended)) {
		// Placeholders are positional on SQLite: bound in the order of
		// the text.
		q := s.newQuery()
		q.WriteString("SELECT 1 FROM " + s.pendingDeliveries() + " WHERE d.webhook_id = " + q.Arg(hook) + " AND d.record_key IN (")
		keys := make([]string, 0, len(ended[hook]))
		for _, k := range slices.Compact(slices.Sorted(slices.Values(ended[hook]))) {
			keys = append(keys, q.Arg(k))
		}
		q.WriteString(strings.Join(keys, ", ") + ") AND d.state = " + pending + " LIMIT 1")
		var one int
		err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, hook)
	}
	return out, nil
}

// attemptChunk bounds the attempts one statement records (9 values each:
// SQLite binds at most 32,766, PostgreSQL 65,535).
const attemptChunk = 500

// recordAttempts updates, in one statement, the delivery of each of
// attempts whose lease is still its Owner's (state, count, last attempt,
// lease released), and adds it to recorded (delivery id -> endpoint).
// The records of those that ended (delivered, dead) are added to ended
// (endpoint -> records). The attempts' values are a VALUES list joined to the deliveries
// (UPDATE ... FROM, on both databases); its first row names the columns'
// types, which PostgreSQL would otherwise take for text. SQLite reads
// those casts by affinity (timestamptz: numeric, and its times are
// integers), so the same text serves both.
func (s *Store) recordAttempts(ctx context.Context, tx Tx, attempts []resourceapi.WebhookAttempt, recorded map[int64]int64, ended map[int64][]string) error {
	q := s.newQuery()
	q.WriteString("WITH a (did, holder, state, status, latency, response, tried, due, delivered) AS (VALUES ")
	for i, a := range attempts {
		at := resourceapi.Timestamp(a.At)
		delivered := any(nil)
		if a.State == resourceapi.DeliveryDelivered {
			delivered = at
		}
		next := a.Next
		if next.IsZero() {
			next = at
		}
		vals := []string{q.Arg(a.DeliveryID), q.Arg(a.Owner), q.Arg(a.State), q.Arg(int64(a.Status)), q.Arg(a.Latency.Milliseconds()),
			q.Arg(a.Response), q.Arg(at), q.Arg(resourceapi.Timestamp(next)), q.Arg(delivered)}
		if i == 0 {
			for j, t := range []string{"bigint", "text", "text", "integer", "integer", "text", "timestamptz", "timestamptz", "timestamptz"} {
				vals[j] = "CAST(" + vals[j] + " AS " + t + ")"
			}
		} else {
			q.WriteString(", ")
		}
		q.WriteString("(" + join(vals) + ")")
	}
	q.WriteString(") UPDATE webhook_deliveries SET state = a.state, attempts = attempts + 1, last_status = a.status, last_latency_ms = a.latency," +
		" last_response = a.response, last_attempt_at = a.tried, first_attempt_at = COALESCE(first_attempt_at, a.tried), next_attempt_at = a.due," +
		" delivered_at = a.delivered, lease_owner = '', lease_until = NULL FROM a WHERE webhook_deliveries.id = a.did" +
		" AND webhook_deliveries.lease_owner = a.holder RETURNING webhook_deliveries.id, webhook_deliveries.webhook_id, webhook_deliveries.record_key, webhook_deliveries.state")
	rows, err := tx.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, hook int64
		var record, state string
		if err := rows.Scan(&id, &hook, &record, &state); err != nil {
			return err
		}
		recorded[id] = hook
		if state != resourceapi.DeliveryPending {
			ended[hook] = append(ended[hook], record)
		}
	}
	return rows.Err()
}

// releaseDeliveries gives back, in tx, the deliveries of ids that owner
// holds.
func (s *Store) releaseDeliveries(ctx context.Context, tx Tx, owner string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	_, err := tx.ExecContext(ctx, "UPDATE webhook_deliveries SET lease_owner = '', lease_until = NULL WHERE lease_owner = "+
		s.dialect.Placeholder(1)+" AND id IN ("+strings.Join(list, ", ")+")", owner)
	return err
}

// DisableFailingWebhooks implements resourceapi.WebhookStore. It reads
// first, and writes nothing when no endpoint is to be disabled.
func (s *Store) DisableFailingWebhooks(ctx context.Context, cutoff time.Time, reason string) ([]resourceapi.Webhook, error) {
	q := s.newQuery()
	q.WriteString("SELECT 1 FROM webhooks WHERE enabled = " + s.dialect.Bool(true) + " AND failing_since < " + q.Arg(resourceapi.Timestamp(cutoff)) + " LIMIT 1")
	if some, err := s.exists(ctx, q); err != nil || !some {
		if err != nil {
			return nil, fmt.Errorf("disable failing webhooks: %w", err)
		}
		return nil, nil
	}
	var out []resourceapi.Webhook
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		out = nil
		q := s.newQuery()
		q.WriteString("UPDATE webhooks SET enabled = " + s.dialect.Bool(false) + ", disabled_reason = " + q.Arg(reason) +
			", updated_at = " + q.Arg(resourceapi.Timestamp(s.now())) +
			" WHERE enabled = " + s.dialect.Bool(true) + " AND failing_since < " + q.Arg(resourceapi.Timestamp(cutoff)) + " RETURNING " + webhookColumns)
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			w, err := scanWebhook(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Their deliveries whose retry period has passed too are
		// dead-lettered with them.
		for _, w := range out {
			q := s.newQuery()
			q.WriteString("UPDATE webhook_deliveries SET state = " + q.Arg(resourceapi.DeliveryDead) + ", lease_owner = '', lease_until = NULL" +
				" WHERE webhook_id = " + q.Arg(w.ID) + " AND state = " + q.Arg(resourceapi.DeliveryPending) +
				" AND first_attempt_at < " + q.Arg(resourceapi.Timestamp(cutoff)))
			if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("disable failing webhooks: %w", err)
	}
	return out, nil
}

// PurgeWebhookDeliveries implements resourceapi.WebhookStore. It reads
// first, and writes nothing when there is nothing to purge.
func (s *Store) PurgeWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	q := s.newQuery()
	q.WriteString("SELECT 1 FROM webhook_deliveries WHERE state <> " + q.Arg(resourceapi.DeliveryPending) +
		" AND created_at < " + q.Arg(resourceapi.Timestamp(before)) + " LIMIT 1")
	if some, err := s.exists(ctx, q); err != nil || !some {
		if err != nil {
			return 0, fmt.Errorf("purge webhook deliveries: %w", err)
		}
		return 0, nil
	}
	var n int
	err := s.writer.Write(ctx, func(ctx context.Context, tx Tx) error {
		n = 0
		q := s.newQuery()
		q.WriteString("SELECT id FROM webhook_deliveries WHERE state <> " + q.Arg(resourceapi.DeliveryPending) +
			" AND created_at < " + q.Arg(resourceapi.Timestamp(before)) + " ORDER BY id LIMIT " + q.Arg(int64(limit)) + s.dialect.SkipLocked())
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		// The attempts first: SQLite enforces the cascade only where
		// foreign keys are on.
		list := strings.Join(ids, ", ")
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_attempts WHERE delivery_id IN ("+list+")"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE id IN ("+list+")"); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("purge webhook deliveries: %w", err)
	}
	return n, nil
}

// exists says whether q, a query for one row, finds one, in a read.
func (s *Store) exists(ctx context.Context, q *Query) (bool, error) {
	var some bool
	err := s.reader.Read(ctx, func(ctx context.Context, tx Querier) error {
		var one int
		err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&one)
		some = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return some, err
}
