package token_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/token"
)

var (
	secret      = []byte("0123456789abcdef0123456789abcdef") // 32 bytes
	otherSecret = []byte("fedcba9876543210fedcba9876543210")
	// t0 is the tests' now: crafted tokens are issued at t0 and expire
	// 15 minutes later.
	t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

const hs256Header = `{"alg":"HS256","typ":"JWT"}`

// stamp is the security stamp the tests' tokens carry.
// Its value makes the good token's spelling hold a - or _, which the
// crafted "standard base64 alphabet" token replaces.
const stamp = "Q2HVZ7TNKAXW3B4RPM5LSJ6E7K"

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

func at(t time.Time) resourceapi.Clock { return func() time.Time { return t } }

func mustNew(tb testing.TB, secret []byte, now resourceapi.Clock) *token.HS256 {
	tb.Helper()
	h, err := token.New(secret, token.Options{Now: now})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return h
}

func mustIssue(tb testing.TB, h *token.HS256, c resourceapi.Claims) string {
	tb.Helper()
	s, err := h.Issue(c)
	if err != nil {
		tb.Fatalf("Issue(%+v): %v", c, err)
	}
	return s
}

func seg(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// sign builds a compact JWS from raw header and payload JSON, signed with
// HMAC over hf with key; a nil hf leaves the signature segment empty.
func sign(header, payload string, hf func() hash.Hash, key []byte) string {
	input := seg(header) + "." + seg(payload)
	if hf == nil {
		return input + "."
	}
	m := hmac.New(hf, key)
	m.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// payload returns claims JSON whose members are replaced or removed (a nil
// value removes) from the valid set: sub 42, name Ada, iat t0, exp t0+15m,
// stamp.
func payload(edits ...any) string {
	members := []string{"sub", "name", "iat", "exp", "stamp"}
	values := map[string]string{
		"sub":   `"42"`,
		"name":  `"Ada"`,
		"iat":   fmt.Sprint(t0.Unix()),
		"exp":   fmt.Sprint(t0.Add(resourceapi.AccessTokenTTL).Unix()),
		"stamp": `"` + stamp + `"`,
	}
	for i := 0; i < len(edits); i += 2 {
		k := edits[i].(string)
		if _, ok := values[k]; !ok {
			members = append(members, k)
		}
		if edits[i+1] == nil {
			delete(values, k)
			continue
		}
		values[k] = edits[i+1].(string)
	}
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range members {
		v, ok := values[k]
		if !ok {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", k, v)
	}
	b.WriteByte('}')
	return b.String()
}

// good is a hand-made token, signed with secret, that Verify at t0 accepts.
// Each crafted token below differs from it in one respect.
func good() string { return sign(hs256Header, payload(), sha256.New, secret) }

type crafted struct{ name, token string }

// craftedTokens are tokens Verify must refuse at t0 with secret.
func craftedTokens() []crafted {
	hs := func(p string) string { return sign(hs256Header, p, sha256.New, secret) }
	withHeader := func(h string) string { return sign(h, payload(), sha256.New, secret) }
	g := good()
	parts := strings.Split(g, ".")
	sig := parts[2]
	// The last character of a 32-byte signature carries 4 bits and 2 unused
	// ones; flipping an unused bit gives another spelling of the same bytes.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, sig[len(sig)-1])
	sigUnusedBit := sig[:len(sig)-1] + string(alphabet[last^1])
	tampered := seg(hs256Header) + "." + seg(payload("name", `"Eve"`)) + "." + sig
	big := hs(payload("name", `"`+strings.Repeat("a", 100<<10)+`"`))

	return []crafted{
		{"alg none, no signature", sign(`{"alg":"none","typ":"JWT"}`, payload(), nil, nil)},
		{"alg none, signature", sign(`{"alg":"none","typ":"JWT"}`, payload(), sha256.New, secret)},
		{"alg None", sign(`{"alg":"None","typ":"JWT"}`, payload(), nil, nil)},
		{"alg HS256 unsigned", sign(hs256Header, payload(), nil, nil)},
		{"alg HS512 with the secret", sign(`{"alg":"HS512","typ":"JWT"}`, payload(), sha512.New, secret)},
		{"alg HS384 with the secret", sign(`{"alg":"HS384","typ":"JWT"}`, payload(), sha512.New384, secret)},
		{"alg RS256, HMAC with the secret", sign(`{"alg":"RS256","typ":"JWT"}`, payload(), sha256.New, secret)},
		{"alg ES256, HMAC with the secret", sign(`{"alg":"ES256","typ":"JWT"}`, payload(), sha256.New, secret)},
		{"alg hs256", withHeader(`{"alg":"hs256","typ":"JWT"}`)},
		{"alg missing", withHeader(`{"typ":"JWT"}`)},
		{"alg a number", withHeader(`{"alg":256,"typ":"JWT"}`)},
		{"typ missing", withHeader(`{"alg":"HS256"}`)},
		{"typ jwt", withHeader(`{"alg":"HS256","typ":"jwt"}`)},
		{"typ at+jwt", withHeader(`{"alg":"HS256","typ":"at+jwt"}`)},
		{"typ a number", withHeader(`{"alg":"HS256","typ":1}`)},
		{"crit", withHeader(`{"alg":"HS256","typ":"JWT","crit":["exp"]}`)},
		{"header not an object", withHeader(`["HS256"]`)},
		{"header null", withHeader(`null`)},
		{"wrong secret", sign(hs256Header, payload(), sha256.New, otherSecret)},
		{"payload changed after signing", tampered},
		{"signature spelled with an unused bit set", parts[0] + "." + parts[1] + "." + sigUnusedBit},
		{"signature padded", g + "="},
		{"signature truncated", g[:len(g)-1]},
		{"expired at now", hs(payload("exp", fmt.Sprint(t0.Unix())))},
		{"expired a second ago", hs(payload("iat", fmt.Sprint(t0.Add(-time.Hour).Unix()), "exp", fmt.Sprint(t0.Unix()-1)))},
		{"exp missing", hs(payload("exp", nil))},
		{"exp null", hs(payload("exp", "null"))},
		{"exp a string", hs(payload("exp", fmt.Sprintf(`"%d"`, t0.Add(time.Hour).Unix())))},
		{"exp a fraction", hs(payload("exp", fmt.Sprintf("%d.5", t0.Add(time.Hour).Unix())))},
		{"exp with an exponent", hs(payload("exp", "2e9"))},
		{"exp beyond int64", hs(payload("exp", "99999999999999999999"))},
		// iat within the leeway and exp still ahead: only their order is wrong.
		{"exp before iat", hs(payload("iat", fmt.Sprint(t0.Add(time.Minute).Unix()), "exp", fmt.Sprint(t0.Add(30*time.Second).Unix())))},
		{"exp at iat", hs(payload("iat", fmt.Sprint(t0.Add(time.Minute).Unix()), "exp", fmt.Sprint(t0.Add(time.Minute).Unix())))},
		{"iat missing", hs(payload("iat", nil))},
		{"iat a string", hs(payload("iat", fmt.Sprintf(`"%d"`, t0.Unix())))},
		{"iat beyond the leeway", hs(payload("iat", fmt.Sprint(t0.Add(token.IssuedAtLeeway+time.Second).Unix())))},
		{"nbf an hour ahead", hs(payload("nbf", fmt.Sprint(t0.Add(time.Hour).Unix())))},
		{"nbf beyond the leeway", hs(payload("nbf", fmt.Sprint(t0.Add(token.IssuedAtLeeway+time.Second).Unix())))},
		{"nbf null", hs(payload("nbf", "null"))},
		{"nbf a string", hs(payload("nbf", fmt.Sprintf(`"%d"`, t0.Unix())))},
		{"nbf a fraction", hs(payload("nbf", fmt.Sprintf("%d.5", t0.Unix())))},
		{"sub missing", hs(payload("sub", nil))},
		{"sub a number", hs(payload("sub", "42"))},
		{"sub null", hs(payload("sub", "null"))},
		{"sub empty", hs(payload("sub", `""`))},
		{"sub 0", hs(payload("sub", `"0"`))},
		{"sub -1", hs(payload("sub", `"-1"`))},
		{"sub +42", hs(payload("sub", `"+42"`))},
		{"sub 042", hs(payload("sub", `"042"`))},
		{"sub abc", hs(payload("sub", `"abc"`))},
		{"sub 42 with a space", hs(payload("sub", `" 42"`))},
		{"sub 2^53", hs(payload("sub", `"9007199254740992"`))},
		{"sub 2^64", hs(payload("sub", `"18446744073709551616"`))},
		{"sub given twice, last a number", hs(`{"sub":"42","sub":42,"name":"Ada","iat":` + fmt.Sprint(t0.Unix()) + `,"exp":` + fmt.Sprint(t0.Add(time.Hour).Unix()) + `}`)},
		{"SUB instead of sub", hs(strings.Replace(payload(), `"sub"`, `"SUB"`, 1))},
		{"stamp missing", hs(payload("stamp", nil))},
		{"stamp null", hs(payload("stamp", "null"))},
		{"stamp empty", hs(payload("stamp", `""`))},
		{"stamp a number", hs(payload("stamp", "42"))},
		{"stamp in lower case", hs(payload("stamp", `"q2hvz7tnkaxw3b4rpm5lsj6e7f"`))},
		{"stamp with a space", hs(payload("stamp", `"Q2HV Z7TN"`))},
		{"stamp of 65 characters", hs(payload("stamp", `"`+strings.Repeat("A", 65)+`"`))},
		{"STAMP instead of stamp", hs(strings.Replace(payload(), `"stamp"`, `"STAMP"`, 1))},
		{"name missing", hs(payload("name", nil))},
		{"name a number", hs(payload("name", "7"))},
		{"name null", hs(payload("name", "null"))},
		{"name a list", hs(payload("name", `["Ada"]`))},
		{"payload not an object", hs(`["42"]`)},
		{"payload null", hs(`null`)},
		{"payload not JSON", hs(`{"sub":"42",`)},
		{"payload not base64", parts[0] + ".!!!." + sig},
		{"100 KiB, signed", big},
		{"100 KiB of garbage", strings.Repeat("a", 100<<10)},
		{"garbage", "garbage"},
		{"empty", ""},
		{"one dot", "."},
		{"two dots only", ".."},
		{"four segments", g + ".x"},
		{"leading space", " " + g},
		{"trailing newline", g + "\n"},
		{"Bearer prefix", "Bearer " + g},
		{"line break in the signature", parts[0] + "." + parts[1] + "." + sig[:10] + "\n" + sig[10:]},
		{"CRLF in the signature", parts[0] + "." + parts[1] + "." + sig[:10] + "\r\n" + sig[10:]},
		{"space in the payload", parts[0] + "." + parts[1][:5] + " " + parts[1][5:] + "." + sig},
		{"tab after a dot", parts[0] + ".\t" + parts[1] + "." + sig},
		{"standard base64 alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(g)},
		{"NUL byte", g + "\x00"},
		{"non-ASCII", g + "é"},
	}
}

// TestCraftedControl shows the crafted tokens are near misses: the token
// they are made from verifies.
func TestCraftedControl(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	got, err := h.Verify(good())
	if err != nil {
		t.Fatalf("Verify(good) = %v", err)
	}
	want := resourceapi.Claims{Stamp: stamp, Subject: "42", Name: "Ada", IssuedAt: t0, ExpiresAt: t0.Add(resourceapi.AccessTokenTTL)}
	if got != want {
		t.Fatalf("Verify(good) = %+v, want %+v", got, want)
	}
	// The crafted signatures under an HS256 header with the secret use the
	// same signer as good; this one, issued by the package, must match.
	if issued := mustIssue(t, h, want); issued != good() {
		t.Fatalf("Issue = %s, want %s", issued, good())
	}
}

func TestVerifyRefusesCrafted(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	// The reference error: every failure must look exactly like it.
	_, ref := h.Verify("x")
	if ref == nil {
		t.Fatal(`Verify("x") = nil error`)
	}
	seen := map[string]string{}
	for _, c := range craftedTokens() {
		t.Run(c.name, func(t *testing.T) {
			if prev, ok := seen[c.token]; ok {
				t.Fatalf("same token as %q", prev)
			}
			seen[c.token] = c.name
			got, err := h.Verify(c.token)
			checkInvalid(t, got, err, ref)
		})
	}
}

// checkInvalid fails unless Verify's result is the one invalid-token error.
func checkInvalid(tb testing.TB, got resourceapi.Claims, err, ref error) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("Verify = %+v, nil; want an error", got)
	}
	if code := resourceapi.ErrorCode(err); code != resourceapi.CodeInvalidToken {
		tb.Fatalf("code = %s, want %s (%v)", code, resourceapi.CodeInvalidToken, err)
	}
	e := resourceapi.ErrorOf(err)
	if e != err {
		tb.Fatalf("error %#v wraps an *Error; want the *Error itself", err)
	}
	if ref != nil && err.Error() != ref.Error() {
		tb.Fatalf("error = %q, want %q", err, ref)
	}
	if e.Message != "The credential is not valid" || len(e.Details) != 0 {
		tb.Fatalf("error = %+v, want the fixed message and no details", e)
	}
	if got != (resourceapi.Claims{}) {
		tb.Fatalf("claims = %+v with an error, want zero", got)
	}
}

func TestIssueVerifyRoundTrip(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	for _, c := range []resourceapi.Claims{
		{Stamp: stamp, Subject: "1", Name: "Ada", IssuedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{Stamp: stamp, Subject: "9007199254740991", Name: "Max", IssuedAt: t0.Add(-time.Minute), ExpiresAt: t0.Add(time.Second)},
		{Stamp: stamp, Subject: "42", Name: `Zoë "the" <admin> \ 日本`, IssuedAt: t0, ExpiresAt: t0.Add(resourceapi.AccessTokenTTL)},
		{Stamp: stamp, Subject: "7", Name: "", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	} {
		tok := mustIssue(t, h, c)
		got, err := h.Verify(tok)
		if err != nil {
			t.Fatalf("Verify(Issue(%+v)) = %v", c, err)
		}
		if got != c {
			t.Fatalf("Verify(Issue(c)) = %+v, want %+v", got, c)
		}
	}
}

// TestIssueShape checks the bytes of a token against interface.md: header
// alg and typ, claims sub, name, iat, exp as integers, and the security
// stamp, nothing else.
func TestIssueShape(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	tok := mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "42", Name: "Ada"})
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts, want 3", tok, len(parts))
	}
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(header), hs256Header; got != want {
		t.Fatalf("header = %s, want %s", got, want)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"sub":"42","name":"Ada","iat":%d,"exp":%d,"stamp":%q}`, t0.Unix(), t0.Add(15*time.Minute).Unix(), stamp)
	if got := string(claims); got != want {
		t.Fatalf("claims = %s, want %s", got, want)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(claims))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["iat"].(json.Number); !ok {
		t.Fatalf("iat is %T, want a number", m["iat"])
	}
}

func TestIssueDefaults(t *testing.T) {
	now := t0.Add(1500 * time.Millisecond)
	h := mustNew(t, secret, at(now))
	got, err := h.Verify(mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "5", Name: "Bo"}))
	if err != nil {
		t.Fatal(err)
	}
	// Truncated to the second, as a NumericDate.
	want := resourceapi.Claims{Stamp: stamp, Subject: "5", Name: "Bo", IssuedAt: t0.Add(time.Second), ExpiresAt: t0.Add(time.Second + resourceapi.AccessTokenTTL)}
	if got != want {
		t.Fatalf("claims = %+v, want %+v", got, want)
	}
}

func TestIssueRefuses(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	for name, c := range map[string]resourceapi.Claims{
		"subject empty":       {Stamp: stamp, Name: "Ada"},
		"subject 0":           {Stamp: stamp, Subject: "0", Name: "Ada"},
		"subject abc":         {Stamp: stamp, Subject: "abc", Name: "Ada"},
		"subject 2^53":        {Stamp: stamp, Subject: "9007199254740992", Name: "Ada"},
		"subject 042":         {Stamp: stamp, Subject: "042", Name: "Ada"},
		"name not UTF-8":      {Stamp: stamp, Subject: "1", Name: "\xff"},
		"exp at iat":          {Stamp: stamp, Subject: "1", Name: "Ada", IssuedAt: t0, ExpiresAt: t0},
		"exp before iat":      {Stamp: stamp, Subject: "1", Name: "Ada", IssuedAt: t0, ExpiresAt: t0.Add(-time.Hour)},
		"exp in iat's second": {Stamp: stamp, Subject: "1", Name: "Ada", IssuedAt: t0, ExpiresAt: t0.Add(999 * time.Millisecond)},
		"longer than MaxLen":  {Stamp: stamp, Subject: "1", Name: strings.Repeat("a", token.MaxLen)},
		"no stamp":            {Subject: "1", Name: "Ada"},
		"stamp not base32":    {Stamp: "not a stamp", Subject: "1", Name: "Ada"},
	} {
		if tok, err := h.Issue(c); err == nil {
			t.Errorf("%s: Issue = %q, nil; want an error", name, tok)
		}
	}
}

// TestMaxLen signs tokens around MaxLen bytes: one of exactly MaxLen
// verifies, one longer does not (however well signed).
func TestMaxLen(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	var exact, over string
	// A name of n bytes takes about 4n/3 bytes of token.
	for n := token.MaxLen*3/4 - 200; over == ""; n++ {
		tok := sign(hs256Header, payload("name", `"`+strings.Repeat("a", n)+`"`), sha256.New, secret)
		switch {
		case len(tok) == token.MaxLen:
			exact = tok
		case len(tok) > token.MaxLen:
			over = tok
		}
	}
	if exact == "" {
		t.Fatal("found no token of exactly MaxLen bytes")
	}
	if _, err := h.Verify(exact); err != nil {
		t.Fatalf("Verify(%d bytes) = %v", len(exact), err)
	}
	_, ref := h.Verify("")
	got, err := h.Verify(over)
	checkInvalid(t, got, err, ref)
}

// TestStateless: any instance with the same secret verifies what another
// issued; one with another secret does not.
func TestStateless(t *testing.T) {
	a := mustNew(t, secret, at(t0))
	b := mustNew(t, bytes.Clone(secret), at(t0.Add(time.Minute)))
	c := mustNew(t, otherSecret, at(t0))
	want := resourceapi.Claims{Stamp: stamp, Subject: "42", Name: "Ada", IssuedAt: t0, ExpiresAt: t0.Add(resourceapi.AccessTokenTTL)}
	tok := mustIssue(t, a, want)
	got, err := b.Verify(tok)
	if err != nil || got != want {
		t.Fatalf("other instance: Verify = %+v, %v; want %+v", got, err, want)
	}
	got, err = c.Verify(tok)
	checkInvalid(t, got, err, nil)
}

func TestExpiryBoundary(t *testing.T) {
	var clk clock
	h := mustNew(t, secret, clk.Now)
	exp := t0.Add(resourceapi.AccessTokenTTL)
	tok := mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "42", Name: "Ada", IssuedAt: t0, ExpiresAt: exp})
	for _, tc := range []struct {
		now   time.Time
		valid bool
	}{
		{t0, true},
		{exp.Add(-time.Second), true},
		{exp.Add(-time.Nanosecond), true},
		{exp, false}, // RFC 7519 §4.1.4: "on or after" exp is expired.
		{exp.Add(time.Nanosecond), false},
		{exp.Add(time.Hour), false},
	} {
		clk.Set(tc.now)
		got, err := h.Verify(tok)
		if tc.valid && err != nil {
			t.Errorf("at exp%+v: Verify = %v, want valid", tc.now.Sub(exp), err)
		}
		if !tc.valid {
			checkInvalid(t, got, err, nil)
		}
	}
}

// TestIssuedAtLeeway: an issuer whose clock is ahead by up to the leeway is
// accepted, a second more is not.
func TestIssuedAtLeeway(t *testing.T) {
	v := mustNew(t, secret, at(t0))
	for _, tc := range []struct {
		ahead time.Duration
		valid bool
	}{
		{0, true},
		{token.IssuedAtLeeway, true},
		{token.IssuedAtLeeway + time.Second, false},
	} {
		i := mustNew(t, secret, at(t0.Add(tc.ahead)))
		got, err := v.Verify(mustIssue(t, i, resourceapi.Claims{Stamp: stamp, Subject: "42", Name: "Ada"}))
		if tc.valid && err != nil {
			t.Errorf("issuer %v ahead: Verify = %v, want valid", tc.ahead, err)
		}
		if !tc.valid {
			checkInvalid(t, got, err, nil)
		}
	}
}

// TestNotBefore: a token with nbf is refused until then, less the leeway
// iat has, and accepted from then on; without nbf nothing changes.
func TestNotBefore(t *testing.T) {
	var clk clock
	h := mustNew(t, secret, clk.Now)
	nbf := t0.Add(time.Hour)
	tok := sign(hs256Header, payload("nbf", fmt.Sprint(nbf.Unix()), "exp", fmt.Sprint(nbf.Add(time.Hour).Unix())), sha256.New, secret)
	for _, tc := range []struct {
		now   time.Time
		valid bool
	}{
		{t0, false},
		{nbf.Add(-token.IssuedAtLeeway - time.Second), false},
		{nbf.Add(-token.IssuedAtLeeway), true},
		{nbf, true},
		{nbf.Add(30 * time.Minute), true},
	} {
		clk.Set(tc.now)
		got, err := h.Verify(tok)
		if tc.valid && err != nil {
			t.Errorf("at nbf%+v: Verify = %v, want valid", tc.now.Sub(nbf), err)
		}
		if !tc.valid {
			checkInvalid(t, got, err, nil)
		}
	}
	clk.Set(t0)
	for _, past := range []time.Time{t0, t0.Add(-time.Hour), t0.Add(token.IssuedAtLeeway)} {
		if _, err := h.Verify(sign(hs256Header, payload("nbf", fmt.Sprint(past.Unix())), sha256.New, secret)); err != nil {
			t.Errorf("nbf at now%+v: Verify = %v, want valid", past.Sub(t0), err)
		}
	}
}

func TestNewSecret(t *testing.T) {
	for _, n := range []int{0, 1, token.MinSecretLen - 1} {
		if _, err := token.New(make([]byte, n), token.Options{}); err == nil {
			t.Errorf("New(%d-byte secret) = nil error, want an error", n)
		}
	}
	if _, err := token.New(nil, token.Options{}); err == nil {
		t.Error("New(nil) = nil error, want an error")
	}
	// New keeps its own copy: changing the caller's slice later changes
	// nothing.
	s := bytes.Clone(secret)
	h := mustNew(t, s, at(t0))
	clear(s)
	if _, err := mustNew(t, secret, at(t0)).Verify(mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "1", Name: "A"})); err != nil {
		t.Fatalf("token from an instance whose secret slice was cleared: %v", err)
	}
}

// TestDefaultClock uses the real clock: a token issued now verifies now.
func TestDefaultClock(t *testing.T) {
	h := mustNew(t, secret, nil)
	if _, err := h.Verify(mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "1", Name: "A"})); err != nil {
		t.Fatal(err)
	}
	old := mustIssue(t, h, resourceapi.Claims{Stamp: stamp, Subject: "1", Name: "A", IssuedAt: time.Now().Add(-time.Hour)})
	got, err := h.Verify(old)
	checkInvalid(t, got, err, nil)
}

// TestConcurrent exercises one instance from several goroutines (for -race).
func TestConcurrent(t *testing.T) {
	h := mustNew(t, secret, at(t0))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				c := resourceapi.Claims{Stamp: stamp, Subject: fmt.Sprint(i*100 + j + 1), Name: "n", IssuedAt: t0, ExpiresAt: t0.Add(time.Minute)}
				tok, err := h.Issue(c)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := h.Verify(tok); err != nil || got != c {
					t.Errorf("Verify = %+v, %v; want %+v", got, err, c)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzVerify: Verify never panics, fails only with the one error, and
// anything it accepts carries the HMAC of the secret in its one canonical
// spelling and sane claims that round-trip through Issue.
func FuzzVerify(f *testing.F) {
	h := mustNew(f, secret, at(t0))
	f.Add(good())
	f.Add(mustIssue(f, h, resourceapi.Claims{Stamp: stamp, Subject: "9007199254740991", Name: "Max"}))
	for _, c := range craftedTokens() {
		f.Add(c.token)
	}
	_, ref := h.Verify("")
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := h.Verify(tok)
		if err != nil {
			checkInvalid(t, got, err, ref)
			return
		}
		i := strings.LastIndexByte(tok, '.')
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(tok[:i]))
		if want := base64.RawURLEncoding.EncodeToString(m.Sum(nil)); tok[i+1:] != want {
			t.Fatalf("Verify accepted %q whose signature is not %s", tok, want)
		}
		if len(got.Subject) == 0 || !got.ExpiresAt.After(t0) || got.IssuedAt.After(t0.Add(token.IssuedAtLeeway)) || !got.ExpiresAt.After(got.IssuedAt) {
			t.Fatalf("Verify accepted %q with claims %+v", tok, got)
		}
		again, err := h.Verify(mustIssue(t, h, got))
		if err != nil || again != got {
			t.Fatalf("round trip of %+v = %+v, %v", got, again, err)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	h := mustNew(b, secret, at(t0))
	tok := mustIssue(b, h, resourceapi.Claims{Stamp: stamp, Subject: "123456", Name: "Ada Lovelace"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyInvalid(b *testing.B) {
	h := mustNew(b, secret, at(t0))
	tok := sign(hs256Header, payload(), sha256.New, otherSecret)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Verify(tok); err == nil {
			b.Fatal("verified")
		}
	}
}

func BenchmarkIssue(b *testing.B) {
	h := mustNew(b, secret, at(t0))
	c := resourceapi.Claims{Stamp: stamp, Subject: "123456", Name: "Ada Lovelace"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Issue(c); err != nil {
			b.Fatal(err)
		}
	}
}
