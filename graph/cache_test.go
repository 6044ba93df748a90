package graph_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
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
