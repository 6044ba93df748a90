package resourceapi

import (
	"context"
	"sync"
	"time"
)

// Callers of streams, and how the rule layer keeps them current.
//
// A request is authenticated once and answered at once. A stream (a GraphQL
// subscription connection) is opened by one request and then delivers for
// as long as it lasts, so its caller is kept as a Session, and before the
// stream delivers, the rule layer confirms that the request that opened it
// would still be accepted (Service.Confirm): the credential still valid (a
// key not revoked, a user not deleted, a token not expired) and the
// permission still held.
//
// Confirming costs no query per stream. The store's identity version
// (IdentityVersioner) moves with every change that decides access; the
// Service reads it once for all the streams of this process, after the
// events they are about to deliver arrived (identityWatch), and a session
// whose version it still is is current. Only a session whose version moved
// authenticates again, from the database, and then runs the permission
// check again. A credential that expires on its own (a bearer token) ends at
// its expiry, which the session reports for the stream to act on with a
// timer.

// Session is the caller of a stream, kept current by Service.Confirm. It is
// safe for concurrent use.
type Session struct {
	auth    Authenticator
	cred    Credential
	expires time.Time

	mu      sync.Mutex
	caller  *Caller
	version int64
	known   bool // version was read (the store keeps one)
	// allowed holds the resources the caller may read, as of version.
	allowed map[*Resource]bool
	// refused is why the credential is no longer valid: for good.
	refused error
}

// Session authenticates cred, as Authenticate does, for a stream that keeps
// its caller (a GraphQL subscription connection): the identity version is
// read first, so that any change after it is seen by Confirm, and the
// account is read from the database. A credential that ends on its own (a
// bearer token, an API key with an expiry) ends the session then.
func (s *Service) Session(ctx context.Context, cred Credential) (*Session, error) {
	if cred.Scheme == SchemeNone {
		return nil, errUnauthenticated
	}
	if s.auth == nil {
		return nil, errInvalidCredential
	}
	sess := &Session{auth: s.auth, cred: cred}
	if v, ok := s.store.(IdentityVersioner); ok {
		version, err := v.IdentityVersion(ctx)
		if err != nil {
			return nil, err
		}
		sess.version, sess.known = version, true
	}
	acct, err := s.auth.Authenticate(UncachedAccounts(ctx), cred)
	if err != nil {
		return nil, err
	}
	sess.caller = acct.Caller()
	sess.expires = acct.ExpiresAt
	return sess, nil
}

// Caller returns the session's caller as last confirmed.
func (s *Session) Caller() *Caller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caller
}

// Expires returns when the session's credential ends on its own (a bearer
// token's expiry), or the zero time when it does not.
func (s *Session) Expires() time.Time { return s.expires }

// Confirm reports whether the caller of sess may still receive what the
// records of res say, as of since (when the events about to be delivered
// reached this process): a change that decides access and was committed
// before since, on any instance, applies. It returns nil when it may;
// CodeInvalidToken when the credential is no longer valid (revoked,
// expired, its user deleted or soft-deleted, a password changed), and then
// for good; CodeForbidden when the caller may no longer read res; any other
// error when the store cannot tell now.
//
// It costs no query when nothing that decides access changed: the identity
// version is read once for every session of this process (at most one read
// per since), and only a session whose version moved authenticates again.
func (s *Service) Confirm(ctx context.Context, sess *Session, since time.Time, res *Resource) error {
	return s.confirmSession(ctx, sess, since, func(c *Caller) error {
		if sess.allowed[res] {
			return nil
		}
		if err := s.Authorize(ctx, c, res, OpRead); err != nil {
			return err
		}
		if sess.allowed == nil {
			sess.allowed = make(map[*Resource]bool)
		}
		sess.allowed[res] = true
		return nil
	})
}

// confirmSession confirms the credential of sess as of since (see Confirm) and
// then runs then with its caller, under the session's lock.
func (s *Service) confirmSession(ctx context.Context, sess *Session, since time.Time, then func(*Caller) error) error {
	if !sess.expires.IsZero() && !time.Now().Before(sess.expires) {
		sess.refuse(errInvalidCredential)
		return errInvalidCredential
	}
	version, known := int64(0), false
	if v, ok := s.store.(IdentityVersioner); ok {
		var err error
		if version, err = s.identity.since(ctx, v, since); err != nil {
			return err
		}
		known = true
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.refused != nil {
		return sess.refused
	}
	if !known || !sess.known || version != sess.version {
		acct, err := sess.auth.Authenticate(UncachedAccounts(ctx), sess.cred)
		switch ErrorCode(err) {
		case "":
		case CodeInvalidToken, CodeUnauthenticated:
			sess.refused = err
			return err
		default:
			return err
		}
		sess.caller, sess.version, sess.known = acct.Caller(), version, known
		clear(sess.allowed)
	}
	return then(sess.caller)
}

func (s *Session) refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = err
	}
}

// identityWatch shares reads of the identity version among the sessions of
// a Service: a session that needs the version as of since uses a read that
// began at or after since, the last one or one in flight, and starts one
// only when there is none; so however many sessions confirm the same events,
// the store is asked about once.
type identityWatch struct {
	mu       sync.Mutex
	version  int64
	readAt   time.Time // when the read of version began
	inflight *identityRead
}

type identityRead struct {
	started time.Time
	done    chan struct{}
	version int64
	err     error
}

// identityReadTimeout bounds one read of the identity version, which serves
// every session waiting for it, whatever becomes of the one that started it.
const identityReadTimeout = 5 * time.Second

// since returns the identity version as read by a read that began at or
// after since.
func (w *identityWatch) since(ctx context.Context, v IdentityVersioner, since time.Time) (int64, error) {
	for {
		w.mu.Lock()
		if !w.readAt.IsZero() && !w.readAt.Before(since) {
			version := w.version
			w.mu.Unlock()
			return version, nil
		}
		r := w.inflight
		if r == nil {
			r = &identityRead{started: time.Now(), done: make(chan struct{})}
			w.inflight = r
			w.mu.Unlock()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), identityReadTimeout)
			r.version, r.err = v.IdentityVersion(rctx)
			cancel()
			w.mu.Lock()
			if r.err == nil && r.started.After(w.readAt) {
				w.version, w.readAt = r.version, r.started
			}
			w.inflight = nil
			close(r.done)
			w.mu.Unlock()
			return r.version, r.err
		}
		w.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if !r.started.Before(since) {
			return r.version, r.err
		}
		// It began before since: the next one will not.
	}
}
