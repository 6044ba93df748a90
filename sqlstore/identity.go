package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.IdentityStore = (*Store)(nil)

// Each account lookup is one statement: the user's visible fields, the
// password hash, and the effective permissions (the user's direct grants and
// those of their roles, read from the roles table), so that authenticating a
// request costs one round trip on a server database.

// With the cache on (SQLite), accounts are cached as values of the users
// resource (any write of a user but a creation, which changes no existing
// account, drops them all, and so does another process's commit), and the
// account an API key names as a value of users that any write of a key drops
// too (keyAccount); roles change only by another process's commit, which drops
// everything. So authenticating a repeated caller costs
// no query, and is never stale. On PostgreSQL the record cache answers only
// while the instance is the only writer (postgres/solo.go: ForeignCommits
// says ok), and its accounts are then current as on SQLite: a write of
// another process waits until the holder has stopped serving. Otherwise
// accounts have a cache of their own, confirmed by the reads of the
// request (accounts.go).

// AccountByID implements resourceapi.IdentityStore.
func (s *Store) AccountByID(ctx context.Context, id int64) (resourceapi.Account, error) {
	var buf [32]byte
	key := strconv.AppendInt(append(buf[:0], "\x00account id "...), id, 10)
	return s.cachedAccount(ctx, key, func() (resourceapi.Account, error) {
		return s.account(ctx, "u.id = "+s.dialect.Placeholder(1), false, id)
	})
}

// AccountByEmail implements resourceapi.IdentityStore. Emails are compared as
// the unique constraint compares them: by resourceapi.UniqueKey (NFC,
// lower-cased), so any spelling of a stored address signs in.
func (s *Store) AccountByEmail(ctx context.Context, email string) (resourceapi.Account, error) {
	key := resourceapi.UniqueKey(strings.TrimSpace(email))
	return s.cachedAccount(ctx, []byte("\x00account email "+key), func() (resourceapi.Account, error) {
		return s.account(ctx, "u.email_key = "+s.dialect.Placeholder(1), false, key)
	})
}

// keyAccount is what the record cache keeps of an API key: the account it
// names, with the key's expiry (Account.ExpiresAt), which the Authenticator
// checks on every request against its clock, so a cached key expires on
// time. It is a value of users that derives from api_keys too (valueAlso):
// a write of the user that may change access, or an update of its record
// (owner), drops it, as it drops the account by id; and so does any write of
// api_keys (a key's change, its expiry's too). So a request by API key
// finds its account in one lookup of the cache.
type keyAccount struct{ acct resourceapi.Account }

// keyAccountPrefix starts the cache's key of an API key's account, before
// the key's hash.
const keyAccountPrefix = "\x00key account "

// AccountByAPIKey implements resourceapi.IdentityStore.
func (s *Store) AccountByAPIKey(ctx context.Context, keyHash resourceapi.TokenHash) (resourceapi.Account, error) {
	if err := ctx.Err(); err != nil {
		return resourceapi.Account{}, err
	}
	// The cache's key is built on the stack: a hit makes no string of it,
	// nor of the hash.
	var buf [len(keyAccountPrefix) + len(keyHash)]byte
	key := append(append(buf[:0], keyAccountPrefix...), keyHash[:]...)
	v, ok, fill := s.cache.valueAlso(resourceapi.Users, key, resourceapi.APIKeys)
	if ok {
		return v.(*keyAccount).acct, nil
	}
	read := func() (resourceapi.Account, error) {
		x := keyHash.Hex() // as stored (resourceapi.HashToken)
		return s.account(ctx, "k.key_hash = "+s.dialect.Placeholder(1), true, string(x[:]))
	}
	if s.accounts != nil && !fill.ok() {
		var buf [len("key ") + len(keyHash)]byte
		return s.accounts.account(ctx, append(append(buf[:0], "key "...), keyHash[:]...), read)
	}
	acct, err := read()
	if err == nil {
		s.cache.storeValue(resourceapi.Users, string(key), fill, &keyAccount{acct}, accountSize(acct), acct.User.ID())
	}
	return acct, err
}

// accountSize estimates the bytes an account holds besides its entry.
func accountSize(acct resourceapi.Account) int64 {
	return recordSize(acct.User) + int64(len(acct.PasswordHash)) + 32*int64(len(acct.Permissions))
}

