package postgres

import "database/sql"

// Pools returns the statistics of the database's connection pool by name,
// for metrics, in database/sql's terms: the store's pool and the
// connections of its batch of one-row reads (rowbatch.go) count as one.
func (db *DB) Pools() map[string]func() sql.DBStats {
	return map[string]func() sql.DBStats{"postgres": func() sql.DBStats {
		s := db.pool.Stat()
		st := sql.DBStats{
			MaxOpenConnections: int(s.MaxConns()),
			OpenConnections:    int(s.TotalConns()),
			InUse:              int(s.AcquiredConns()),
			Idle:               int(s.IdleConns()),
			WaitCount:          s.EmptyAcquireCount(),
			WaitDuration:       s.EmptyAcquireWaitTime(),
			MaxIdleTimeClosed:  s.MaxIdleDestroyCount(),
			MaxLifetimeClosed:  s.MaxLifetimeDestroyCount(),
		}
		if db.batch != nil {
			b := db.batch.pool.Stat()
			st.MaxOpenConnections += int(b.MaxConns())
			st.OpenConnections += int(b.TotalConns())
			st.InUse += int(b.AcquiredConns())
			st.Idle += int(b.IdleConns())
			st.WaitCount += b.EmptyAcquireCount()
			st.WaitDuration += b.EmptyAcquireWaitTime()
			st.MaxIdleTimeClosed += b.MaxIdleDestroyCount()
			st.MaxLifetimeClosed += b.MaxLifetimeDestroyCount()
		}
		return st
	}}
}
