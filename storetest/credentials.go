package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// testCredentials checks what a store keeps so that credentials end when
// they should: the security stamp of users (new for every user, renewed
// with the fields that renew it, IfChanged only on a change, read by the
// account lookups), the expiry of API keys (read by AccountByAPIKey), and
// retired ids (Replace gives a deleted record's id to a new one only when
// the context allows it, cascades included).
func testCredentials(t *testing.T, open opener) {
	t.Run("Stamp", func(t *testing.T) {
		s := open(t)
		ids, ok := s.(resourceapi.IdentityStore)
		if !ok {
			t.Skipf("%T does not implement resourceapi.IdentityStore", s)
		}
		stamp := func(id int64) string {
			t.Helper()
			acct, err := ids.AccountByID(timeout(t), id)
			if err != nil {
				t.Fatalf("AccountByID(%d) = %v", id, err)
			}
			if acct.Stamp == "" {
				t.Fatalf("AccountByID(%d): no security stamp", id)
			}
			return acct.Stamp
		}
		a := mustCreate(t, s, user("A", "a@example.com"))
		b := mustCreate(t, s, user("B", "b@example.com"))
		first := stamp(a.ID())
		if stamp(b.ID()) == first {
			t.Fatalf("two users have the same security stamp %q", first)
		}
		if acct, err := ids.AccountByEmail(timeout(t), "a@example.com"); err != nil || acct.Stamp != first {
			t.Fatalf("AccountByEmail stamp = %q, %v; want %q", acct.Stamp, err, first)
		}
		update := func(patch resourceapi.Record) {
			t.Helper()
			if _, err := s.Update(timeout(t), users, a.ID(), patch, nil); err != nil {
				t.Fatalf("Update(%v) = %v", patch, err)
			}
		}
		// IfChanged stores its value only when a field it names changes.
		update(resourceapi.Record{"name": "A2", "email": "a@example.com",
			"security_stamp": resourceapi.IfChanged{Fields: []string{"email"}, Value: "SAMEEMAIL"}})
		if got := stamp(a.ID()); got != first {
			t.Fatalf("stamp after a write that changed no email = %q, want %q", got, first)
		}
		update(resourceapi.Record{"email": "a2@example.com",
			"security_stamp": resourceapi.IfChanged{Fields: []string{"email"}, Value: "NEWEMAIL"}})
		if got := stamp(a.ID()); got != "NEWEMAIL" {
			t.Fatalf("stamp after an email change = %q, want NEWEMAIL", got)
		}
		update(resourceapi.Record{"password": hash, "security_stamp": resourceapi.IfChanged{Fields: []string{"password"}, Value: "NEWPASSWORD"}})
		if got := stamp(a.ID()); got != "NEWPASSWORD" {
			t.Fatalf("stamp after a password is set = %q, want NEWPASSWORD", got)
		}
		update(resourceapi.Record{"security_stamp": "PLAIN"})
		if got := stamp(a.ID()); got != "PLAIN" {
			t.Fatalf("stamp after a plain write = %q, want PLAIN", got)
		}
		// A record created with IfChanged takes its value.
		rec := mustValid(t, user("C", "c@example.com"), resourceapi.ModeReplace)
		rec["security_stamp"] = resourceapi.IfChanged{Fields: []string{"email"}, Value: "CREATED"}
		c, _, err := s.Replace(timeout(t), users, 900, rec, nil)
		if err != nil {
			t.Fatalf("Replace(900) = %v", err)
		}
		if got := stamp(c.ID()); got != "CREATED" {
			t.Fatalf("stamp of a record Replace created with IfChanged = %q, want CREATED", got)
		}
		// A transient field is stored nowhere, and no write fails for it.
		update(resourceapi.Record{"name": "A3", "current_password": "whatever it is"})
		mustShape(t, mustGet(t, s, a.ID()), "Get after a write with a transient field")
	})

	t.Run("FamilyStamp", func(t *testing.T) {
		// A family is rotated, and a token saved into one, only while its
		// stamp is its user's; a code returns the stamp it was saved with.
		s, oa := openOAuth(t, open)
		f := newFixture(t, s)
		now := wallMillis()
		c := f.code("c", now)
		mustSaveCode(t, oa, c)
		got, err := oa.ConsumeCode(timeout(t), c.Hash, now)
		if err != nil || got.Stamp != f.stamp {
			t.Fatalf("ConsumeCode stamp = %q, %v; want %q", got.Stamp, err, f.stamp)
		}
		t0 := f.token("t0", "fam", now)
		mustSaveToken(t, oa, t0)
		t1 := f.token("t1", "", now)
		prev, err := oa.RotateRefreshToken(timeout(t), t0.Hash, t1, now, 0)
		if err != nil || prev.Stamp != f.stamp {
			t.Fatalf("RotateRefreshToken = stamp %q, %v; want %q", prev.Stamp, err, f.stamp)
		}
		if _, err := s.Update(timeout(t), users, f.user.ID(), resourceapi.Record{"security_stamp": "RENEWED"}, nil); err != nil {
			t.Fatalf("Update(security_stamp) = %v", err)
		}
		_, err = oa.RotateRefreshToken(timeout(t), t1.Hash, f.token("t2", "", now), now, 0)
		mustCode(t, err, resourceapi.CodeNotFound, "RotateRefreshToken of a family of the old stamp")
		err = oa.SaveRefreshToken(timeout(t), f.token("n0", "new", now))
		mustCode(t, err, resourceapi.CodeConflict, "SaveRefreshToken of a new family with the old stamp")
		fresh := f.token("m0", "newer", now)
		fresh.Stamp = "RENEWED"
		mustSaveToken(t, oa, fresh)
		if prev, err := oa.RotateRefreshToken(timeout(t), fresh.Hash, f.token("m1", "", now), now, 0); err != nil || prev.Stamp != "RENEWED" {
			t.Fatalf("RotateRefreshToken of a family of the new stamp = %q, %v", prev.Stamp, err)
		}
	})

	t.Run("KeyExpiry", func(t *testing.T) {
		s := open(t)
		ids, ok := s.(resourceapi.IdentityStore)
		if !ok {
			t.Skipf("%T does not implement resourceapi.IdentityStore", s)
		}
		u := mustCreate(t, s, user("K", "k@example.com"))
		key := func(name string, expires any) resourceapi.Record {
			t.Helper()
			rec := resourceapi.Record{"user_id": u.ID(), "name": name}
			if expires != nil {
				rec["expires_at"] = expires
			}
			if err := resourceapi.Validate(resourceapi.APIKeys, rec, resourceapi.ModeCreate); err != nil {
				t.Fatalf("Validate(api key) = %v", err)
			}
			rec["key"], rec["prefix"] = resourceapi.HashToken("rak_"+name), ("rak_" + name)[:8]
			out, err := s.Create(timeout(t), resourceapi.APIKeys, rec)
			if err != nil {
				t.Fatalf("Create(api key) = %v", err)
			}
			return out
		}
		at := resourceapi.Timestamp(time.Now().Add(time.Hour))
		k := key("EXPIRING", at)
		if got, _ := k["expires_at"].(time.Time); !got.Equal(at) {
			t.Fatalf("expires_at = %v, want %v", k["expires_at"], at)
		}
		key("FOREVER", nil)
		acct, err := ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_EXPIRING"))
		if err != nil || !acct.ExpiresAt.Equal(at) {
			t.Fatalf("AccountByAPIKey(expiring) ExpiresAt = %v, %v; want %v", acct.ExpiresAt, err, at)
		}
		acct, err = ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_FOREVER"))
		if err != nil || !acct.ExpiresAt.IsZero() {
			t.Fatalf("AccountByAPIKey(no expiry) ExpiresAt = %v, %v; want zero", acct.ExpiresAt, err)
		}
		// A change of the expiry is seen by the next lookup.
		later := at.Add(time.Hour)
		if _, err := s.Update(timeout(t), resourceapi.APIKeys, k.ID(), resourceapi.Record{"expires_at": later}, nil); err != nil {
			t.Fatalf("Update(expires_at) = %v", err)
		}
		acct, err = ids.AccountByAPIKey(timeout(t), resourceapi.HashTokenBytes("rak_EXPIRING"))
		if err != nil || !acct.ExpiresAt.Equal(later) {
			t.Fatalf("AccountByAPIKey after the change: ExpiresAt = %v, %v; want %v", acct.ExpiresAt, err, later)
		}
		// The lookup by key does not lend its expiry to the lookup by id.
		acct, err = ids.AccountByID(timeout(t), u.ID())
		if err != nil || !acct.ExpiresAt.IsZero() {
			t.Fatalf("AccountByID ExpiresAt = %v, %v; want zero", acct.ExpiresAt, err)
		}
	})

	t.Run("RetiredIDs", func(t *testing.T) {
		s := open(t)
		f := newMaker(t, s)
		reuse := resourceapi.WithIDReuse(context.Background())
		for _, res := range resourceapi.Declared() {
			if !res.CreatableByPut() {
				continue
			}
			t.Run(res.Name, func(t *testing.T) {
				f.tb = t
				gone := f.create(res, nil)
				if err := s.Delete(timeout(t), res, gone.ID(), nil); err != nil {
					t.Fatalf("Delete = %v", err)
				}
				rec := f.prepare(res, f.raw(res, nil), resourceapi.ModeReplace, nil)
				_, _, err := s.Replace(timeout(t), res, gone.ID(), clone(rec), nil)
				mustCode(t, err, resourceapi.CodeConflict, "Replace at a deleted record's id")
				if _, err := s.Get(timeout(t), res, gone.ID()); resourceapi.ErrorCode(err) != resourceapi.CodeNotFound {
					t.Fatalf("Get after the refused Replace = %v, want CodeNotFound", err)
				}
				ctx, cancel := context.WithTimeout(reuse, callTimeout)
				defer cancel()
				if _, created, err := s.Replace(ctx, res, gone.ID(), clone(rec), nil); err != nil || !created {
					t.Fatalf("Replace at a deleted record's id, reuse allowed = created %v, %v; want a new record", created, err)
				}
				// An id never used is anyone's to create at.
				rec = f.prepare(res, f.raw(res, nil), resourceapi.ModeReplace, nil)
				if _, created, err := s.Replace(timeout(t), res, resourceapi.MaxID-int64(len(res.Name)), rec, nil); err != nil || !created {
					t.Fatalf("Replace at a fresh id = created %v, %v; want a new record", created, err)
				}
			})
		}
		t.Run("cascade", func(t *testing.T) {
			f.tb = t
			owner := f.create(users, nil)
			post := f.create(resourceapi.Posts, refs{"author_id": owner.ID()})
			mustDelete(t, s, owner.ID())
			rec := f.prepare(resourceapi.Posts, f.raw(resourceapi.Posts, nil), resourceapi.ModeReplace, nil)
			_, _, err := s.Replace(timeout(t), resourceapi.Posts, post.ID(), rec, nil)
			mustCode(t, err, resourceapi.CodeConflict, "Replace at the id of a post deleted with its author")
			rec = mustValid(t, user("Again", "again@example.com"), resourceapi.ModeReplace)
			_, _, err = s.Replace(timeout(t), users, owner.ID(), rec, nil)
			mustCode(t, err, resourceapi.CodeConflict, "Replace at a deleted user's id")
		})
	})
}
