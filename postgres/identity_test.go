package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestIdentityVersion: the identity version moves on with every commit that
// changes what authentication reads (a user, an API key, a role), and only
// with those; a rolled-back change leaves it.
func TestIdentityVersion(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := resourceapi.NewService(db, &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16})
	sys := resourceapi.SystemCaller()
	last, err := db.IdentityVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, moves bool, do func() error) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v, err := db.IdentityVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if moved := v != last; moved != moves {
			t.Errorf("%s: identity version %d -> %d, want moved = %v", what, last, v, moves)
		}
		if v < last {
			t.Errorf("%s: identity version went back from %d to %d", what, last, v)
		}
		last = v
	}
	var user, key, post resourceapi.Record
	step("create a user", false, func() (err error) {
		user, err = svc.Create(ctx, sys, resourceapi.Users, 0, resourceapi.Record{"name": "Ann", "email": "ann@example.com"})
		return err
	})
	step("create a key", false, func() (err error) {
		key, err = svc.Create(ctx, sys, resourceapi.APIKeys, 0, resourceapi.Record{"user_id": user.ID()})
		return err
	})
	step("create a post", false, func() (err error) {
		post, err = svc.Create(ctx, sys, resourceapi.Posts, 0, resourceapi.Record{"author_id": user.ID(), "title": "T", "content": "C"})
		return err
	})
	step("update a post", false, func() error {
		_, err := svc.Update(ctx, sys, resourceapi.Posts, resourceapi.Address{ID: post.ID()}, resourceapi.Record{"title": "U"}, nil)
		return err
	})
	for _, change := range []struct {
		patch resourceapi.Record
		moves bool
	}{
		{resourceapi.Record{"name": "Ann B", "age": int64(40)}, false},
		{resourceapi.Record{"roles": []string{"editor"}}, true},
		{resourceapi.Record{"permissions": []string{"orders:write"}}, true},
		{resourceapi.Record{"password": "a long passphrase"}, true},
		{resourceapi.Record{"email": "ann.b@example.com"}, true},
		{resourceapi.Record{"email": "Ann.B@example.com"}, false}, // the same email, as compared
		{resourceapi.Record{"deleted": true}, true},
		{resourceapi.Record{"deleted": false}, true},
	} {
		step(fmt.Sprintf("update a user: %v", change.patch), change.moves, func() error {
			_, err := svc.Update(ctx, sys, resourceapi.Users, resourceapi.Address{ID: user.ID()}, change.patch, nil)
			return err
		})
	}
	step("end the user's sessions", true, func() error {
		return svc.EndSessions(ctx, sys, user.ID())
	})
	step("set a key's expiry", true, func() error {
		_, err := svc.Update(ctx, sys, resourceapi.APIKeys, resourceapi.Address{ID: key.ID()},
			resourceapi.Record{"expires_at": time.Now().Add(time.Hour)}, nil)
		return err
	})
	step("rename a key", false, func() error {
		_, err := svc.Update(ctx, sys, resourceapi.APIKeys, resourceapi.Address{ID: key.ID()}, resourceapi.Record{"name": "laptop"}, nil)
		return err
	})
	step("a failed update of a user", false, func() error {
		if _, err := svc.Create(ctx, sys, resourceapi.Users, 0, resourceapi.Record{"name": "Bob", "email": "bob@example.com"}); err != nil {
			return err
		}
		_, err := svc.Update(ctx, sys, resourceapi.Users, resourceapi.Address{ID: user.ID()}, resourceapi.Record{"email": "bob@example.com"}, nil)
		if resourceapi.ErrorCode(err) != resourceapi.CodeConflict {
			t.Errorf("update to a taken email = %v, want %s", err, resourceapi.CodeConflict)
		}
		return nil
	})
	step("revoke a key", true, func() error {
		return svc.Delete(ctx, sys, resourceapi.APIKeys, resourceapi.Address{ID: key.ID()}, nil)
	})
	step("delete a user", true, func() error {
		return svc.Delete(ctx, sys, resourceapi.Users, resourceapi.Address{ID: user.ID()}, nil)
	})
}

