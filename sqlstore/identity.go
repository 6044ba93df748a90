package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.IdentityStore = (*Store)(nil)

// Each account lookup is one statement: the user's visible fields, the
// password hash, and the effective permissions (the user's direct grants and
// those of their roles, read from the roles table), so that authenticating a
// request costs one round trip on a server database.

// AccountByID implements resourceapi.IdentityStore.
func (s *Store) AccountByID(ctx context.Context, id int64) (resourceapi.Account, error) {
	return s.account(ctx, "u.id = "+s.dialect.Placeholder(1), "", id)
}

// AccountByEmail implements resourceapi.IdentityStore. Emails are compared as
// the unique constraint compares them: lower-cased.
func (s *Store) AccountByEmail(ctx context.Context, email string) (resourceapi.Account, error) {
	return s.account(ctx, "u.email_key = "+s.dialect.Placeholder(1), "", strings.ToLower(strings.TrimSpace(email)))
}

// AccountByAPIKey implements resourceapi.IdentityStore.
func (s *Store) AccountByAPIKey(ctx context.Context, keyHash string) (resourceapi.Account, error) {
	return s.account(ctx, "k.key_hash = "+s.dialect.Placeholder(1), " JOIN api_keys k ON k.user_id = u.id", keyHash)
}

// account reads the one user matching where (over users u, and the joins in
// from).
func (s *Store) account(ctx context.Context, where, from string, arg any) (resourceapi.Account, error) {
	if err := ctx.Err(); err != nil {
		return resourceapi.Account{}, err
	}
	cols := s.readColumns(resourceapi.Users)
	list := make([]string, len(cols.fields))
	for i, f := range cols.fields {
		list[i] = "u." + column(f)
	}
	query := "SELECT " + join(list) + ", u.password_hash, " + s.dialect.Permissions("u") +
		" FROM users u" + from + " WHERE " + where
	var acct resourceapi.Account
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var hash sql.NullString
		var perms []byte
		rec, err := cols.scanExtra(q.QueryRowContext(ctx, query, arg), &hash, &perms)
		if err != nil {
			return err
		}
		acct.User, acct.PasswordHash = rec, hash.String
		var list []string
		if len(perms) > 0 {
			if err := json.Unmarshal(perms, &list); err != nil {
				return fmt.Errorf("permissions: %w", err)
			}
		}
		acct.Permissions = make([]resourceapi.Permission, len(list))
		for i, p := range list {
			acct.Permissions[i] = resourceapi.Permission(p)
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return resourceapi.Account{}, resourceapi.NotFound(resourceapi.Users)
	}
	if err != nil {
		return resourceapi.Account{}, fmt.Errorf("account: %w", err)
	}
	return acct, nil
}

// scanExtra reads a row of the columns followed by more columns into extra.
func (c *columns) scanExtra(row scanner, extra ...any) (resourceapi.Record, error) {
	dest := make([]any, len(c.fields), len(c.fields)+len(extra))
	vals := make([]value, len(c.fields))
	for i := range vals {
		vals[i].f = c.fields[i]
		dest[i] = &vals[i]
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	rec := make(resourceapi.Record, len(c.fields))
	for i, f := range c.fields {
		rec[f.Name] = vals[i].v
	}
	return rec, nil
}
