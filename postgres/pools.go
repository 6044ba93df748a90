package postgres

import "database/sql"

// Pools returns the database's connection pool by name, for metrics.
func (db *DB) Pools() map[string]*sql.DB { return map[string]*sql.DB{"postgres": db.db} }
