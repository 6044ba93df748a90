package graph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestCachedAccounts: on PostgreSQL, GraphQL requests authenticate from the
// instance's account cache like REST reads: a query whose caller is cached
// runs only its own statement, and a change made on another instance
// applies to the very next request on this one, queries and mutations
// alike.
func TestCachedAccounts(t *testing.T) {
	var n atomic.Int64
	url := pgtest.NewDatabase(t)
	a := mustServer(t, mustPostgres(t, url, &n))
	b := mustServerSharing(t, mustPostgres(t, url, nil), a)
	key := a.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser)
	ann := a.ids["ann@example.com"]

	const query = `{ user(id: "1") { name } }`
	a.mustPost(ann, "T")
	for _, q := range []struct {
		doc  string
		want int64
	}{
		{query, 1},
		// The list, then the posts of all its users in one batch.
		{`{ users(limit: 5) { id posts { title } } }`, 2},
		// A page past the last: the page, then the account confirmed (no
		// row carried the identity version); no count, as no total is
		// shown (it was a third statement).
		{`{ users(limit: 5, offset: 1000) { id } }`, 2},
		// The user, their posts, the posts' authors.
		{fmt.Sprintf(`{ user(id: "%d") { posts { author { name } } } }`, ann), 3},
	} {
		a.mustData(key, q.doc, nil, nil)
		before := n.Load()
		a.mustData(key, q.doc, nil, nil)
		if got := n.Load() - before; got != q.want {
			t.Errorf("%s with a cached account ran %d statements, want %d", q.doc, got, q.want)
		}
	}

	ctx := context.Background()
	change := func(patch resourceapi.Record) {
		t.Helper()
		if _, err := b.service.Update(ctx, resourceapi.SystemCaller(), resourceapi.Users, resourceapi.Address{ID: ann}, patch, nil); err != nil {
			t.Fatal(err)
		}
	}
	warm := func() {
		t.Helper()
		a.mustData(key, query, nil, nil)
		a.mustData(key, query, nil, nil) // served with the cached account
	}
	create := fmt.Sprintf(`mutation { createPost(authorId: "%d", title: "T", content: "C") { id } }`, ann)
	posts := fmt.Sprintf(`{ user(id: "%d") { posts { title } } }`, ann) // her own record, and a batch of posts
	for _, doc := range []string{query, create, posts} {
		change(resourceapi.Record{"roles": []string{resourceapi.RoleUser}})
		warm()
		change(resourceapi.Record{"roles": []string{}})
		if got := a.post(key, doc, nil).code(); got != "FORBIDDEN" {
			t.Errorf("%s after the role was taken on another instance: code %q, want FORBIDDEN", doc, got)
		}
	}
	change(resourceapi.Record{"roles": []string{resourceapi.RoleUser}})
	for _, doc := range []string{query, create, `{ adminData { version } }`} {
		change(resourceapi.Record{"deleted": false})
		warm()
		change(resourceapi.Record{"deleted": true})
		if got := a.post(key, doc, nil).code(); got != "INVALID_TOKEN" {
			t.Errorf("%s after the user was deleted on another instance: code %q, want INVALID_TOKEN", doc, got)
		}
	}
	a.mustData(key, `{ hello }`, nil, nil) // the one field that needs no credential
}
