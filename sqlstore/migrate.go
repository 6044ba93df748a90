package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"golang.org/x/text/unicode/norm"

	"github.com/resourceapi/resourceapi"
)

// NormalizeEmails is the data migration that brings the users stored before
// emails were normalized to the rule that holds now: each email in NFC, and
// email_key its resourceapi.UniqueKey (NFC, lower-cased), which the unique
// constraint and sign-in by email compare. Both databases run it, as their
// Go migration 10: neither can normalize Unicode in SQL the way the rule
// layer does (SQLite has no normalize(), and PostgreSQL's lower() depends on
// the database's locale). Only the rows that change are written.
//
// Two stored accounts whose emails differ only in normalization (the
// accounts the rule now refuses) cannot both hold the new key: the one
// already in normal form keeps it (or else the first by id takes it), and
// the other keeps its email and key as they are, still reachable by id and
// by its API keys, for an admin to rename.
func NormalizeEmails(d Dialect) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		type change struct {
			id         int64
			email, key string
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, email, email_key FROM users ORDER BY id")
		if err != nil {
			return fmt.Errorf("normalize emails: %w", err)
		}
		var changes []change
		for rows.Next() {
			var c change
			var key string
			if err := rows.Scan(&c.id, &c.email, &key); err != nil {
				rows.Close()
				return fmt.Errorf("normalize emails: %w", err)
			}
			email := norm.NFC.String(c.email)
			if email == c.email && resourceapi.UniqueKey(email) == key {
				continue
			}
			c.email, c.key = email, resourceapi.UniqueKey(email)
			changes = append(changes, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("normalize emails: %w", err)
		}
		p := d.Placeholder
		taken := "SELECT count(*) FROM users WHERE email_key = " + p(1) + " AND id <> " + p(2)
		update := "UPDATE users SET email = " + p(1) + ", email_key = " + p(2) + " WHERE id = " + p(3)
		for _, c := range changes {
			var n int
			if err := tx.QueryRowContext(ctx, taken, c.key, c.id).Scan(&n); err != nil {
				return fmt.Errorf("normalize emails: %w", err)
			}
			if n > 0 {
				continue // another account holds the key: see above
			}
			if _, err := tx.ExecContext(ctx, update, c.email, c.key, c.id); err != nil {
				return fmt.Errorf("normalize emails: user %d: %w", c.id, err)
			}
		}
		return nil
	}
}
