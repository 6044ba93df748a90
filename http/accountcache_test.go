package http_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// openPostgres opens the PostgreSQL database at url as one more instance
// would, counting its statements in n when n is not nil.
func openPostgres(t *testing.T, url string, n *atomic.Int64) *postgres.DB {
	t.Helper()
	opts := postgres.Options{MaxConns: 4}
	if n != nil {
		opts.OnStatement = func(string) { n.Add(1) }
	}
	db, err := postgres.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCachedAccountsFollowOtherInstances: on PostgreSQL an instance reads
// with accounts from its cache, and every change made elsewhere (another
// instance, or SQL from outside) applies on its very next request: roles,
// direct grants, a role's definition, soft and hard deletes, a password
// change and a revoked key, for every scheme.
func TestCachedAccountsFollowOtherInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := mustServer(t, openPostgres(t, url, nil))
	admin := a.auth[1]
	b := mustServerOn(t, openPostgres(t, url, nil), admin)

	key := a.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser)
	ann := a.as(key)
	id := idOf(t, ann.get("/api/users/2").object(t))
	item := fmt.Sprintf("/api/users/%d", id)
	basic := a.anonymous()
	basic.auth = []string{"Authorization", basicAuth("ann@example.com", "correct horse battery")}
	jwt := a.anonymous()
	jwt.auth = []string{"Authorization", bearer(t, a, id, time.Now().Add(10*time.Minute))}
	all := []*client{ann, basic, jwt}
	readAll := func(status int, code resourceapi.Code) {
		t.Helper()
		for _, who := range all {
			for _, path := range []string{"/api/users/1", "/api/articles"} {
				if status == http.StatusOK {
					who.get(path).mustStatus(t, status)
				} else {
					who.get(path).mustError(t, status, code)
				}
			}
		}
	}
	readAll(http.StatusOK, "") // every account is cached on a now
	post := fmt.Sprintf(`{"author_id":%d,"title":"T","content":"C"}`, id)
	for _, who := range all {
		who.post("/api/posts", post).mustStatus(t, http.StatusCreated)
	}

	// Roles and grants, changed on b.
	b.do("PATCH", item, `{"roles":[],"permissions":[]}`).mustStatus(t, http.StatusOK)
	readAll(http.StatusForbidden, resourceapi.CodeForbidden)
	for _, who := range all {
		who.post("/api/posts", post).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
	}
	b.do("PATCH", item, `{"permissions":["users:read","articles:read"]}`).mustStatus(t, http.StatusOK)
	readAll(http.StatusOK, "")
	// Given back on b while a's cached account may not post: a's write
	// is not refused on the cached account.
	b.do("PATCH", item, `{"roles":["user"],"permissions":[]}`).mustStatus(t, http.StatusOK)
	for _, who := range all {
		who.post("/api/posts", post).mustStatus(t, http.StatusCreated)
	}
	readAll(http.StatusOK, "")

	// A role's definition, changed by SQL from outside the service.
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(query string) {
		t.Helper()
		if _, err := raw.Exec(query); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec(`UPDATE roles SET permissions = '["posts:read"]' WHERE name = 'user'`)
	readAll(http.StatusForbidden, resourceapi.CodeForbidden)
	exec(`UPDATE roles SET permissions = '["users:read","articles:read"]' WHERE name = 'user'`)
	readAll(http.StatusOK, "")

	// A soft delete, and its undoing, which ends the tokens issued before.
	b.do("PATCH", item, `{"deleted":true}`).mustStatus(t, http.StatusOK)
	readAll(http.StatusForbidden, resourceapi.CodeInvalidToken)
	b.do("PATCH", item, `{"deleted":false}`).mustStatus(t, http.StatusOK)
	jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	jwt.auth[1] = bearer(t, a, id, time.Now().Add(10*time.Minute))
	readAll(http.StatusOK, "")

	// A password change: the old one is refused, the new one works; the
	// tokens issued before end.
	b.do("PATCH", item, `{"password":"a new passphrase"}`).mustStatus(t, http.StatusOK)
	basic.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	basic.auth[1] = basicAuth("ann@example.com", "a new passphrase")
	basic.get(item).mustStatus(t, http.StatusOK)
	jwt.auth[1] = bearer(t, a, id, time.Now().Add(10*time.Minute))
	jwt.get(item).mustStatus(t, http.StatusOK)

	// The end of the user's sessions, on b: a's next request refuses the
	// token.
	b.do("DELETE", item+"/sessions", "").mustStatus(t, http.StatusNoContent)
	jwt.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	jwt.auth[1] = bearer(t, a, id, time.Now().Add(10*time.Minute))

	// A key revoked on b.
	keys, _ := b.get(item + "/api-keys").list(t)
	if len(keys) != 1 {
		t.Fatalf("Ann's keys = %v, want one", keys)
	}
	b.do("DELETE", fmt.Sprintf("/api/api-keys/%d", idOf(t, keys[0])), "").mustStatus(t, http.StatusNoContent)
	ann.get(item).mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	jwt.get(item).mustStatus(t, http.StatusOK)

	// A hard delete.
	b.do("DELETE", item, "").mustStatus(t, http.StatusNoContent)
	basic.get("/api/users/1").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
	jwt.get("/api/users/1").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
}

// TestCachedAccountCostsNoStatement: on PostgreSQL, a read by a caller
// whose account is cached runs the read's own statement and nothing else,
// until a change that decides access.
func TestCachedAccountCostsNoStatement(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	c := mustServer(t, openPostgres(t, pgtest.NewDatabase(t), &n))
	ann := c.as(c.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser))
	jwt := c.anonymous()
	jwt.auth = []string{"Authorization", bearer(t, c, 2, time.Now().Add(10*time.Minute))}
	basic := c.anonymous()
	basic.auth = []string{"Authorization", basicAuth("ann@example.com", "correct horse battery")}
	for _, who := range []*client{c, ann, jwt, basic} {
		for _, path := range []string{"/api/users/2", "/api/users?limit=5"} {
			who.get(path).mustStatus(t, http.StatusOK) // caches the account
			before := n.Load()
			who.get(path).mustStatus(t, http.StatusOK)
			if got := n.Load() - before; got != 1 {
				t.Errorf("GET %s with a cached account ran %d statements, want 1", path, got)
			}
		}
	}
	// A change that does not decide access (a name) keeps the cached
	// account; one that does (a grant) moves the identity version after the
	// PATCH read the account, so the next read sees the new version and
	// reads the account and the user again.
	for _, change := range []struct {
		patch string
		want  int64
	}{{`{"name":"Ann B"}`, 1}, {`{"permissions":["orders:write"]}`, 3}} {
		c.do("PATCH", "/api/users/2", change.patch).mustStatus(t, http.StatusOK)
		before := n.Load()
		ann.get("/api/users/2").mustStatus(t, http.StatusOK)
		if got := n.Load() - before; got != change.want {
			t.Errorf("GET after PATCH %s ran %d statements, want %d", change.patch, got, change.want)
		}
		before = n.Load()
		ann.get("/api/users/2").mustStatus(t, http.StatusOK)
		if got := n.Load() - before; got != 1 {
			t.Errorf("the next GET ran %d statements, want 1", got)
		}
	}
}
