package graph_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlite"
)

// names returns the names users shows to the admin.
func (s *server) names(tb testing.TB) string {
	tb.Helper()
	var d struct{ Users []userData }
	s.mustData(s.admin, "{ users { name } }", nil, &d)
	var out []string
	for _, u := range d.Users {
		out = append(out, u.Name)
	}
	return strings.Join(out, ",")
}

// restCreate creates a user over REST.
func (s *server) restCreate(tb testing.TB, name, email string) {
	tb.Helper()
	r := s.send(http.MethodPost, "/api/users", s.admin, strings.NewReader(`{"name":"`+name+`","email":"`+email+`"}`),
		"Content-Type", "application/json")
	if r.status != http.StatusCreated {
		tb.Fatalf("POST /api/users: %d %s", r.status, r.raw)
	}
}

// The users list never serves a write stale: not one made over REST, nor one
// another process made to the SQLite file (the command line), however often
// it was read before.
func TestUsersNeverStaleOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	s := mustServer(t, mustSQLite(t, path, nil))
	for range 3 {
		if got := s.names(t); got != "Test Admin" {
			t.Fatalf("users = %s", got)
		}
	}
	s.restCreate(t, "Over REST", "rest@test.example")
	if got := s.names(t); got != "Test Admin,Over REST" {
		t.Fatalf("after a REST create, users = %s", got)
	}
	r := s.send(http.MethodPatch, "/api/users/2", s.admin, strings.NewReader(`{"name":"Patched"}`), "Content-Type", "application/json")
	if r.status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", r.status, r.raw)
	}
	if got := s.names(t); got != "Test Admin,Patched" {
		t.Fatalf("after a REST patch, users = %s", got)
	}

	// The command line: another handle on the file, as resourceapi user
	// create opens it beside a running server.
	cli, err := sqlite.Open(context.Background(), path, sqlite.Options{Beside: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	svc := resourceapi.NewService(cli, testHasher())
	if _, err := svc.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, 0,
		resourceapi.Record{"name": "From the CLI", "email": "cli@test.example"}); err != nil {
		t.Fatal(err)
	}
	if got := s.names(t); got != "Test Admin,Patched,From the CLI" {
		t.Fatalf("after a write by another process, users = %s", got)
	}
	if err := svc.Delete(context.Background(), resourceapi.SystemCaller(), resourceapi.Users, resourceapi.Address{ID: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.names(t); got != "Test Admin,From the CLI" {
		t.Fatalf("after a delete by another process, users = %s", got)
	}
}

// Two instances on one PostgreSQL database: a write on either is read at
// once on the other, over GraphQL and REST alike.
func TestUsersNeverStaleAcrossInstances(t *testing.T) {
	if len(backends()) < 2 {
		t.Skip("PostgreSQL is not configured (" + pgtest.EnvURL + ")")
	}
	url := pgtest.NewDatabase(t)
	a := mustServer(t, mustPostgres(t, url, nil))
	b := mustServerSharing(t, mustPostgres(t, url, nil), a)
	if got := b.names(t); got != "Test Admin" {
		t.Fatalf("users on b = %s", got)
	}
	a.restCreate(t, "On A", "a@test.example")
	if got := b.names(t); got != "Test Admin,On A" {
		t.Fatalf("users on b after a REST create on a = %s", got)
	}
	b.mustData(b.admin, `mutation { createUser(name: "On B", email: "b@test.example") { id } }`, nil, nil)
	if got := a.names(t); got != "Test Admin,On A,On B" {
		t.Fatalf("users on a after a GraphQL create on b = %s", got)
	}
	a.mustData(a.admin, `mutation { updateUser(id: "2", name: "Renamed on A") { id } }`, nil, nil)
	if got := b.names(t); got != "Test Admin,Renamed on A,On B" {
		t.Fatalf("users on b after an update on a = %s", got)
	}
}

// The users cache: a repeated query of users costs no statement, and the
// first one after a write (here a post's, over REST) reads again.
func TestUsersCacheServesRepeatsUntilAWrite(t *testing.T) {
	var statements atomic.Int64
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"),
		sqlite.Options{Sync: sqlite.SyncNormal, OnStatement: counter(&statements)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := mustServer(t, db)
	mustUsers(t, s, 3, 1)
	const query = "{ users { id name posts { title } } }"
	run := func(query string) (int64, string) {
		before := statements.Load()
		r := s.post(s.admin, query, nil)
		if len(r.Errors) > 0 {
			t.Fatalf("errors: %+v", r.Errors)
		}
		return statements.Load() - before, string(r.Data)
	}
	// What authenticating the request costs, whatever the query.
	auth, _ := run("{ hello }")
	run(query)
	n, first := run(query)
	if n > auth {
		t.Fatalf("a repeated query ran %d statements, want at most authentication's %d", n, auth)
	}
	r := s.send(http.MethodPost, "/api/posts", s.admin, strings.NewReader(`{"title":"New","content":"Text","author_id":1}`),
		"Content-Type", "application/json")
	if r.status != http.StatusCreated {
		t.Fatalf("POST /api/posts: %d %s", r.status, r.raw)
	}
	_, after := run(query)
	if after == first || !strings.Contains(after, `"title":"New"`) {
		t.Fatalf("after a write, data %s", after)
	}
	// Another caller, with other permissions, is not served the admin's.
	none := s.mustAccount("Nobody", "nobody@test.example")
	var d struct{ Users []userData }
	s.mustData(s.admin, "{ users { name } }", nil, &d)
	s.mustData(s.admin, "{ users { name } }", nil, &d)
	s.mustData(none, "{ users { name } }", nil, &d)
	if len(d.Users) != 1 || d.Users[0].Name != "Nobody" {
		t.Fatalf("users for a user without users:read = %+v", d.Users)
	}
}
