package graph_test

import (
	"testing"

	"github.com/resourceapi/resourceapi/graph"
)

// TestCollectedFieldsKeptPerDocument checks that the fields of a cached
// document whose directives read no variable are collected once, and that
// those of a document whose @include or @skip read a variable follow the
// variables of every request.
func TestCollectedFieldsKeptPerDocument(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	// What gqlgen collects: user(id) of scalar fields takes the fast path
	// otherwise (fast.go).
	graph.SetFastPath(s.gql, false)
	s.mustAccount("Second", "second@test.example")
	collected := func() int64 { return graph.Collected(s.gql) }
	type user struct {
		ID    string  `json:"id"`
		Name  string  `json:"name"`
		Email *string `json:"email"`
	}
	var list struct{ Users []user }
	s.mustData(s.admin, "{ users(limit: 2) { id name email } }", nil, &list)
	if len(list.Users) != 2 {
		t.Fatalf("users: %+v, want 2", list.Users)
	}

	// The same document with other variables: collected on its first
	// request only (the query and the user: 2), each answer its own user's.
	const one = "query($id: ID!) { user(id: $id) { name email } }"
	before := collected()
	for range 2 {
		for _, u := range list.Users {
			var got struct{ User user }
			s.mustData(s.admin, one, map[string]any{"id": u.ID}, &got)
			if got.User.Name != u.Name || got.User.Email == nil || *got.User.Email != *u.Email {
				t.Errorf("user(id: %s): %+v, want %s %s", u.ID, got.User, u.Name, *u.Email)
			}
		}
	}
	if n := collected() - before; n != 2 {
		t.Errorf("%s four times: %d selection sets collected, want 2 (the first request's)", one, n)
	}

	// A directive with a variable: the fields follow each request's.
	const with = "query($id: ID!, $with: Boolean!) { user(id: $id) { name email @include(if: $with) } }"
	const without = "query($id: ID!, $without: Boolean!) { user(id: $id) { name email @skip(if: $without) } }"
	before = collected()
	for _, b := range []bool{true, false, true, false} {
		for _, c := range []struct {
			query, name string
			shown       bool
		}{{with, "with", b}, {without, "without", !b}} {
			var got struct{ User map[string]any }
			s.mustData(s.admin, c.query, map[string]any{"id": list.Users[0].ID, c.name: b}, &got)
			if _, ok := got.User["email"]; ok != c.shown {
				t.Errorf("%s with %s %v: %v, want email shown %v", c.query, c.name, b, got.User, c.shown)
			}
		}
	}
	if n := collected() - before; n != 16 {
		t.Errorf("documents with variables in directives, 8 requests: %d selection sets collected, want 16 (every request's)", n)
	}

	// A directive without a variable: kept like any other document.
	const literal = "query($id: ID!) { user(id: $id) { name email @skip(if: true) } }"
	before = collected()
	for range 3 {
		var got struct{ User map[string]any }
		s.mustData(s.admin, literal, map[string]any{"id": list.Users[0].ID}, &got)
		if _, ok := got.User["email"]; ok || got.User["name"] != list.Users[0].Name {
			t.Errorf("%s: %v, want the name alone", literal, got.User)
		}
	}
	if n := collected() - before; n != 2 {
		t.Errorf("%s three times: %d selection sets collected, want 2", literal, n)
	}
}
