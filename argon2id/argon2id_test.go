package argon2id_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/argon2id"
)

// small returns a Hasher cheap enough to run many times in a test; only
// TestNew pays for the production parameters.
func small() *argon2id.Hasher {
	return &argon2id.Hasher{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}
}

func mustHash(tb testing.TB, h *argon2id.Hasher, secret string) string {
	tb.Helper()
	encoded, err := h.Hash(secret)
	if err != nil {
		tb.Fatalf("Hash(%q): %v", secret, err)
	}
	return encoded
}

func mustVerify(tb testing.TB, h *argon2id.Hasher, encoded, secret string) bool {
	tb.Helper()
	ok, err := h.Verify(encoded, secret)
	if err != nil {
		tb.Fatalf("Verify(%q, %q): %v", encoded, secret, err)
	}
	return ok
}

func TestNew(t *testing.T) {
	h := argon2id.New()
	encoded := mustHash(t, h, "correct horse battery staple")
	if got, want := encoded[:len("$argon2id$v=19$m=19456,t=2,p=1$")], "$argon2id$v=19$m=19456,t=2,p=1$"; got != want {
		t.Errorf("prefix = %q, want %q", got, want)
	}
	if !mustVerify(t, h, encoded, "correct horse battery staple") {
		t.Error("Verify(right secret) = false, want true")
	}
	if mustVerify(t, h, encoded, "correct horse battery stapler") {
		t.Error("Verify(wrong secret) = true, want false")
	}
	p, err := argon2id.Parse(encoded)
	if err != nil {
		t.Fatal(err)
	}
	// New's parameters, as a Hasher without New's concurrency bound.
	want := argon2id.Hasher{Memory: h.Memory, Time: h.Time, Threads: h.Threads, KeyLen: h.KeyLen, SaltLen: h.SaltLen}
	if p != want {
		t.Errorf("Parse = %+v, want %+v", p, want)
	}
}

// TestNewLeavesHalfTheCores checks that New's Hasher computes on at most
// half the cores at once (at least one), so that a flood of passwords
// leaves the other half to requests that verify none.
func TestNewLeavesHalfTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 16: 8} {
		runtime.GOMAXPROCS(procs)
		if got := argon2id.New().Concurrency(); got != want {
			t.Errorf("GOMAXPROCS %d: Concurrency() = %d, want %d", procs, got, want)
		}
	}
	if got := (&argon2id.Hasher{}).Concurrency(); got != 0 {
		t.Errorf("a Hasher not from New: Concurrency() = %d, want 0 (no bound)", got)
	}
}

// TestNewBoundsConcurrency checks that New's Hasher serves many concurrent
// calls (they queue for its slots) with every result right.
func TestNewBoundsConcurrency(t *testing.T) {
	h := argon2id.New()
	h.Memory, h.Time = 64, 1 // keep the test cheap; the slots are New's
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			secret := fmt.Sprint("secret-", i)
			if !mustVerify(t, h, mustHash(t, h, secret), secret) {
				t.Errorf("Verify(Hash(%q)) = false", secret)
			}
		})
	}
	wg.Wait()
}

func TestRoundTrip(t *testing.T) {
	h := small()
	for _, secret := range []string{"password", "", "pässwörd ☃", strings.Repeat("x", 1024), "with\x00nul"} {
		encoded := mustHash(t, h, secret)
		if !mustVerify(t, h, encoded, secret) {
			t.Errorf("Verify(Hash(%.20q)) = false, want true", secret)
		}
	}
}

func TestHashIsSalted(t *testing.T) {
	h := small()
	a, b := mustHash(t, h, "password"), mustHash(t, h, "password")
	if a == b {
		t.Errorf("two hashes of one secret are equal (%s): salt is not random", a)
	}
}

func TestWrongPassword(t *testing.T) {
	h := small()
	encoded := mustHash(t, h, "password")
	for _, secret := range []string{"Password", "password ", "passwor", "", "password\x00"} {
		if mustVerify(t, h, encoded, secret) {
			t.Errorf("Verify(%q) = true, want false", secret)
		}
	}
}

