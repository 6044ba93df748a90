package postgres_test

import (
	"context"
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
