package storetest

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// testOAuth checks resourceapi.OAuthStore and resourceapi.SettingStore, for
// stores that implement them: clients as the rule layer creates them, codes
// exchanged once, refresh tokens rotated once with reuse revoking the
// family, both under concurrency, and everything going with its user or
// client.
func testOAuth(t *testing.T, open opener) {
	t.Run("Client", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		conf, secret := mustClient(t, s, false)
		pub, _ := mustClient(t, s, true)

		got, err := oa.Client(timeout(t), conf.ClientID())
		if err != nil {
			t.Fatalf("Client(confidential) = %v", err)
		}
		if got.SecretHash != resourceapi.HashToken(secret) {
			t.Errorf("SecretHash = %q, want HashToken of the generated secret", got.SecretHash)
		}
		if got.Public() || !got.Allows(resourceapi.GrantPassword) || got.Allows(resourceapi.GrantAuthorizationCode) {
			t.Errorf("confidential client = %v, want not public, password grant only", got.Record)
		}
		if got.UserID() == 0 || got.Record.ID() != conf.Record.ID() {
			t.Errorf("client user_id = %d, id = %d; want its service user and id %d", got.UserID(), got.Record.ID(), conf.Record.ID())
		}
		if _, ok := got.Record["secret"]; ok {
			t.Errorf("client record carries its secret field: %v", got.Record)
		}

		got, err = oa.Client(timeout(t), pub.ClientID())
		if err != nil {
			t.Fatalf("Client(public) = %v", err)
		}
		if !got.Public() || got.SecretHash != "" || len(got.RedirectURIs()) != 1 {
			t.Errorf("public client = %v (secret hash %q), want public, no secret, one redirect URI", got.Record, got.SecretHash)
		}

		// The generic store reads the table from the declaration: search by
		// name (a trigram index on both databases) and sort.
		for _, q := range []url.Values{{"q": {"ublic cli"}}, {"q": {"PUBLIC"}, "sort": {"client_id"}, "order": {"desc"}}} {
			lq, err := rhttp.ParseListQuery(resourceapi.OAuthClients, q)
			if err != nil {
				t.Fatal(err)
			}
			page, err := s.List(timeout(t), resourceapi.OAuthClients, lq)
			if err != nil || page.Total != 1 || len(page.Records) != 1 || page.Records[0].ID() != pub.Record.ID() {
				t.Fatalf("List(clients, %v) = %+v, %v; want the public client alone", q, page, err)
			}
		}

		for _, id := range []string{"rac_unknown", "", conf.ClientID() + "x", upper(conf.ClientID())} {
			_, err := oa.Client(timeout(t), id)
			mustCode(t, err, resourceapi.CodeNotFound, fmt.Sprintf("Client(%q)", id))
		}
	})

	t.Run("Code", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		code := f.code("c1", now)
		if err := oa.SaveCode(timeout(t), code); err != nil {
			t.Fatalf("SaveCode = %v", err)
		}
		got, err := oa.ConsumeCode(timeout(t), code.Hash, now.Add(time.Second))
		if err != nil {
			t.Fatalf("ConsumeCode = %v", err)
		}
		if !sameCode(got, code) {
			t.Errorf("ConsumeCode = %+v, want %+v", got, code)
		}
		_, err = oa.ConsumeCode(timeout(t), code.Hash, now.Add(2*time.Second))
		mustCode(t, err, resourceapi.CodeConflict, "second ConsumeCode")
		_, err = oa.ConsumeCode(timeout(t), resourceapi.HashToken("unknown"), now)
		mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode(unknown)")

		expired := f.code("c2", now)
		mustSaveCode(t, oa, expired)
		_, err = oa.ConsumeCode(timeout(t), expired.Hash, expired.ExpiresAt)
		mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode at expiry")
		// An expired code that was never used is not a reuse.
		_, err = oa.ConsumeCode(timeout(t), expired.Hash, expired.ExpiresAt)
		mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode after expiry, again")
	})

	t.Run("CodeReuseRevokesFamily", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		code := f.code("c1", now)
		mustSaveCode(t, oa, code)
		if _, err := oa.ConsumeCode(timeout(t), code.Hash, now); err != nil {
			t.Fatalf("ConsumeCode = %v", err)
		}
		// What the exchange issued, rotated once: the whole family goes.
		first := f.token("r1", code.Hash, now)
		mustSaveToken(t, oa, first)
		next := f.token("r2", "", now)
		if _, err := oa.RotateRefreshToken(timeout(t), first.Hash, next, now.Add(time.Minute), 0); err != nil {
			t.Fatalf("RotateRefreshToken = %v", err)
		}
		_, err := oa.ConsumeCode(timeout(t), code.Hash, now.Add(2*time.Minute))
		mustCode(t, err, resourceapi.CodeConflict, "reused ConsumeCode")
		_, err = oa.RotateRefreshToken(timeout(t), next.Hash, f.token("r3", "", now), now.Add(3*time.Minute), 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken of the reused code's family")

		// A reuse before the first exchange saved its token: the token is
		// refused when it comes.
		late := f.code("c2", now)
		mustSaveCode(t, oa, late)
		if _, err := oa.ConsumeCode(timeout(t), late.Hash, now); err != nil {
			t.Fatalf("ConsumeCode = %v", err)
		}
		_, err = oa.ConsumeCode(timeout(t), late.Hash, now)
		mustCode(t, err, resourceapi.CodeConflict, "reused ConsumeCode")
		err = oa.SaveRefreshToken(timeout(t), f.token("r4", late.Hash, now))
		mustCode(t, err, resourceapi.CodeConflict, "SaveRefreshToken in the reused code's family")
	})

	t.Run("Refresh", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)

		t1 := f.token("t1", "", now)
		t1.Family, t1.ClientID, t1.UserID, t1.Scope = "ignored", "ignored", -1, "ignored"
		prev, err := oa.RotateRefreshToken(timeout(t), t0.Hash, t1, now.Add(time.Minute), 0)
		if err != nil {
			t.Fatalf("RotateRefreshToken = %v", err)
		}
		if !sameToken(prev, t0) {
			t.Errorf("RotateRefreshToken returned %+v, want the old token %+v", prev, t0)
		}
		// t1 inherited t0's family, client, user and scope: rotating it
		// returns them.
		t2 := f.token("t2", "", now)
		prev, err = oa.RotateRefreshToken(timeout(t), t1.Hash, t2, now.Add(2*time.Minute), 0)
		if err != nil {
			t.Fatalf("RotateRefreshToken(t1) = %v", err)
		}
		want := t0
		want.Hash, want.ExpiresAt = t1.Hash, t1.ExpiresAt
		if !sameToken(prev, want) {
			t.Errorf("RotateRefreshToken(t1) returned %+v, want %+v", prev, want)
		}

		// With a grace, a second use of t1 within it is refused and revokes
		// nothing.
		const grace = 10 * time.Second
		_, err = oa.RotateRefreshToken(timeout(t), t1.Hash, f.token("x", "", now), now.Add(2*time.Minute+grace-time.Millisecond), grace)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken(t1) within the grace period")
		t3 := f.token("t3", "", now)
		if _, err := oa.RotateRefreshToken(timeout(t), t2.Hash, t3, now.Add(3*time.Minute), grace); err != nil {
			t.Fatalf("RotateRefreshToken(t2) after a reuse within the grace period = %v", err)
		}
		// After it, a reuse revokes the family: t3, the newest, is dead.
		_, err = oa.RotateRefreshToken(timeout(t), t0.Hash, f.token("y", "", now), now.Add(4*time.Minute), grace)
		mustCode(t, err, resourceapi.CodeConflict, "RotateRefreshToken(t0) long after its use")
		_, err = oa.RotateRefreshToken(timeout(t), t3.Hash, f.token("z", "", now), now.Add(5*time.Minute), 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken(t3) after the family's revocation")
		err = oa.SaveRefreshToken(timeout(t), f.token("w", "fam", now))
		mustCode(t, err, resourceapi.CodeConflict, "SaveRefreshToken into a revoked family")

		_, err = oa.RotateRefreshToken(timeout(t), resourceapi.HashToken("unknown"), f.token("u", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken(unknown)")

		old := f.token("e0", "fam2", now)
		mustSaveToken(t, oa, old)
		_, err = oa.RotateRefreshToken(timeout(t), old.Hash, f.token("e1", "", now), old.ExpiresAt, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken at expiry")
	})

	t.Run("ReuseWithoutGrace", func(t *testing.T) {
		// Without a grace any second use revokes the family, even at the
		// very instant of the first: of two holders of one token, the one
		// who rotated first may be the thief.
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)
		t1 := f.token("t1", "", now)
		if _, err := oa.RotateRefreshToken(timeout(t), t0.Hash, t1, now, 0); err != nil {
			t.Fatalf("RotateRefreshToken = %v", err)
		}
		_, err := oa.RotateRefreshToken(timeout(t), t0.Hash, f.token("x", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeConflict, "RotateRefreshToken(t0) again at once")
		_, err = oa.RotateRefreshToken(timeout(t), t1.Hash, f.token("y", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken(t1), the newest, after the family's revocation")
	})

	t.Run("Revoke", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)
		t1 := f.token("t1", "", now)
		if _, err := oa.RotateRefreshToken(timeout(t), t0.Hash, t1, now, 0); err != nil {
			t.Fatal(err)
		}
		// Another client's revocation does nothing.
		if err := oa.RevokeRefreshToken(timeout(t), t1.Hash, "rac_other", now); err != nil {
			t.Fatalf("RevokeRefreshToken(other client) = %v", err)
		}
		t2 := f.token("t2", "", now)
		if _, err := oa.RotateRefreshToken(timeout(t), t1.Hash, t2, now, 0); err != nil {
			t.Fatalf("RotateRefreshToken after another client's revocation = %v", err)
		}
		// Revoking an old token of the family revokes the newest.
		if err := oa.RevokeRefreshToken(timeout(t), t0.Hash, f.client.ClientID(), now); err != nil {
			t.Fatalf("RevokeRefreshToken = %v", err)
		}
		_, err := oa.RotateRefreshToken(timeout(t), t2.Hash, f.token("t3", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken after revocation")
		for _, h := range []string{t2.Hash, resourceapi.HashToken("unknown")} {
			if err := oa.RevokeRefreshToken(timeout(t), h, f.client.ClientID(), now); err != nil {
				t.Fatalf("RevokeRefreshToken(revoked or unknown) = %v, want nil", err)
			}
		}
	})

	t.Run("ConcurrentRotation", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)
		const n = 8
		nexts := make([]resourceapi.RefreshToken, n)
		errs := make([]error, n)
		// With a grace, the losers of a client's own race revoke nothing.
		const grace = 10 * time.Second
		var wg sync.WaitGroup
		for i := range n {
			nexts[i] = f.token(fmt.Sprint("next", i), "", now)
			wg.Go(func() {
				_, errs[i] = oa.RotateRefreshToken(timeout(t), t0.Hash, nexts[i], now.Add(time.Second), grace)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("rotations %d and %d of one token both succeeded", winner, i)
			case err == nil:
				winner = i
			default:
				mustCode(t, err, resourceapi.CodeNotFound, "a concurrent rotation that lost")
			}
		}
		if winner < 0 {
			t.Fatalf("no concurrent rotation succeeded: %v", errs)
		}
		if _, err := oa.RotateRefreshToken(timeout(t), nexts[winner].Hash, f.token("after", "", now), now.Add(2*time.Second), grace); err != nil {
			t.Fatalf("the winner's token does not rotate: %v", err)
		}
		for i := range n {
			if i == winner {
				continue
			}
			_, err := oa.RotateRefreshToken(timeout(t), nexts[i].Hash, f.token("lost", "", now), now.Add(2*time.Second), grace)
			mustCode(t, err, resourceapi.CodeNotFound, "rotating a losing rotation's token")
		}
	})

	t.Run("ConcurrentRotationWithoutGrace", func(t *testing.T) {
		// Without a grace, concurrent uses of one token are reuses: exactly
		// one rotates, and the family ends with the winner's token dead.
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)
		const n = 8
		nexts := make([]resourceapi.RefreshToken, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			nexts[i] = f.token(fmt.Sprint("next", i), "", now)
			wg.Go(func() {
				_, errs[i] = oa.RotateRefreshToken(timeout(t), t0.Hash, nexts[i], now.Add(time.Second), 0)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("rotations %d and %d of one token both succeeded", winner, i)
			case err == nil:
				winner = i
			case resourceapi.ErrorCode(err) != resourceapi.CodeConflict && resourceapi.ErrorCode(err) != resourceapi.CodeNotFound:
				t.Fatalf("a concurrent rotation that lost: %v, want CodeConflict or CodeNotFound", err)
			}
		}
		if winner < 0 {
			t.Fatalf("no concurrent rotation succeeded: %v", errs)
		}
		_, err := oa.RotateRefreshToken(timeout(t), nexts[winner].Hash, f.token("after", "", now), now.Add(2*time.Second), 0)
		mustCode(t, err, resourceapi.CodeNotFound, "rotating the winner's token after the reuses")
	})

	t.Run("ConcurrentConsumption", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		code := f.code("c", now)
		mustSaveCode(t, oa, code)
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, errs[i] = oa.ConsumeCode(timeout(t), code.Hash, now.Add(time.Second)) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			mustCode(t, err, resourceapi.CodeConflict, "a concurrent exchange that lost")
		}
		if won != 1 {
			t.Fatalf("%d concurrent exchanges of one code succeeded, want exactly 1", won)
		}
	})

	t.Run("Cascade", func(t *testing.T) {
		for _, what := range []string{"user", "client"} {
			t.Run(what, func(t *testing.T) {
				s, oa := openOAuth(t, open)
				f := newFixture(t, s)
				now := wallMillis()
				code, used := f.code("c", now), f.code("u", now)
				mustSaveCode(t, oa, code)
				mustSaveCode(t, oa, used)
				if _, err := oa.ConsumeCode(timeout(t), used.Hash, now); err != nil {
					t.Fatal(err)
				}
				tok := f.token("t", "fam", now)
				mustSaveToken(t, oa, tok)
				if what == "user" {
					mustDelete(t, s, f.user.ID())
				} else if err := s.Delete(timeout(t), resourceapi.OAuthClients, f.client.Record.ID(), nil); err != nil {
					t.Fatalf("Delete(client) = %v", err)
				}
				_, err := oa.ConsumeCode(timeout(t), code.Hash, now)
				mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode after the delete")
				_, err = oa.ConsumeCode(timeout(t), used.Hash, now)
				mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode(used) after the delete")
				_, err = oa.RotateRefreshToken(timeout(t), tok.Hash, f.token("n", "", now), now, 0)
				mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken after the delete")
			})
		}
	})

	t.Run("Purge", func(t *testing.T) {
		s, oa := openOAuth(t, open)
		if _, wall := followsWallClock(t, s, user("Clock", "clock@example.com")); !wall {
			t.Skip("the store runs on a test clock; purging is relative to it")
		}
		f := newFixture(t, s)
		longAgo := wallMillis().Add(-3 * 24 * time.Hour)
		// Used long ago, it would be a reuse; purged, it is unknown.
		code := f.code("old", longAgo)
		mustSaveCode(t, oa, code)
		if _, err := oa.ConsumeCode(timeout(t), code.Hash, longAgo); err != nil {
			t.Fatal(err)
		}
		tok := f.token("old", "fam", longAgo)
		tok.ExpiresAt = longAgo.Add(time.Hour)
		mustSaveToken(t, oa, tok)
		if _, err := oa.RotateRefreshToken(timeout(t), tok.Hash, f.token("next", "", longAgo), longAgo, 0); err != nil {
			t.Fatal(err)
		}
		now := wallMillis()
		mustSaveCode(t, oa, f.code("new", now))
		mustSaveToken(t, oa, f.token("new", "fam2", now))
		_, err := oa.ConsumeCode(timeout(t), code.Hash, now)
		mustCode(t, err, resourceapi.CodeNotFound, "ConsumeCode of a code purged")
		_, err = oa.RotateRefreshToken(timeout(t), tok.Hash, f.token("again", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken of a token purged")
	})

	t.Run("Setting", func(t *testing.T) {
		s := open(t)
		ss, ok := s.(resourceapi.SettingStore)
		if !ok {
			t.Skipf("%T does not implement resourceapi.SettingStore", s)
		}
		got, err := ss.Setting(timeout(t), "jwt_secret", "first")
		if err != nil || got != "first" {
			t.Fatalf("Setting(absent) = %q, %v; want %q", got, err, "first")
		}
		got, err = ss.Setting(timeout(t), "jwt_secret", "second")
		if err != nil || got != "first" {
			t.Fatalf("Setting(present) = %q, %v; want the stored %q", got, err, "first")
		}
		const n = 8
		vals := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { vals[i], errs[i] = ss.Setting(timeout(t), "race", fmt.Sprint("v", i)) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || vals[i] != vals[0] {
				t.Fatalf("concurrent first Settings = %q, %v; want one value for all", vals, errs)
			}
		}
	})
}

// openOAuth opens a store and skips t when it does not keep OAuth state.
func openOAuth(t *testing.T, open opener) (resourceapi.Store, resourceapi.OAuthStore) {
	t.Helper()
	s := open(t)
	oa, ok := s.(resourceapi.OAuthStore)
	if !ok {
		t.Skipf("%T does not implement resourceapi.OAuthStore", s)
	}
	return s, oa
}

// mustClient creates a client through the rule layer, as the API and the
// command line do, and returns it with its plain secret ("" when public).
func mustClient(tb testing.TB, s resourceapi.Store, public bool) (resourceapi.OAuthClient, string) {
	tb.Helper()
	rec := resourceapi.Record{"name": "Test client", "grants": []string{resourceapi.GrantPassword}}
	if public {
		rec = resourceapi.Record{"name": "Public client", "public": true,
			"grants":        []string{resourceapi.GrantAuthorizationCode, resourceapi.GrantRefreshToken},
			"redirect_uris": []string{"https://app.example/callback"}}
	}
	out, err := resourceapi.NewService(s, nil).Create(timeout(tb), resourceapi.SystemCaller(), resourceapi.OAuthClients, 0, rec)
	if err != nil {
		tb.Fatalf("create client: %v", err)
	}
	secret, _ := out["secret"].(string)
	if public == (secret != "") {
		tb.Fatalf("created client (public %v) has secret %q", public, secret)
	}
	delete(out, "secret")
	return resourceapi.OAuthClient{Record: out}, secret
}

// fixture is a user and a client to issue codes and tokens for.
type fixture struct {
	user   resourceapi.Record
	client resourceapi.OAuthClient
	// stamp is the user's security stamp, which codes and tokens carry.
	stamp string
}

func newFixture(tb testing.TB, s resourceapi.Store) fixture {
	tb.Helper()
	u := mustCreate(tb, s, user("Resource Owner", "owner@example.com"))
	c, _ := mustClient(tb, s, true)
	acct, err := s.(resourceapi.IdentityStore).AccountByID(timeout(tb), u.ID())
	if err != nil {
		tb.Fatalf("AccountByID(owner) = %v", err)
	}
	return fixture{user: u, client: c, stamp: acct.Stamp}
}

// code returns a code named name issued at now.
func (f fixture) code(name string, now time.Time) resourceapi.AuthorizationCode {
	return resourceapi.AuthorizationCode{
		Hash: resourceapi.HashToken("code " + name), ClientID: f.client.ClientID(), UserID: f.user.ID(),
		RedirectURI: f.client.RedirectURIs()[0], CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Scope: "api", ExpiresAt: now.Add(resourceapi.CodeTTL), Stamp: f.stamp,
	}
}

// token returns a refresh token named name in family issued at now.
func (f fixture) token(name, family string, now time.Time) resourceapi.RefreshToken {
	return resourceapi.RefreshToken{
		Hash: resourceapi.HashToken("refresh " + name), Family: family, ClientID: f.client.ClientID(),
		UserID: f.user.ID(), Scope: "api", ExpiresAt: now.Add(resourceapi.RefreshTokenTTL), Stamp: f.stamp,
	}
}

func mustSaveCode(tb testing.TB, s resourceapi.OAuthStore, c resourceapi.AuthorizationCode) {
	tb.Helper()
	if err := s.SaveCode(timeout(tb), c); err != nil {
		tb.Fatalf("SaveCode = %v", err)
	}
}

func mustSaveToken(tb testing.TB, s resourceapi.OAuthStore, t resourceapi.RefreshToken) {
	tb.Helper()
	if err := s.SaveRefreshToken(timeout(tb), t); err != nil {
		tb.Fatalf("SaveRefreshToken = %v", err)
	}
}

// sameCode reports whether two codes are equal, their times as instants.
func sameCode(a, b resourceapi.AuthorizationCode) bool {
	ea, eb := a.ExpiresAt, b.ExpiresAt
	a.ExpiresAt, b.ExpiresAt = time.Time{}, time.Time{}
	return a == b && ea.Equal(eb)
}

// sameToken reports whether two tokens are equal, their times as instants.
func sameToken(a, b resourceapi.RefreshToken) bool {
	ea, eb := a.ExpiresAt, b.ExpiresAt
	a.ExpiresAt, b.ExpiresAt = time.Time{}, time.Time{}
	return a == b && ea.Equal(eb)
}

// wallMillis is the time now, at the millisecond precision every store
// keeps, in UTC as stores return it.
func wallMillis() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
