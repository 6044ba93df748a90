package resourceapi

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
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

// identityCheckContext is a context that carries an IdentityCheck, as
// context.WithValue would, in one allocation with the check.
type identityCheckContext struct {
	context.Context
	check IdentityCheck
}

func (c *identityCheckContext) Value(key any) any {
	if key == (identityCheckKey{}) {
		return &c.check
	}
	return c.Context.Value(key)
}

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
	s       *Service
	cred    Credential
}

// again authenticates the request again from the database.
func (p *provisional) again(ctx context.Context) (*Caller, error) {
	acct, err := p.s.auth.Authenticate(ctx, p.cred)
	if err != nil {
		return nil, err
	}
	return acct.Caller(), nil
}

// provisionalCaller is a provisional caller and what it carries, in one
// allocation.
type provisionalCaller struct {
	caller Caller
	prov   provisional
}

// cachedAccountsContext is its Context with CachedAccountsAllowed, as
// context.WithValue(ctx, cachedAccountsKey{}, true) would be, in 16 bytes
// instead of 48: Authenticate makes one for every request.
type cachedAccountsContext struct{ context.Context }

func (c *cachedAccountsContext) Value(key any) any {
	if key == (cachedAccountsKey{}) {
		return true
	}
	return c.Context.Value(key)
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
	acct, err := s.auth.Authenticate(&cachedAccountsContext{ctx}, cred)
	if err != nil {
		return nil, err
	}
	c := acct.Caller()
	if !acct.Cached {
		return c, nil
	}
	p := &provisionalCaller{caller: *c, prov: provisional{version: acct.Version, s: s, cred: cred}}
	p.caller.provisional = &p.prov
	return &p.caller, nil
}

// readConfirmed runs fn, a read, as c. A provisional c is confirmed by the versions
// fn's statements saw (or, when none did, by asking the store); when its
// account has changed since it was cached, the request is authenticated
// again from the database and fn runs again as the caller is now.
func (s *Service) readConfirmed(ctx context.Context, c *Caller, fn func(context.Context, *Caller) error) error {
	if c == nil || c.provisional == nil {
		return fn(ctx, c)
	}
	kc := &identityCheckContext{Context: ctx}
	k := &kc.check
	k.want = c.provisional.version
	err := fn(kc, c)
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

// IdentityConfirmer is implemented by a store whose write transactions can
// confirm a provisional caller themselves: a write whose context carries a
// version (IdentityConfirmFrom) commits only if the database's identity
// version is still that one when it commits (checked in the transaction,
// with its last statements), and fails with ErrIdentityMoved, having
// committed nothing, otherwise.
type IdentityConfirmer interface {
	ConfirmsIdentity() bool
}

// ErrIdentityMoved is the error of a write that an IdentityConfirmer did not
// commit because the identity version had moved: the Service authenticates
// the request again and runs the write again (writeAs). It never reaches a
// transport.
var ErrIdentityMoved = errors.New("the identity version moved before the commit")

type identityConfirmKey struct{}

// WithIdentityConfirm returns ctx asking the write it carries to commit only
// while the identity version is v (see IdentityConfirmer): what writeAs
// gives a write by a provisional caller.
func WithIdentityConfirm(ctx context.Context, v int64) context.Context {
	return context.WithValue(ctx, identityConfirmKey{}, v)
}

// IdentityConfirmFrom returns the identity version a write must still see
// when it commits (see IdentityConfirmer), and whether there is one.
func IdentityConfirmFrom(ctx context.Context) (int64, bool) {
	v, ok := ctx.Value(identityConfirmKey{}).(int64)
	return v, ok
}

// writeAs runs fn, a write, as c as the database has it. A provisional c
// is confirmed by the write's own transaction where the store can
// (IdentityConfirmer), which spares the write a read of the account (a
// round trip and a transaction on PostgreSQL): if the identity version
// moved since the account was cached, the transaction commits nothing, and
// the request is authenticated again from the database and fn runs again.
// A write that fails otherwise (a refusal, a conflict) asks the version, as
// a read that saw none does, and runs again if it moved: a refusal is
// decided on the account as the database has it.
// Otherwise (no confirming store, or an idempotency key, whose claim is
// not made for a second run), c is authenticated again first (current).
// fn must be able to run twice: rec, what it writes, is handed to it anew
// each time (a copy for the first run), so only a rec whose Clone is deep
// takes the confirmed path.
func (s *Service) writeAs(ctx context.Context, c *Caller, rec Record, fn func(context.Context, *Caller, Record) error) error {
	if c == nil || c.provisional == nil || IdempotencyFrom(ctx) != nil || !flat(rec) {
		c, err := current(ctx, c)
		if err != nil {
			return err
		}
		return fn(ctx, c, rec)
	}
	if ic, ok := s.store.(IdentityConfirmer); !ok || !ic.ConfirmsIdentity() {
		c, err := current(ctx, c)
		if err != nil {
			return err
		}
		return fn(ctx, c, rec)
	}
	err := fn(WithIdentityConfirm(ctx, c.provisional.version), c, rec.Clone())
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrIdentityMoved) {
		// A refusal, or a write that failed before its commit, decided
		// on the cached account: it stands only if that account is
		// still the database's (as in readConfirmed).
		v, verr := s.currentIdentityVersion(ctx)
		if verr != nil {
			return verr
		}
		if v == c.provisional.version {
			return err
		}
	}
	c, err = c.provisional.again(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, c, rec)
}

// flat reports whether rec holds only values that Clone copies whole:
// scalars and lists of strings.
func flat(rec Record) bool {
	for _, v := range rec {
		switch v.(type) {
		case nil, string, bool, int64, int, float64, time.Time, []string:
		default:
			return false
		}
	}
	return true
}

// current returns c as the database has it now: c itself, unless c is
// provisional, whose request it authenticates again. Every Service method
// that takes a caller but the reads (which confirm it as they read) and
// the writes of writeAs starts with it.
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
