// Package auth resolves credentials (API keys, bearer tokens, HTTP Basic
// passwords) to accounts: resourceapi.Authenticator over an IdentityStore,
// with the caches that spare a request a password verification or a token
// signature check, and the throttling of password guesses. The Service
// decides what an account may do; this package only says whose it is.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// maxTokenLen bounds a token the cache keeps: no token of this service
// comes near it.
const maxTokenLen = 8 << 10

var (
	errUnauthenticated   = resourceapi.ErrUnauthenticated()
	errInvalidCredential = resourceapi.ErrInvalidCredential()
)

// Authenticator resolves credentials to callers. Roles and permissions come
// from the store on every call, never from a token, so a change to a user
// takes effect on their very next request.
type Authenticator struct {
	store  resourceapi.IdentityStore
	hasher resourceapi.PasswordHasher
	tokens resourceapi.Tokens
	// guesses throttles failed password checks (see Config).
	guesses, guessesFrom resourceapi.RateLimiter
	failuresFrom         resourceapi.RateLimiter // failed checks per client address (see Config)
	now                  resourceapi.Clock

	// dummy is a hash of a random password, verified when an email names
	// no user, so that an unknown email costs what a wrong password costs.
	dummy          string
	verified       *verifiedCache
	verifiedTokens *tokenCache
}

// Config is what an Authenticator is made from.
type Config struct {
	Store  resourceapi.IdentityStore
	Hasher resourceapi.PasswordHasher
	Tokens resourceapi.Tokens
	// AccountGuesses, when set, limits failed password checks per account
	// (whatever their origin), and AccountGuessesFrom per account and client
	// address. A throttled attempt fails with CodeRateLimited before the
	// password is checked. Keep the per-account budget well above the
	// per-client one: it only stops a guesser who spreads over many
	// addresses, and while it is spent the real user cannot sign in by
	// password either (API keys and tokens still work).
	AccountGuesses, AccountGuessesFrom resourceapi.RateLimiter
	// FailuresFrom, when set, limits failed password checks per client
	// address, whatever the accounts: a flood of sign-ins with random
	// emails from one address costs at most its budget of verifications
	// (argon2id, tens of milliseconds of a core each) and then nothing; a
	// throttled attempt fails with CodeRateLimited before any password is
	// checked. Successful sign-ins and remembered credentials take nothing.
	FailuresFrom resourceapi.RateLimiter
	// VerifiedTTL is how long a verified HTTP Basic credential is
	// remembered (default 5 minutes); 0 uses the default, negative turns
	// remembering off.
	VerifiedTTL time.Duration
	// Now is the clock; nil is time.Now.
	Now resourceapi.Clock
}

// New returns an Authenticator for cfg.
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{store: cfg.Store, hasher: cfg.Hasher, tokens: cfg.Tokens,
		guesses: cfg.AccountGuesses, guessesFrom: cfg.AccountGuessesFrom, failuresFrom: cfg.FailuresFrom, now: cfg.Now}
	if a.now == nil {
		a.now = time.Now
	}
	dummy, err := cfg.Hasher.Hash(rand.Text())
	if err != nil {
		return nil, err
	}
	a.dummy = dummy
	ttl := cfg.VerifiedTTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	if ttl > 0 {
		a.verified = newVerifiedCache(ttl, 10000, a.now)
	}
	a.verifiedTokens = &tokenCache{max: 10000, items: make(map[string]resourceapi.Claims)}
	return a, nil
}

// Authenticate returns the account a credential proves (see
// resourceapi.Authenticator).
func (a *Authenticator) Authenticate(ctx context.Context, cred resourceapi.Credential) (acct resourceapi.Account, err error) {
	var stamp string // a token's, which must be the user's
	switch cred.Scheme {
	case resourceapi.SchemeNone:
		return resourceapi.Account{}, errUnauthenticated
	case resourceapi.SchemeAPIKey:
		if !resourceapi.LooksLikeAPIKey(cred.Secret) {
			return resourceapi.Account{}, errInvalidCredential
		}
		acct, err = a.store.AccountByAPIKey(ctx, resourceapi.HashTokenBytes(cred.Secret))
	case resourceapi.SchemeBearer:
		acct, stamp, err = a.bearer(ctx, cred.Secret)
	case resourceapi.SchemeBasic:
		acct, err = a.password(ctx, cred.Email, cred.Password, cred.Client)
	default:
		return resourceapi.Account{}, errInvalidCredential
	}
	if err != nil {
		return resourceapi.Account{}, a.invalid(err)
	}
	if a.refuses(acct, cred.Scheme, stamp) {
		if acct.Cached {
			// Refuse only on what the database says now.
			return a.Authenticate(resourceapi.UncachedAccounts(ctx), cred)
		}
		return resourceapi.Account{}, errInvalidCredential
	}
	return acct, nil
}

