package postgres

import "database/sql"

// Pools returns the statistics of the database's connection pool by name,
// for metrics, in database/sql's terms.
func (db *DB) Pools() map[string]func() sql.DBStats {
	return map[string]func() sql.DBStats{"postgres": func() sql.DBStats {
		s := db.pool.Stat()
		return sql.DBStats{
			MaxOpenConnections: int(s.MaxConns()),
			OpenConnections:    int(s.TotalConns()),
			InUse:              int(s.AcquiredConns()),
			Idle:               int(s.IdleConns()),
			WaitCount:          s.EmptyAcquireCount(),
			WaitDuration:       s.EmptyAcquireWaitTime(),
			MaxIdleTimeClosed:  s.MaxIdleDestroyCount(),
			MaxLifetimeClosed:  s.MaxLifetimeDestroyCount(),
		}
	}}
}
