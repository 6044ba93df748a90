package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/resourceapi/resourceapi"
)

// OutboxState implements resourceapi.OutboxStater: statements on the
// outbox's primary key, the backlog being the events after the cursor.
func (s *Store) OutboxState(ctx context.Context) (resourceapi.OutboxState, error) {
	var st resourceapi.OutboxState
	// Where one process relays (SQLite), the events it published and has
	// not yet marked in the database (it marks once a second) are not
	// pending.
	after := int64(0)
	if s.dialect.SkipLocked() == "" {
		after = s.serial.published.Load()
	}
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var last sql.NullInt64
		if err := q.QueryRowContext(ctx, "SELECT MAX(id) FROM events").Scan(&last); err != nil {
			return err
		}
		st.Last = last.Int64
		var through int64
		if err := q.QueryRowContext(ctx, "SELECT through FROM events_published").Scan(&through); err != nil {
			return err
		}
		var oldest sql.NullInt64
		err := q.QueryRowContext(ctx, "SELECT COUNT(*), MIN(id) FROM events WHERE id > "+
			s.dialect.Placeholder(1), max(after, through)).Scan(&st.Pending, &oldest)
		if err != nil || !oldest.Valid {
			return err
		}
		at := value{f: timeField}
		if err := q.QueryRowContext(ctx, "SELECT created_at FROM events WHERE id = "+s.dialect.Placeholder(1), oldest.Int64).Scan(&at); err != nil {
			return err
		}
		st.Oldest, _ = at.v.(time.Time)
		return nil
	})
	return st, err
}

// Caches returns the lookups of the store's caches: records and list pages
// ("records", SQLite) and accounts ("accounts", PostgreSQL).
func (s *Store) Caches() []resourceapi.CacheStats {
	var out []resourceapi.CacheStats
	if c := s.cache; c != nil {
		c.mu.Lock()
		out = append(out, resourceapi.CacheStats{Name: "records", Hits: c.hits, Misses: c.misses})
		c.mu.Unlock()
	}
	if c := s.accounts; c != nil {
		out = append(out, resourceapi.CacheStats{Name: "accounts", Hits: c.hits.Load(), Misses: c.misses.Load()})
	}
	return out
}