// The reference implementation's test vectors (phc-winner-argon2 src/test.c),
// so hashes made elsewhere verify here and ours verify elsewhere.
func TestReferenceVectors(t *testing.T) {
	for _, encoded := range []string{
		"$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4",
		"$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc",
	} {
		// Verify uses the hash's parameters, not the Hasher's.
		if !mustVerify(t, argon2id.New(), encoded, "password") {
			t.Errorf("Verify(%s, password) = false, want true", encoded)
		}
		if mustVerify(t, argon2id.New(), encoded, "passwore") {
			t.Errorf("Verify(%s, passwore) = true, want false", encoded)
		}
	}
}

func TestParse(t *testing.T) {
	want := argon2id.Hasher{Memory: 96, Time: 3, Threads: 2, KeyLen: 24, SaltLen: 12}
	encoded := mustHash(t, &want, "secret")
	if got, want := encoded[:len("$argon2id$v=19$m=96,t=3,p=2$")], "$argon2id$v=19$m=96,t=3,p=2$"; got != want {
		t.Errorf("prefix = %q, want %q", got, want)
	}
	got, err := argon2id.Parse(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
	// A hasher with other parameters still verifies it: parameters can change.
	if !mustVerify(t, small(), encoded, "secret") {
		t.Error("Verify with other parameters = false, want true")
	}

	got, err = argon2id.Parse("$argon2id$v=19$m=1048576,t=100,p=255$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4")
	if err != nil {
		t.Fatalf("Parse at the limits: %v", err)
	}
	if want := (argon2id.Hasher{Memory: argon2id.MaxMemory, Time: argon2id.MaxTime, Threads: 255, KeyLen: 32, SaltLen: 8}); got != want {
		t.Errorf("Parse at the limits = %+v, want %+v", got, want)
	}
}

func TestMalformed(t *testing.T) {
	const valid = "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4"
	const salt, hash = "c29tZXNhbHQ", "nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4"
	for _, tc := range []struct{ name, encoded string }{
		{"empty", ""},
		{"dollar", "$"},
		{"bcrypt", "$2a$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"},
		{"plain text", "password"},
		{"no leading dollar", valid[1:]},
		{"trailing dollar", valid + "$"},
		{"missing hash", "$argon2id$v=19$m=256,t=2,p=1$" + salt},
		{"missing version", "$argon2id$m=256,t=2,p=1$" + salt + "$" + hash},
		{"argon2i", strings.Replace(valid, "argon2id", "argon2i", 1)},
		{"argon2d", strings.Replace(valid, "argon2id", "argon2d", 1)},
		{"upper case", strings.Replace(valid, "argon2id", "ARGON2ID", 1)},
		{"version 16", strings.Replace(valid, "v=19", "v=16", 1)},
		{"version empty", strings.Replace(valid, "v=19", "v=", 1)},
		{"version huge", strings.Replace(valid, "v=19", "v=99999999999999999999", 1)},
		{"params reordered", strings.Replace(valid, "m=256,t=2,p=1", "t=2,m=256,p=1", 1)},
		{"params missing", strings.Replace(valid, "m=256,t=2,p=1", "m=256,t=2", 1)},
		{"params extra", strings.Replace(valid, "m=256,t=2,p=1", "m=256,t=2,p=1,keyid=x", 1)},
		{"memory over 1 GiB", strings.Replace(valid, "m=256", "m=1048577", 1)},
		{"memory overflows uint32", strings.Replace(valid, "m=256", "m=4294967296", 1)},
		{"memory zero", strings.Replace(valid, "m=256", "m=0", 1)},
		{"memory under 8p", strings.Replace(valid, "m=256,t=2,p=1", "m=15,t=2,p=2", 1)},
		{"memory negative", strings.Replace(valid, "m=256", "m=-256", 1)},
		{"memory plus sign", strings.Replace(valid, "m=256", "m=+256", 1)},
		{"memory leading zero", strings.Replace(valid, "m=256", "m=0256", 1)},
		{"memory hex", strings.Replace(valid, "m=256", "m=0x100", 1)},
		{"memory space", strings.Replace(valid, "m=256", "m= 256", 1)},
		{"time zero", strings.Replace(valid, "t=2", "t=0", 1)},
		{"time over 100", strings.Replace(valid, "t=2", "t=101", 1)},
		{"threads zero", strings.Replace(valid, "p=1", "p=0", 1)},
		{"threads over 255", strings.Replace(valid, "p=1", "p=256", 1)},
		{"salt empty", strings.Replace(valid, salt, "", 1)},
		{"salt short", strings.Replace(valid, salt, "c29tZXNh", 1)},
		{"salt not base64", strings.Replace(valid, salt, "malformed!", 1)},
		{"salt padded", strings.Replace(valid, salt, salt+"=", 1)},
		{"hash url alphabet", strings.Replace(valid, hash, strings.ReplaceAll(hash, "/", "_"), 1)},
		{"salt non-canonical bits", strings.Replace(valid, salt, "c29tZXNhbHR", 1)},
		{"salt line break", strings.Replace(valid, salt, "c29tZX\nNhbHQ", 1)},
		{"hash empty", strings.TrimSuffix(valid, hash)},
		{"hash short", strings.Replace(valid, hash, "nf65EOgLrQMR/uIPnA4r", 1)},
		{"hash too long", strings.Replace(valid, hash, strings.Repeat("A", 1400), 1)},
		{"very long", valid + strings.Repeat("A", 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := small().Verify(tc.encoded, "password")
			if !errors.Is(err, argon2id.ErrInvalidHash) {
				t.Errorf("Verify = (%v, %v), want an error wrapping ErrInvalidHash", ok, err)
			}
			if ok {
				t.Error("Verify = true for a malformed hash")
			}
			if _, err := argon2id.Parse(tc.encoded); !errors.Is(err, argon2id.ErrInvalidHash) {
				t.Errorf("Parse error = %v, want one wrapping ErrInvalidHash", err)
			}
		})
	}
}

func TestHashRejectsBadParameters(t *testing.T) {
	for _, h := range []argon2id.Hasher{
		{},
		{Memory: 64, Time: 1, Threads: 0, KeyLen: 32, SaltLen: 16},
		{Memory: 64, Time: 0, Threads: 1, KeyLen: 32, SaltLen: 16},
		{Memory: argon2id.MaxMemory + 1, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16},
		{Memory: 64, Time: 1, Threads: 1, KeyLen: 8, SaltLen: 16},
		{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 4},
	} {
		if encoded, err := h.Hash("password"); !errors.Is(err, argon2id.ErrInvalidHash) {
			t.Errorf("%+v.Hash = (%q, %v), want an error wrapping ErrInvalidHash", h, encoded, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4", "password")
	f.Add("$argon2id$v=19$m=64,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "")
	f.Add("$argon2id$v=19$m=1048577,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4", "x")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$$", "x")
	f.Add("$argon2id$$$$$", "")
	f.Add("$$$$$$$$", "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, encoded, secret string) {
		p, err := argon2id.Parse(encoded)
		if err != nil {
			if ok, verr := small().Verify(encoded, secret); verr == nil || ok {
				t.Fatalf("Parse failed (%v) but Verify = (%v, %v)", err, ok, verr)
			}
			return
		}
		// Legal but costly parameters would make fuzzing crawl; Parse has
		// already been exercised on them.
		if uint64(p.Memory)*uint64(p.Time) > 4096 {
			t.Skip("costly parameters")
		}
		if _, err := small().Verify(encoded, secret); err != nil {
			t.Fatalf("Parse succeeded but Verify: %v", err)
		}
	})
}

func BenchmarkHash(b *testing.B) {
	h := argon2id.New()
	for b.Loop() {
		if _, err := h.Hash("correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	h := argon2id.New()
	encoded := mustHash(b, h, "correct horse battery staple")
	for b.Loop() {
		mustVerify(b, h, encoded, "correct horse battery staple")
	}
}
