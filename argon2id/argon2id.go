// Package argon2id implements resourceapi.PasswordHasher with Argon2id
// (RFC 9106) from golang.org/x/crypto/argon2, encoding hashes as PHC strings:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>
//
// with salt and hash in standard base64 without padding, the format of the
// reference implementation and of most other libraries, so stored hashes stay
// portable.
//
// Every hash carries its own parameters and Verify uses those, so the cost
// can be raised later without invalidating stored hashes (see Parse for
// deciding when to rehash).
package argon2id

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.PasswordHasher = (*Hasher)(nil)

// Limits on the parameters of a hash. Verify allocates Memory KiB and runs
// Time passes for whatever a stored string says, so a corrupted or planted
// hash must be refused before it can make one request allocate gigabytes or
// spin for minutes. The lower bounds are those of RFC 9106 (salt, tag) or
// plain sense (a hash shorter than 16 bytes, which this package never makes,
// is too weak to trust).
const (
	MaxMemory  = 1 << 20 // KiB, so 1 GiB
	MaxTime    = 100
	MinSaltLen = 8
	MaxSaltLen = 1024
	MinKeyLen  = 16
	MaxKeyLen  = 1024
	// maxEncodedLen bounds the input before any parsing or decoding; a
	// maximal legal hash is well under it.
	maxEncodedLen = 4096
)

// ErrInvalidHash is wrapped by every error that reports an encoded hash as
// malformed or as having parameters outside the limits. A wrong password is
// not an error.
var ErrInvalidHash = errors.New("invalid argon2id hash")

// Hasher hashes secrets with Argon2id. Its fields are the parameters of new
// hashes only; Verify reads the parameters from the hash it is given. A
// Hasher is safe for concurrent use. Each Hash or Verify allocates Memory KiB
// and keeps a core busy, so a Hasher from New runs at most half as many of
// them at once as there are cores (GOMAXPROCS, at least one) and queues the
// rest: a burst of requests with passwords costs those requests latency, not
// memory (64 at once would otherwise take 1.2 GiB), and never takes the
// cores that requests with API keys and tokens, which verify no password,
// are served on.
type Hasher struct {
	Memory  uint32 // KiB
	Time    uint32 // passes over memory
	Threads uint8  // lanes; also the number of goroutines used
	KeyLen  uint32 // bytes of hash output
	SaltLen uint32 // bytes of random salt

	// slots bounds concurrent computations; nil means no bound.
	slots chan struct{}
}

