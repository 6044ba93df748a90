package sqlite

import "database/sql"

// Pools returns the database's connection pools by name, for metrics: the
// readers' and the writer's.
func (db *DB) Pools() map[string]*sql.DB {
	return map[string]*sql.DB{"sqlite_read": db.read, "sqlite_write": db.write}
}