// refuses reports whether an account found by a credential of scheme may
// not act: its user is soft-deleted, the API key that found it has
// expired, or the token that named it (stamp) was issued under another
// security stamp than the user's (before a password or email change, the
// end of the user's sessions, or to a deleted user whose id another now
// has).
func (a *Authenticator) refuses(acct resourceapi.Account, scheme resourceapi.Scheme, stamp string) bool {
	switch {
	case acct.User.Bool("deleted"):
		return true
	case !acct.ExpiresAt.IsZero() && !a.now().Before(acct.ExpiresAt):
		return true
	case scheme == resourceapi.SchemeBearer:
		return acct.Stamp == "" || subtle.ConstantTimeCompare([]byte(stamp), []byte(acct.Stamp)) != 1
	}
	return false
}

// Login checks an email and password (the OAuth password grant, the sign-in
// page) with the rules of HTTP Basic, and returns the account.
func (a *Authenticator) Login(ctx context.Context, email, password, client string) (resourceapi.Account, error) {
	acct, err := a.password(ctx, email, password, client)
	if err != nil {
		return resourceapi.Account{}, a.invalid(err)
	}
	if acct.User.Bool("deleted") {
		return resourceapi.Account{}, errInvalidCredential
	}
	return acct, nil
}

// AccountByID returns the account of a user id, as a token's subject names
// it; an unknown or soft-deleted user is the invalid-credential error.
func (a *Authenticator) AccountByID(ctx context.Context, id int64) (resourceapi.Account, error) {
	acct, err := a.store.AccountByID(ctx, id)
	if err != nil {
		return resourceapi.Account{}, a.invalid(err)
	}
	if acct.User.Bool("deleted") {
		return resourceapi.Account{}, errInvalidCredential
	}
	return acct, nil
}

// invalid keeps what a client may learn of a failure: not found and every
// credential error become the one invalid-credential error; throttling and
// failures of the store itself pass through.
func (a *Authenticator) invalid(err error) error {
	switch resourceapi.ErrorCode(err) {
	case resourceapi.CodeNotFound, resourceapi.CodeInvalidToken, resourceapi.CodeValidation, resourceapi.CodeBadRequest:
		return errInvalidCredential
	}
	return err
}