// New returns a Hasher with the OWASP Password Storage Cheat Sheet's first
// Argon2id configuration: 19 MiB, 2 passes, 1 lane, with a 16-byte salt and a
// 32-byte hash. One lane keeps a login to one core; the cost is about 50 ms
// on the 2-core machines this project runs on.
func New() *Hasher {
	return &Hasher{Memory: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16,
		slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// Concurrency is how many computations h runs at once, the rest waiting
// their turn; 0 means no bound.
func (h *Hasher) Concurrency() int { return cap(h.slots) }

// idKey computes the Argon2id key in one of h's slots.
func (h *Hasher) idKey(secret, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if h.slots != nil {
		h.slots <- struct{}{}
		defer func() { <-h.slots }()
	}
	return argon2.IDKey(secret, salt, time, memory, threads, keyLen)
}

// Hash returns the PHC string of secret under a fresh random salt. It fails
// only when h's parameters are outside the limits (which would make the hash
// unverifiable) or the system's random source fails.
func (h *Hasher) Hash(secret string) (string, error) {
	if err := h.check(); err != nil {
		return "", fmt.Errorf("argon2id: hash: %w", err)
	}
	salt := make([]byte, h.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("argon2id: hash: read salt: %w", err)
	}
	key := h.idKey([]byte(secret), salt, h.Time, h.Memory, h.Threads, h.KeyLen)
	return h.encode(salt, key), nil
}

// Verify reports whether secret matches the encoded hash, comparing in
// constant time. A wrong secret gives (false, nil); an encoded hash that is
// malformed, of another algorithm or version, or whose parameters are outside
// the limits gives an error wrapping ErrInvalidHash, before any expensive
// work.
func (h *Hasher) Verify(encoded, secret string) (bool, error) {
	p, salt, key, err := decode(encoded)
	if err != nil {
		return false, fmt.Errorf("argon2id: verify: %w", err)
	}
	got := h.idKey([]byte(secret), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// Parse returns the parameters an encoded hash was made with, so that a
// caller can rehash a password on its next successful login when they differ
// from the current Hasher's. Errors are those of Verify.
func Parse(encoded string) (Hasher, error) {
	p, _, _, err := decode(encoded)
	if err != nil {
		return Hasher{}, fmt.Errorf("argon2id: parse: %w", err)
	}
	return p, nil
}

func (h *Hasher) encode(salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, h.Memory, h.Time, h.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// check reports parameters that Verify would refuse, so that Hash never
// writes a hash that cannot be verified, and IDKey, which panics on zero
// threads, is never called with them.
func (h *Hasher) check() error {
	switch {
	case h.Threads < 1:
		return fmt.Errorf("%w: parallelism must be at least 1", ErrInvalidHash)
	// RFC 9106 requires m >= 8p; x/crypto silently raises m instead, which
	// would make our hash disagree with other implementations.
	case h.Memory < 8*uint32(h.Threads) || h.Memory > MaxMemory:
		return fmt.Errorf("%w: memory must be %d to %d KiB", ErrInvalidHash, 8*uint32(h.Threads), MaxMemory)
	case h.Time < 1 || h.Time > MaxTime:
		return fmt.Errorf("%w: time must be 1 to %d", ErrInvalidHash, MaxTime)
	case h.SaltLen < MinSaltLen || h.SaltLen > MaxSaltLen:
		return fmt.Errorf("%w: salt must be %d to %d bytes", ErrInvalidHash, MinSaltLen, MaxSaltLen)
	case h.KeyLen < MinKeyLen || h.KeyLen > MaxKeyLen:
		return fmt.Errorf("%w: hash must be %d to %d bytes", ErrInvalidHash, MinKeyLen, MaxKeyLen)
	}
	return nil
}

// decode parses a PHC string strictly: the fields in their fixed order,
// canonical decimals and canonical unpadded base64, so that one hash has one
// spelling and nothing unexpected reaches IDKey.
func decode(encoded string) (p Hasher, salt, key []byte, err error) {
	bad := func(what string) (Hasher, []byte, []byte, error) {
		return Hasher{}, nil, nil, fmt.Errorf("%w: %s", ErrInvalidHash, what)
	}
	if len(encoded) > maxEncodedLen {
		return bad("too long")
	}
	// The base64 decoder skips line breaks; refuse them so that no second
	// spelling of a hash is accepted.
	if strings.ContainsAny(encoded, "\r\n") {
		return bad("contains a line break")
	}
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" {
		return bad("not a PHC string")
	}
	if parts[1] != "argon2id" {
		return bad("algorithm is not argon2id")
	}
	v, ok := field(parts[2], "v", 1<<32-1)
	if !ok || v != argon2.Version {
		return bad("version is not 19")
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return bad("parameters are not m,t,p")
	}
	m, okM := field(params[0], "m", MaxMemory)
	t, okT := field(params[1], "t", MaxTime)
	threads, okP := field(params[2], "p", 255)
	if !okM || !okT || !okP {
		return bad("parameters are not m,t,p within limits")
	}
	b64 := base64.RawStdEncoding.Strict()
	if salt, err = b64.DecodeString(parts[4]); err != nil {
		return bad("salt is not unpadded base64")
	}
	if key, err = b64.DecodeString(parts[5]); err != nil {
		return bad("hash is not unpadded base64")
	}
	p = Hasher{Memory: m, Time: t, Threads: uint8(threads), SaltLen: uint32(len(salt)), KeyLen: uint32(len(key))}
	if err := p.check(); err != nil {
		return Hasher{}, nil, nil, err
	}
	return p, salt, key, nil
}

// field parses "name=N" where N is a decimal without sign or leading zeros
// and at most limit.
func field(s, name string, limit uint32) (uint32, bool) {
	digits, ok := strings.CutPrefix(s, name+"=")
	if !ok || digits == "" || len(digits) > 10 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > uint64(limit) {
		return 0, false
	}
	return uint32(n), true
}
