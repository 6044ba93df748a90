package postgres

import "context"

// PlansOf returns how many custom and generic plans the prepared statements
// of the pool's sessions whose text contains like (a LIKE pattern) have
// made: pg_prepared_statements shows a session's own statements only, so
// the pool should have one connection.
func (db *DB) PlansOf(ctx context.Context, like string) (custom, generic int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT coalesce(sum(custom_plans), 0)::bigint, coalesce(sum(generic_plans), 0)::bigint
		FROM pg_prepared_statements WHERE statement LIKE $1`, like).Scan(&custom, &generic)
	return custom, generic, err
}