// cachedAccount returns the account cached under key, or reads it and caches
// it. A missing account is not cached (a create would have to drop it).
// key is bytes, so that a hit makes no string of it.
func (s *Store) cachedAccount(ctx context.Context, key []byte, read func() (resourceapi.Account, error)) (resourceapi.Account, error) {
	if err := ctx.Err(); err != nil {
		return resourceapi.Account{}, err
	}
	v, ok, fill := s.cache.value(resourceapi.Users, key)
	if ok {
		return v.(resourceapi.Account), nil
	}
	if s.accounts != nil && !fill.ok() {
		return s.accounts.account(ctx, key, read)
	}
	acct, err := read()
	if err == nil {
		s.cache.storeValue(resourceapi.Users, string(key), fill, acct, accountSize(acct), acct.User.ID())
	}
	return acct, err
}

// account reads the one user matching where (over users u, and, with
// byKey, the API key k that belongs to them, whose expiry it reads too).
// Besides the user's visible fields it reads what only authentication
// sees: the password hash and the security stamp (columns of declared
// write-only fields), and the effective permissions.
func (s *Store) account(ctx context.Context, where string, byKey bool, arg any) (resourceapi.Account, error) {
	if err := ctx.Err(); err != nil {
		return resourceapi.Account{}, err
	}
	cols := s.readColumns(resourceapi.Users)
	list := make([]string, len(cols.fields))
	for i, f := range cols.fields {
		list[i] = "u." + column(f)
	}
	query := "SELECT " + join(list) + ", u.password_hash, u.security_stamp, " + s.dialect.Permissions("u")
	if byKey {
		query += ", k.expires_at"
	}
	if s.accounts != nil {
		query += ", " + s.dialect.IdentityVersion()
	}
	query += " FROM users u"
	if byKey {
		query += " JOIN api_keys k ON k.user_id = u.id"
	}
	query += " WHERE " + where
	var acct resourceapi.Account
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		var hash sql.NullString
		var stamp string
		var perms []byte
		var version int64
		expires := value{f: timeField}
		extra := []any{&hash, &stamp, &perms}
		if byKey {
			extra = append(extra, &expires)
		}
		if s.accounts != nil {
			extra = append(extra, &version)
		}
		rec, err := cols.scanExtra(q.QueryRowContext(ctx, query, arg), extra...)
		if err != nil {
			return err
		}
		var list []string
		if len(perms) > 0 {
			if err := json.Unmarshal(perms, &list); err != nil {
				return fmt.Errorf("permissions: %w", err)
			}
		}
		granted := make([]resourceapi.Permission, len(list))
		for i, p := range list {
			granted[i] = resourceapi.Permission(p)
		}
		acct = resourceapi.NewAccount(rec, hash.String, granted)
		acct.Stamp, acct.Version = stamp, version
		if t, ok := expires.v.(time.Time); ok {
			acct.ExpiresAt = t
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return resourceapi.Account{}, resourceapi.ErrNotFound(resourceapi.Users)
	}
	if err != nil {
		return resourceapi.Account{}, fmt.Errorf("account: %w", err)
	}
	return acct, nil
}

// rowScratch holds the destinations of a record's columns, made by the
// first row that scanReusing reads and used again for the rows after it
// (the record of each row is its own map): two allocations a statement
// rather than two a row.
type rowScratch struct {
	dest    []any
	vals    []value
	version int64 // the identity version, when a row carries it (scanRows)
}

// scanReusing is scanExtra with the destinations of sc.
func (c *columns) scanReusing(row scanner, sc *rowScratch, extra ...any) (resourceapi.Record, error) {
	if len(sc.vals) != len(c.fields) {
		sc.vals = make([]value, len(c.fields))
		sc.dest = make([]any, len(c.fields), len(c.fields)+len(extra))
		for i := range sc.vals {
			sc.vals[i].f = c.fields[i]
			sc.dest[i] = &sc.vals[i]
		}
	}
	for i := range sc.vals {
		sc.vals[i].v = nil
	}
	dest := append(sc.dest[:len(c.fields)], extra...)
	sc.dest = dest[:len(c.fields)] // keeps what append grew
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	rec := make(resourceapi.Record, len(c.fields))
	for i, f := range c.fields {
		rec[f.Name] = sc.vals[i].v
	}
	return rec, nil
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
