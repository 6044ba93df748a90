package sqlite

import "database/sql"

// Pools returns the statistics of the database's connection pools by name,
// for metrics: the readers' and the writer's.
func (db *DB) Pools() map[string]func() sql.DBStats {
	return map[string]func() sql.DBStats{"sqlite_read": db.read.Stats, "sqlite_write": db.write.Stats}
}
