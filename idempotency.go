package resourceapi

import (
	"context"
	"sync"
	"time"
)

// DefaultIdempotencyRetention is how long an idempotency key and its
// response are kept after the write they protect, unless
// Service.SetIdempotencyRetention says otherwise.
const DefaultIdempotencyRetention = 24 * time.Hour

// MaxIdempotencyKeyLen bounds an idempotency key, in bytes.
const MaxIdempotencyKeyLen = 255

// Idempotency asks a write (Service.Create, Service.Update) to happen at
// most once per caller and key (draft-ietf-httpapi-idempotency-key-header).
// The store keeps the key, the request's fingerprint and the response in the
// write's own transaction: a write is never committed without its key, nor a
// key without its write. A later request of the same caller with the same key
// does not write again: with the same fingerprint it gets the kept response
// (*Replay), with another it is CodeUnprocessable; while the first is still
// under way on this instance, CodeConflict. Requests that race on several
// instances are decided by the key's uniqueness in the database: one commits,
// the others write nothing and get its response.
//
// A transport makes one per request and hands it to the Service in the
// context (WithIdempotency); the Service completes it and passes it on to the
// store.
type Idempotency struct {
	// Key is the client's key, already checked by the transport: 1 to
	// MaxIdempotencyKeyLen printable characters.
	Key string
	// Fingerprint identifies the request the key came with (the transport
	// hashes what decides the write: method, path and body).
	Fingerprint string
	// Response renders, inside the write's transaction, what the transport
	// answers for the record the write stored; the store keeps it with the
	// key. The record holds no plain value of a generated secret (an API
	// key), which no store keeps: a replay does not show it again.
	Response func(rec Record) ([]byte, error)

	// Caller and Retention are set by the Service: the key is the caller's
	// own (Caller.UserID), kept for Retention after the write commits.
	Caller    int64
	Retention time.Duration
}

// StoredIdempotency is what a store keeps of an idempotent write.
type StoredIdempotency struct {
	Fingerprint string
	Response    []byte
}

// Outcome returns the answer to a request of idem whose key was already
// used by the write stored: a *Replay of its response when the fingerprints
// agree, else CodeUnprocessable.
func (idem *Idempotency) Outcome(stored StoredIdempotency) error {
	if stored.Fingerprint != idem.Fingerprint {
		return &Error{Code: CodeUnprocessable,
			Message: "This Idempotency-Key was used for another request: a retry must send the same request; a new request needs a new key"}
	}
	return &Replay{Response: stored.Response}
}

// Replay is returned by a write instead of doing it again: the key of its
// Idempotency was used by an earlier request that committed, and Response
// is what that request was answered. A transport sends it as it is, and says
// it is a replay.
type Replay struct {
	Response []byte
}

func (*Replay) Error() string { return "idempotent request: the stored response is replayed" }

// IdempotencyStore is implemented by stores that keep idempotency keys. Their
// Create and Update honour the Idempotency of their context
// (IdempotencyFrom): they return the Outcome of a key that is already stored,
// and otherwise store the key with the write, in its transaction.
type IdempotencyStore interface {
	// Idempotent returns what is stored for caller's key, found false when
	// nothing is or it has expired.
	Idempotent(ctx context.Context, caller int64, key string) (_ StoredIdempotency, found bool, _ error)
}

// ErrIdempotencyInProgress is the error of a request whose key an earlier
// request, still under way, holds.
var ErrIdempotencyInProgress = &Error{Code: CodeConflict,
	Message: "A request with this Idempotency-Key is still in progress: retry once it has completed"}

type idempotencyKey struct{}

// WithIdempotency returns a context in which Service.Create and
// Service.Update make their write idempotent by idem.
func WithIdempotency(ctx context.Context, idem *Idempotency) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, idem)
}

// IdempotencyFrom returns the Idempotency of ctx, or nil.
func IdempotencyFrom(ctx context.Context) *Idempotency {
	idem, _ := ctx.Value(idempotencyKey{}).(*Idempotency)
	return idem
}

// SetIdempotencyRetention sets how long idempotency keys are kept (0:
// DefaultIdempotencyRetention). Call it before the service serves requests.
func (s *Service) SetIdempotencyRetention(d time.Duration) { s.retention = d }

// claims are the keys of the idempotent writes under way in this process.
type claims struct {
	mu   sync.Mutex
	held map[claim]struct{}
}

type claim struct {
	caller int64
	key    string
}

// idempotent prepares the write of a request whose context carries an
// Idempotency: it returns the context the store's write takes (with the
// caller's own copy of it), or the Outcome of the key when it was used
// already, or ErrIdempotencyInProgress while another request of this process
// holds it. release, never nil, gives the key back once the write is done.
func (s *Service) idempotent(ctx context.Context, c *Caller) (_ context.Context, release func(), _ error) {
	idem := IdempotencyFrom(ctx)
	if idem == nil {
		return ctx, func() {}, nil
	}
	store, ok := s.store.(IdempotencyStore)
	if !ok {
		return nil, func() {}, Errorf(CodeBadRequest, "This server does not keep idempotency keys: send the request without Idempotency-Key")
	}
	own := *idem
	own.Caller = c.UserID
	own.Retention = s.retention
	if own.Retention <= 0 {
		own.Retention = DefaultIdempotencyRetention
	}
	k := claim{own.Caller, own.Key}
	s.claims.mu.Lock()
	if _, held := s.claims.held[k]; held {
		s.claims.mu.Unlock()
		return nil, func() {}, ErrIdempotencyInProgress
	}
	if s.claims.held == nil {
		s.claims.held = make(map[claim]struct{})
	}
	s.claims.held[k] = struct{}{}
	s.claims.mu.Unlock()
	release = func() {
		s.claims.mu.Lock()
		delete(s.claims.held, k)
		s.claims.mu.Unlock()
	}
	stored, found, err := store.Idempotent(ctx, own.Caller, own.Key)
	if err != nil || found {
		release()
		if err != nil {
			return nil, func() {}, err
		}
		return nil, func() {}, own.Outcome(stored)
	}
	return WithIdempotency(ctx, &own), release, nil
}
