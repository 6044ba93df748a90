package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// On a database that other processes write (PostgreSQL, shared by several
// instances and the command line), the record cache answers only while the
// instance is the only writer (Config.ForeignCommits ok: then accounts are
// values of the record cache, current as on SQLite, see identity.go).
// Otherwise accounts have a cache of their own: each is kept with the
// identity version it was
// read at, in the same statement (Dialect.IdentityVersion), and served only
// to a request whose reads confirm it (resourceapi.IdentityVersioner): a
// request that may use it (resourceapi.CachedAccountsAllowed) gets it marked
// Cached, and the Service compares its version with the one the request's
// own statements see. Any other request reads the account from the
// database, and the cache keeps what it read.

// maxCachedAccounts bounds the accounts cache: past it, an arbitrary account
// is dropped for each one added (a caller that comes back costs one read).
const maxCachedAccounts = 4096

type accountCache struct {
	mu    sync.RWMutex
	items map[string]resourceapi.Account
	// latest is the highest identity version any statement of this store
	// saw: an account read at an older one has changed, so it is read
	// again rather than served and refused by its request's check.
	latest atomic.Int64
	// hits and misses count lookups, for metrics.
	hits, misses atomic.Uint64
}

func newAccountCache() *accountCache {
	return &accountCache{items: make(map[string]resourceapi.Account)}
}

// account returns the account cached under key, marked Cached, when ctx
// allows it and no statement has seen a newer identity version; otherwise
// it reads the account and caches what it read. key is bytes, so that a hit
// makes no string of it.
func (c *accountCache) account(ctx context.Context, key []byte, read func() (resourceapi.Account, error)) (resourceapi.Account, error) {
	if resourceapi.CachedAccountsAllowed(ctx) {
		c.mu.RLock()
		acct, ok := c.items[string(key)] // no string made for the lookup
		c.mu.RUnlock()
		if ok && acct.Version >= c.latest.Load() {
			c.hits.Add(1)
			acct.Cached = true
			return acct, nil
		}
		c.misses.Add(1)
	}
	acct, err := read()
	if err != nil {
		return acct, err
	}
	c.saw(acct.Version)
	c.mu.Lock()
	if _, ok := c.items[string(key)]; !ok && len(c.items) >= maxCachedAccounts {
		for k := range c.items {
			delete(c.items, k)
			break
		}
	}
	c.items[string(key)] = acct
	c.mu.Unlock()
	return acct, nil
}

// saw records that a statement saw identity version v.
func (c *accountCache) saw(v int64) {
	for {
		cur := c.latest.Load()
		if v <= cur || c.latest.CompareAndSwap(cur, v) {
			return
		}
	}
}

// identityCheck returns the check the reads of ctx report the identity
// version to, or nil when there is none to report (no check asked for, or a
// database without identity versions).
func (s *Store) identityCheck(ctx context.Context) *resourceapi.IdentityCheck {
	if s.accounts == nil {
		return nil
	}
	return resourceapi.IdentityCheckFrom(ctx)
}

// versionColumn is what a read's statement appends to its select list for
// check: the identity version, or nothing when check is nil.
func (s *Store) versionColumn(check *resourceapi.IdentityCheck) string {
	if check == nil {
		return ""
	}
	return ", " + s.dialect.IdentityVersion()
}

// scanChecked reads a row of cols followed by extra and, when check is not
// nil, by the identity version (versionColumn), which it reports to check
// and to the accounts cache.
// scanRows is scanChecked over the rows of one statement: the destinations
// of the columns are made once for all the rows (rowScratch), not per row.
func (s *Store) scanRows(row scanner, cols *columns, check *resourceapi.IdentityCheck, sc *rowScratch, extra ...any) (resourceapi.Record, error) {
	if check == nil {
		return cols.scanReusing(row, sc, extra...)
	}
	rec, err := cols.scanReusing(row, sc, append(extra, &sc.version)...)
	if err == nil {
		check.Saw(sc.version)
		s.accounts.saw(sc.version)
	}
	return rec, err
}

func (s *Store) scanChecked(row scanner, cols *columns, check *resourceapi.IdentityCheck, extra ...any) (resourceapi.Record, error) {
	if check == nil {
		return cols.scanExtra(row, extra...)
	}
	var v int64
	rec, err := cols.scanExtra(row, append(extra, &v)...)
	if err == nil {
		check.Saw(v)
		s.accounts.saw(v)
	}
	return rec, err
}