// TestIdentityTriggersNameTheirColumns: every row trigger that moves the
// identity version on an UPDATE, under a WHEN, names the columns it compares
// (migration 00043), so that an UPDATE of other columns skips it without
// preparing its WHEN; TestIdentityVersion shows that it still fires on each
// change that decides access.
func TestIdentityTriggersNameTheirColumns(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	rows, err := db.Query(`SELECT t.tgrelid::regclass::text, t.tgname, cardinality(t.tgattr)
		FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE p.proname = 'identity_changed' AND NOT t.tgisinternal
		AND t.tgtype & 16 <> 0 AND t.tgtype & 1 <> 0 AND t.tgqual IS NOT NULL
		ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var table, name string
		var columns int
		if err := rows.Scan(&table, &name, &columns); err != nil {
			t.Fatal(err)
		}
		n++
		if columns == 0 {
			t.Errorf("%s's trigger %s fires on every UPDATE: name the columns its WHEN compares (UPDATE OF)", table, name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("%d identity triggers on UPDATE with a WHEN, want 4 (users_identity, users_identity_stamp, api_keys_identity, api_keys_identity_expiry)", n)
	}
}

// TestWriteConfirmsIdentity: a write whose context asks it to confirm an
// identity version (what the Service gives the write of a caller
// authenticated from the accounts cache) commits while the database still
// has that version, and otherwise fails with ErrIdentityMoved having
// committed nothing: no record, no change, no event.
func TestWriteConfirmsIdentity(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db := mustOpen(t, url)
	raw := mustOpenRaw(t, url)
	user := func(name string) resourceapi.Record {
		rec := resourceapi.Record{"name": name, "email": name + "@example.com"}
		if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	ann, err := db.Create(ctx, resourceapi.Users, user("ann"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.IdentityVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	confirmed := resourceapi.WithIdentityConfirm(ctx, v)
	if _, err := db.Create(confirmed, resourceapi.Users, user("bob")); err != nil {
		t.Fatalf("create at the current version: %v", err)
	}
	if _, err := db.Update(confirmed, resourceapi.Users, ann.ID(), resourceapi.Record{"age": int64(41)}, nil); err != nil {
		t.Fatalf("update at the current version: %v", err)
	}
	counts := func() (users, events int) {
		t.Helper()
		if err := raw.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM events)").Scan(&users, &events); err != nil {
			t.Fatal(err)
		}
		return users, events
	}
	users, events := counts()

	// Another instance changes what decides access.
	if _, err := raw.ExecContext(ctx, `UPDATE users SET roles = '["admin"]' WHERE id = $1`, ann.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Create(confirmed, resourceapi.Users, user("cid")); !errors.Is(err, resourceapi.ErrIdentityMoved) {
		t.Errorf("create at a moved version: %v, want ErrIdentityMoved", err)
	}
	if _, err := db.Update(confirmed, resourceapi.Users, ann.ID(), resourceapi.Record{"age": int64(42)}, nil); !errors.Is(err, resourceapi.ErrIdentityMoved) {
		t.Errorf("update at a moved version: %v, want ErrIdentityMoved", err)
	}
	if u, e := counts(); u != users || e != events {
		t.Errorf("after the refused writes: %d users and %d events, want %d and %d", u, e, users, events)
	}
	var age int64
	if err := raw.QueryRowContext(ctx, "SELECT age FROM users WHERE id = $1", ann.ID()).Scan(&age); err != nil || age != 41 {
		t.Errorf("age = %d (%v), want 41", age, err)
	}
}

// TestIdentityConfirmCallsNoFunction: the statement a confirmed write runs
// with its commit calls no function while the identity version is the one
// it confirms (migration 00046: identity_confirm was a PL/pgSQL call and a
// query of its own on every such write), and fails with RA001 once the
// version moved, as TestWriteConfirmsIdentity checks through the store.
func TestIdentityConfirmCallsNoFunction(t *testing.T) {
	ctx := context.Background()
	db := mustAdmin(t, pgtest.Migrated(t))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
		t.Fatal(err)
	}
	var v int64
	if err := tx.QueryRowContext(ctx, "SELECT version FROM identity_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, postgres.ConfirmIdentityStatement, v); err != nil {
		t.Fatalf("confirm the current version %d: %v", v, err)
	}
	var calls int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions").Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("confirming the current identity version called %d functions, want 0", calls)
	}
	_, err = tx.ExecContext(ctx, postgres.ConfirmIdentityStatement, v+1)
	var state interface{ SQLState() string }
	if !errors.As(err, &state) || state.SQLState() != "RA001" {
		t.Errorf("confirm version %d where it is %d: %v, want SQLSTATE RA001", v+1, v, err)
	}
}
