package graph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// A query of users with their posts and each post's author costs the same
// few statements whatever the number of users: User.posts and Post.author
// load in batches (on SQLite with the cache off, so that every read is a
// statement).
func TestBatchedLoadsRunConstantStatements(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			var statements atomic.Int64
			s := mustServer(t, b.open(t, &statements))
			count := func(query string) (int64, int) {
				t.Helper()
				before := statements.Load()
				var d struct{ Users []userData }
				s.mustData(s.admin, query, nil, &d)
				posts := 0
				for _, u := range d.Users {
					for _, p := range u.Posts {
						if p.Author == nil || p.Author.ID != u.ID {
							t.Fatalf("post %s of user %s has author %+v", p.ID, u.ID, p.Author)
						}
					}
					posts += len(u.Posts)
				}
				return statements.Load() - before, posts
			}
			const query = "{ users { id posts { id title author { id name } } } }"
			// On PostgreSQL the admin's account is then served from the
			// instance's account cache (docs/auth.md), so both counts
			// below find it there.
			s.mustData(s.admin, "{ hello }", nil, nil)
			mustUsers(t, s, 9, 2) // with the admin: 10 users
			small, posts := count(query)
			if posts != 18 {
				t.Fatalf("%d posts, want 18", posts)
			}
			mustUsers(t, s, 90, 2) // 100 users
			large, posts := count(query)
			if posts != 198 {
				t.Fatalf("%d posts, want 198", posts)
			}
			// The API key's lookup (on SQLite, whose cache is off here),
			// the users' page, the posts of all of them; the authors are
			// the users already read.
			if large != small || large > 4 {
				t.Fatalf("statements: %d for 10 users, %d for 100; want the same, at most 4", small, large)
			}
			// Posts with their authors: the authors in one batch.
			before := statements.Load()
			var d struct {
				Posts []struct{ Author struct{ Name string } }
			}
			s.mustData(s.admin, "{ posts(limit: 100) { id author { name } } }", nil, &d)
			if n := statements.Load() - before; len(d.Posts) != 100 || n > 4 {
				t.Fatalf("%d posts in %d statements, want 100 in at most 4", len(d.Posts), n)
			}
		})
	}
}

// mustUsers creates n users with posts posts each, through the rule layer.
func mustUsers(tb testing.TB, s *server, n, posts int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		u, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
			"name": fmt.Sprintf("User %d", i), "email": fmt.Sprintf("user%d-%d@test.example", i, posts*1000+n)})
		if err != nil {
			tb.Fatal(err)
		}
		for j := range posts {
			s.mustPost(u.ID(), fmt.Sprintf("Post %d of %d", j, u.ID()))
		}
	}
}