// IdentityConfirm is implemented by the Dialect of a database that keeps an
// identity version and can refuse, in a write's transaction, to commit it
// when that version has moved (resourceapi.IdentityConfirmer).
type IdentityConfirm interface {
	// ConfirmIdentity is a statement with one parameter, a version, that
	// fails with an error IdentityMoved recognises unless the identity
	// version is that one.
	ConfirmIdentity() string
	// IdentityMoved reports whether err is ConfirmIdentity's failure.
	IdentityMoved(err error) bool
}

var _ resourceapi.IdentityConfirmer = (*Store)(nil)

// ConfirmsIdentity implements resourceapi.IdentityConfirmer: on a database
// with an accounts cache whose dialect has IdentityConfirm.
func (s *Store) ConfirmsIdentity() bool {
	_, ok := s.dialect.(IdentityConfirm)
	return ok && s.accounts != nil
}

// confirmIdentity queues, with the commit of tx, the check of the identity
// version the write's context asks for (resourceapi.IdentityConfirmFrom),
// if any: sent with the COMMIT, it costs no round trip, and if it fails
// nothing commits. It runs after every statement of the write, in a
// snapshot of its own (READ COMMITTED), so it sees every identity change
// that committed before the write's last round trip.
func (s *Store) confirmIdentity(ctx context.Context, tx Tx) error {
	want, ok := resourceapi.IdentityConfirmFrom(ctx)
	if !ok {
		return nil
	}
	ic, ok := s.dialect.(IdentityConfirm)
	if !ok || s.accounts == nil {
		return errors.New("this store cannot confirm an identity version in a write")
	}
	return execAtCommit(ctx, tx, ic.ConfirmIdentity(), want)
}

// identityMoved returns resourceapi.ErrIdentityMoved for the failure of
// confirmIdentity's statement, and err otherwise.
func (s *Store) identityMoved(err error) error {
	if ic, ok := s.dialect.(IdentityConfirm); ok && err != nil && ic.IdentityMoved(err) {
		return resourceapi.ErrIdentityMoved
	}
	return err
}

var _ resourceapi.IdentityVersioner = (*Store)(nil)

// IdentityVersion implements resourceapi.IdentityVersioner. On a database
// that keeps none (SQLite, which one process serves), it costs no query: it
// is this process's count of the writes that may change what decides access
// (changesAccess), moved before each such commit can be seen and again once
// it has ended, plus the commits of other processes (Config.ForeignCommits:
// the command line's), any of which may have.
func (s *Store) IdentityVersion(ctx context.Context) (int64, error) {
	if s.accounts == nil {
		return s.localIdentityVersion(ctx)
	}
	var v int64
	err := s.reader.Read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRowContext(ctx, "SELECT "+s.dialect.IdentityVersion()).Scan(&v)
	})
	if err != nil {
		return 0, fmt.Errorf("identity version: %w", err)
	}
	s.accounts.saw(v)
	return v, nil
}

// changesAccess reports whether ch may change what authenticates a caller or
// decides their access: any write of a user but its creation (roles, grants,
// password, email, deletion), and any write of an API key. Roles are written
// by hand only, as commits of another process.
func changesAccess(ch change) bool {
	switch ch.res {
	case resourceapi.Users:
		return !ch.created && !ch.neutral
	case resourceapi.APIKeys:
		return true
	}
	return false
}

// accessNeutral reports whether an update that sets the fields of patch
// leaves what decides access as it was: no field that authentication reads
// (Field.DecidesAccess: the email, the password, roles, grants, the
// security stamp), nor the soft delete, the hidden flag or the id. Only
// users have such fields and values derived from them (accounts); the
// identity version (migration 00007's triggers) moves on the same fields.
func accessNeutral(res *resourceapi.Resource, patch resourceapi.Record) bool {
	if res != resourceapi.Users {
		return false
	}
	for name := range patch {
		f := res.Field(name)
		if f == nil || f.DecidesAccess || f.Secret != resourceapi.NotSecret || name == "id" || name == res.SoftDelete || name == res.Hidden {
			return false
		}
	}
	return true
}

// foreignTries bounds how often localIdentityVersion asks again for the
// count of other processes' commits while the writer's transaction keeps it
// from telling.
const foreignTries = 20

// localIdentityVersion is IdentityVersion on a database that keeps none.
func (s *Store) localIdentityVersion(ctx context.Context) (int64, error) {
	if s.foreign == nil {
		return s.identity.Load(), nil
	}
	for range foreignTries {
		if n, ok := s.foreign(); ok {
			return s.identity.Load() + int64(n), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("identity version: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	// Cannot tell now: a version never seen before (the others are not
	// negative), so whoever compares authenticates again.
	return -s.identity.Add(1), nil
}