// bearer returns the account an access token names, and the token's
// security stamp, which account checks against the user's.
func (a *Authenticator) bearer(ctx context.Context, token string) (resourceapi.Account, string, error) {
	if a.tokens == nil {
		return resourceapi.Account{}, "", errInvalidCredential
	}
	claims, ok := a.verifiedTokens.get(token, a.now())
	if !ok {
		var err error
		if claims, err = a.tokens.Verify(token); err != nil {
			return resourceapi.Account{}, "", errInvalidCredential
		}
		a.verifiedTokens.put(token, claims)
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id < 1 || id > resourceapi.MaxID || claims.Stamp == "" {
		return resourceapi.Account{}, "", errInvalidCredential
	}
	acct, err := a.store.AccountByID(ctx, id)
	acct.ExpiresAt = claims.ExpiresAt
	return acct, claims.Stamp, err
}

// password checks an email and password. A credential verified recently is
// remembered (by an HMAC of it, never the password) with the hash it was
// verified against: it stays valid while the user's stored hash and email
// are the same, so a password or email change, like a delete, forgets it at
// once.
func (a *Authenticator) password(ctx context.Context, email, password, client string) (resourceapi.Account, error) {
	email = strings.TrimSpace(email)
	if len(email) > resourceapi.MaxEmailLength || len(password) > 1024 {
		return resourceapi.Account{}, errInvalidCredential
	}
	key := a.verified.key(email, password)
	if id, hash, ok := a.verified.get(key); ok {
		acct, err := a.store.AccountByID(ctx, id)
		stored, _ := acct.User["email"].(string)
		if err == nil && acct.PasswordHash == hash && hash != "" && strings.EqualFold(stored, email) {
			return acct, nil
		}
		a.verified.forget(key)
		if err != nil && resourceapi.ErrorCode(err) != resourceapi.CodeNotFound {
			return resourceapi.Account{}, err
		}
	}
	if err := a.admit(ctx, email, client); err != nil {
		return resourceapi.Account{}, err
	}
	// The hash verified is the stored one, never a cached account's, so
	// that a refusal is the database's answer (and a verification costs far
	// more than reading it).
	acct, err := a.store.AccountByEmail(resourceapi.UncachedAccounts(ctx), email)
	if err != nil && resourceapi.ErrorCode(err) != resourceapi.CodeNotFound {
		return resourceapi.Account{}, err
	}
	hash := acct.PasswordHash
	if err != nil {
		hash = ""
	}
	if !a.check(ctx, email, client, hash, password) {
		return resourceapi.Account{}, errInvalidCredential
	}
	a.verified.put(key, acct.User.ID(), hash)
	return acct, nil
}

// admit decides, before a password of the account named by email is
// verified, whether it may be: CodeRateLimited when the account has no
// failed attempts left (overall or from client), or when the client's
// address has spent its request budget. A verification costs far more than
// anything else a request does, so the address pays for it first.
func (a *Authenticator) admit(ctx context.Context, email, client string) error {
	if err := a.throttled(ctx, email, client); err != nil {
		return err
	}
	if b := resourceapi.ClientBudgetFrom(ctx); b != nil {
		return b.Verify(ctx)
	}
	return nil
}

// check verifies password against hash, a user's stored password hash ("":
// no such user, or one without a password, which is verified against a
// dummy all the same, so that it costs the same time), and counts a
// failure against the account named by email.
func (a *Authenticator) check(ctx context.Context, email, client, hash, password string) bool {
	if hash == "" {
		hash = a.dummy
	}
	ok, err := a.hasher.Verify(hash, password)
	if err != nil || !ok || hash == a.dummy {
		a.failed(ctx, email, client)
		return false
	}
	return true
}

// ConfirmPassword checks that password is the current password of user id,
// as a sign-in checks a password: throttled per account and client address
// (a wrong one is a failed guess), paid for by the request's client budget
// (ClientBudget), against the hash the database holds now. A wrong
// password, or a user without one, is the invalid-credential error;
// throttling is CodeRateLimited. The Service calls it for Resource.Confirm.
func (a *Authenticator) ConfirmPassword(ctx context.Context, id int64, password string) error {
	if len(password) > 1024 {
		return errInvalidCredential
	}
	var client string
	if b := resourceapi.ClientBudgetFrom(ctx); b != nil {
		client = b.Client()
	}
	acct, err := a.store.AccountByID(resourceapi.UncachedAccounts(ctx), id)
	if err != nil {
		return a.invalid(err)
	}
	email, _ := acct.User["email"].(string)
	if err := a.admit(ctx, email, client); err != nil {
		return err
	}
	if !a.check(ctx, email, client, acct.PasswordHash, password) {
		return errInvalidCredential
	}
	return nil
}

// guessKeys returns the throttling keys of an email: per account, and per
// account and client. The account is keyed as the store finds it
// (UniqueKey): every spelling that signs in to it shares its budget.
func guessKeys(email, client string) (account, from string) {
	account = "login:" + resourceapi.UniqueKey(strings.TrimSpace(email))
	return account, account + "|" + client
}

// failuresKey is the throttling key of a client address's failed checks,
// whatever the account.
func failuresKey(client string) string { return "failures:" + client }

// throttled fails with CodeRateLimited when the account has no failed
// attempts left, overall or from this client.
func (a *Authenticator) throttled(ctx context.Context, email, client string) error {
	account, from := guessKeys(email, client)
	for _, lim := range []struct {
		l    resourceapi.RateLimiter
		key  string
		what string
	}{{a.guessesFrom, from, "for this account"}, {a.guesses, account, "for this account"},
		{a.failuresFrom, failuresKey(client), "from this address"}} {
		if lim.l == nil || lim.key == failuresKey("") {
			continue
		}
		d, err := lim.l.AllowN(ctx, lim.key, 0)
		if err != nil {
			continue // a limiter that cannot decide does not lock anyone out
		}
		if d.Remaining < 1 {
			return &resourceapi.Error{Code: resourceapi.CodeRateLimited, RetryAfter: max(d.RetryAfter, time.Second),
				Message: "Too many failed sign-in attempts " + lim.what + "; retry later"}
		}
	}
	return nil
}

// failed counts a failed password check against the account.
func (a *Authenticator) failed(ctx context.Context, email, client string) {
	account, from := guessKeys(email, client)
	if a.guessesFrom != nil {
		a.guessesFrom.AllowN(ctx, from, 1)
	}
	if a.guesses != nil {
		a.guesses.AllowN(ctx, account, 1)
	}
	if a.failuresFrom != nil && client != "" {
		a.failuresFrom.AllowN(ctx, failuresKey(client), 1)
	}
}

// verifiedCache remembers recently verified passwords: by an HMAC of the
// email and password under a key drawn at start, so that the memory of the
// process holds no password and no unsalted hash of one.
type verifiedCache struct {
	mac   []byte
	ttl   time.Duration
	max   int
	now   resourceapi.Clock
	mu    sync.Mutex
	items map[[32]byte]verified
	// hits and misses count lookups, under mu.
	hits, misses uint64
}

type verified struct {
	userID int64
	hash   string
	until  time.Time
}

func newVerifiedCache(ttl time.Duration, max int, now resourceapi.Clock) *verifiedCache {
	k := make([]byte, 32)
	rand.Read(k)
	return &verifiedCache{mac: k, ttl: ttl, max: max, now: now, items: make(map[[32]byte]verified)}
}

func (c *verifiedCache) key(email, password string) [32]byte {
	var k [32]byte
	if c == nil {
		return k
	}
	m := hmac.New(sha256.New, c.mac)
	m.Write([]byte(resourceapi.UniqueKey(strings.TrimSpace(email))))
	m.Write([]byte{0})
	m.Write([]byte(password))
	m.Sum(k[:0])
	return k
}

func (c *verifiedCache) get(k [32]byte) (int64, string, bool) {
	if c == nil {
		return 0, "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.items[k]
	if !ok || !c.now().Before(v.until) {
		delete(c.items, k)
		c.misses++
		return 0, "", false
	}
	c.hits++
	return v.userID, v.hash, true
}

func (c *verifiedCache) put(k [32]byte, userID int64, hash string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= c.max {
		// Full: drop what has expired, then arbitrary entries down to three
		// quarters, so a flood of credentials costs a sweep per quarter of
		// the cache, not per credential. A dropped entry costs one more
		// password check.
		now := c.now()
		for k, v := range c.items {
			if !now.Before(v.until) {
				delete(c.items, k)
			}
		}
		for k := range c.items {
			if len(c.items) <= c.max*3/4 {
				break
			}
			delete(c.items, k)
		}
	}
	c.items[k] = verified{userID: userID, hash: hash, until: c.now().Add(c.ttl)}
}

func (c *verifiedCache) forget(k [32]byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.items, k)
	c.mu.Unlock()
}

// tokenCache remembers access tokens that verified, until they expire: a
// token is immutable and its verification depends only on it and the time,
// so a token that verified once verifies again until its exp. Roles and
// permissions are never cached with it (they come from the store). Bounded:
// when full, expired entries go, then arbitrary ones (a dropped entry costs
// one more verification).
type tokenCache struct {
	mu           sync.Mutex
	hits, misses uint64 // lookups, under mu
	max          int
	items        map[string]resourceapi.Claims
}

func (c *tokenCache) get(token string, now time.Time) (resourceapi.Claims, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.items[token]
	if ok && !now.Before(cl.ExpiresAt) {
		delete(c.items, token)
		ok = false
	}
	if !ok {
		c.misses++
		return resourceapi.Claims{}, false
	}
	c.hits++
	return cl, true
}

func (c *tokenCache) put(token string, cl resourceapi.Claims) {
	if len(token) > maxTokenLen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= c.max {
		for k := range c.items {
			if len(c.items) <= c.max*3/4 {
				break
			}
			delete(c.items, k)
		}
	}
	c.items[token] = cl
}

// Caches returns the lookups of the authenticator's caches: verified
// passwords ("passwords", HTTP Basic) and verified access tokens
// ("tokens").
func (a *Authenticator) Caches() []resourceapi.CacheStats {
	var out []resourceapi.CacheStats
	if c := a.verified; c != nil {
		c.mu.Lock()
		out = append(out, resourceapi.CacheStats{Name: "passwords", Hits: c.hits, Misses: c.misses})
		c.mu.Unlock()
	}
	if c := a.verifiedTokens; c != nil {
		c.mu.Lock()
		out = append(out, resourceapi.CacheStats{Name: "tokens", Hits: c.hits, Misses: c.misses})
		c.mu.Unlock()
	}
	return out
}
