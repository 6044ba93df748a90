package resourceapi

import (
	"context"
	"sync/atomic"
)

// Accounts served from a cache, and how a read confirms them.
//
// Authenticating a request reads the caller's account: their user, password
// hash and effective permissions. On a store that several processes share
// (PostgreSQL), a cache in one process cannot see the writes of another, so
// an account it keeps may be stale. Such a store keeps an identity version
// in the database, which every commit that changes a user, an API key or a
// role moves on (in the same transaction), and caches each account with the
// version it was read at.
//
// A request that the Service alone answers (REST, GraphQL over HTTP) may be
// authenticated from that cache (Service.Authenticate): its
// caller is then provisional. The reads (Get, List, GetEach, ListEach) run
// with an IdentityCheck in their context, and the store adds the identity version to the statements
// the read runs anyway, so the check costs no round trip. If the version is
// still the account's, the caller was current when the data was read, and
// the answer stands. If it moved, or no statement reported it (a refusal
// before any read), the Service asks (IdentityVersioner) and, if it moved,
// authenticates the request again without the cache and runs the read
// again. Every other method authenticates again from the database before it
// acts (current). So a revoked key, a changed password or role, or a
// deleted user is refused on the very next request, whichever instance
// served the change.

// IdentityVersioner is implemented by a store whose accounts may come from a
// cache that other processes' writes do not reach (see Account.Cached).
type IdentityVersioner interface {
	// IdentityVersion returns the identity version as the database has it
	// now.
	IdentityVersion(ctx context.Context) (int64, error)
}

// IdentityCheck collects the identity versions the statements of one read
// saw, to confirm a provisional caller (see above). It is safe for
// concurrent use.
type IdentityCheck struct {
	want  int64
	saw   atomic.Bool
	moved atomic.Bool
}

// Saw records that a statement of the read saw identity version v.
func (k *IdentityCheck) Saw(v int64) {
	if v != k.want {
		k.moved.Store(true)
	}
	k.saw.Store(true)
}

type identityCheckKey struct{}

// IdentityCheckFrom returns the check a store's reads report to, or nil
// when the caller needs none.
func IdentityCheckFrom(ctx context.Context) *IdentityCheck {
	k, _ := ctx.Value(identityCheckKey{}).(*IdentityCheck)
	return k
}

type cachedAccountsKey struct{}

// CachedAccountsAllowed reports whether an IdentityStore may answer from a
// cache that other processes' writes do not reach, marking the account
// Cached: only when Service.Authenticate asks, for a caller the Service
// confirms.
func CachedAccountsAllowed(ctx context.Context) bool {
	return ctx.Value(cachedAccountsKey{}) != nil
}

// UncachedAccounts returns ctx without CachedAccountsAllowed: for the
// lookups whose answer must be the database's (a password verified, a
// refusal decided).
func UncachedAccounts(ctx context.Context) context.Context {
	if !CachedAccountsAllowed(ctx) {
		return ctx
	}
	return context.WithValue(ctx, cachedAccountsKey{}, nil)
}

// provisional is what a caller authenticated from a cached account carries:
// the version the account was read at, and how to authenticate the request
// again from the database.
type provisional struct {
	version int64
	again   func(context.Context) (*Caller, error)
}

// Authenticate returns the caller a credential proves, for one request:
// the one way every transport authenticates a request (a stream's caller is
// a Session instead). No credential is CodeUnauthenticated ("Authentication
// required", decided here alone); a credential that is not valid is the one
// invalid-credential error; throttling is CodeRateLimited.
//
// The account may come from the store's cache even where other processes
// write (see above): the caller returned is then provisional, and every
// Service method confirms it before it answers, so a transport never
// chooses between a cached and a fresh answer. A refusal is always decided
// on the account as the database has it.
func (s *Service) Authenticate(ctx context.Context, cred Credential) (*Caller, error) {
	if cred.Scheme == SchemeNone {
		return nil, errUnauthenticated
	}
	if s.auth == nil {
		return nil, errInvalidCredential
	}
	acct, err := s.auth.Authenticate(context.WithValue(ctx, cachedAccountsKey{}, true), cred)
	if err != nil {
		return nil, err
	}
	c := acct.Caller()
	if !acct.Cached {
		return c, nil
	}
	p := *c
	p.provisional = &provisional{version: acct.Version, again: func(ctx context.Context) (*Caller, error) {
		acct, err := s.auth.Authenticate(ctx, cred)
		if err != nil {
			return nil, err
		}
		return acct.Caller(), nil
	}}
	return &p, nil
}

// readConfirmed runs fn, a read, as c. A provisional c is confirmed by the versions
// fn's statements saw (or, when none did, by asking the store); when its
// account has changed since it was cached, the request is authenticated
// again from the database and fn runs again as the caller is now.
func (s *Service) readConfirmed(ctx context.Context, c *Caller, fn func(context.Context, *Caller) error) error {
	if c == nil || c.provisional == nil {
		return fn(ctx, c)
	}
	k := &IdentityCheck{want: c.provisional.version}
	err := fn(context.WithValue(ctx, identityCheckKey{}, k), c)
	if !k.saw.Load() {
		v, verr := s.currentIdentityVersion(ctx)
		if verr != nil {
			return verr
		}
		k.Saw(v)
	}
	if !k.moved.Load() {
		return err
	}
	c, err = c.provisional.again(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, c)
}

func (s *Service) currentIdentityVersion(ctx context.Context) (int64, error) {
	v, ok := s.store.(IdentityVersioner)
	if !ok {
		return -1, nil // cannot tell: counts as moved
	}
	return v.IdentityVersion(ctx)
}

// current returns c as the database has it now: c itself, unless c is
// provisional, whose request it authenticates again. Every Service method
// that takes a caller but the reads (which confirm it as they read) starts
// with it.
func current(ctx context.Context, c *Caller) (*Caller, error) {
	if c == nil || c.provisional == nil {
		return c, nil
	}
	return c.provisional.again(ctx)
}

// Versioner is implemented by stores that can tell, without a query,
// whether the records of resources may have changed: a store whose every
// write goes through it or is reported to it (package sqlite).
type Versioner interface {
	// Version returns the generation of the records of res: a number that
	// grows once a write that may change any of them has begun, by this
	// process or, where the store can tell, another. ok is false when it
	// cannot tell now (a write of one of them is in flight, or the store
	// cannot know), and then nothing should be kept or served on its
	// strength.
	Version(res ...*Resource) (v uint64, ok bool)
}

// Version returns the store's generation of the records of res (see
// Versioner), for a door that keeps what it computed from them for exactly
// as long as it is current (GraphQL's users cache); ok is false when the
// store cannot tell, and then nothing may be kept.
func (s *Service) Version(res ...*Resource) (v uint64, ok bool) {
	vs, ok := s.store.(Versioner)
	if !ok {
		return 0, false
	}
	return vs.Version(res...)
}
