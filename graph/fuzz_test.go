package graph_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/graph"
)

// FuzzGraphQLRequest posts arbitrary documents and variables to /graphql as
// an admin, over real HTTP, so that every resolver, argument and limit is in
// reach: the answer is never a 5xx, and always a JSON body (a response with
// data or errors, or a request error) within the response limit. The seeds
// run with the ordinary tests; go test -fuzz FuzzGraphQLRequest ./graph
// explores further.
func FuzzGraphQLRequest(f *testing.F) {
	s := mustServer(f, backends()[0].open(f, nil))
	for _, seed := range []struct{ query, variables string }{
		{"{ hello }", ""},
		{"query($id: ID!) { user(id: $id) { name email posts { title author { name } } } }", `{"id":"1"}`},
		{"query($id: ID!) { user(id: $id) { name } }", `{"id":9007199254740993}`},
		{`mutation { createUser(name: "Fuzz", email: "fuzz@example.com") { id } }`, ""},
		{`mutation { updateUser(id: "1", name: "") { id } }`, ""},
		{`mutation { createPost(title: "T", content: "C", authorId: "-1") { id } }`, ""},
		{"{ users(limit: 1000, offset: -1) { posts(limit: 100) { author { posts { title } } } } }", ""},
		{"{ __schema { types { name fields { name } } } }", ""},
		{"{ adminData { version } }", ""},
		{"fragment F on Query { ...F } { ...F }", ""},
		{"subscription { userCreated { id } }", ""},
		{"{", ""},
		{strings.Repeat("{ a", 300), ""},
		{`{ user(id: "\u0000") { id } }`, ""},
		{"{ hello }", "[1]"},
		{"{ hello }", `{"x":`},
		{"query Q { hello } query Q { hello }", ""},
		// The cost model's shapes: introspection, lists without limit,
		// aliases, fragments, repeats (cost_test.go).
		{introspectionQuery, ""},
		{introspectionBomb(120), ""},
		{introspectionBomb(24), ""},
		{`{ __type(name: "__Type") { fields { type { ofType { fields { name } } } } } }`, ""},
		{fragmentChain(30), ""},
		{sideBySide(300), ""},
		{"{" + strings.Repeat(" hello", 900) + " }", ""},
		{"{ " + aliases("users { id }", 1000) + "}", ""},
		{"{ users { id name email } }", ""},
		{"{ posts { content author { posts { content } } } }", ""},
		{"{ " + aliases("posts { content author { posts { content } } }", 7) + "}", ""},
		{"query($n: Int) { users(limit: $n) { posts { author { posts(limit: $n) { id } } } } }", `{"n":100}`},
		{"{ adminData { userCount } " + aliases(`user(id: "1") { posts { title } }`, 90) + "}", ""},
	} {
		f.Add(seed.query, seed.variables)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	f.Fuzz(func(t *testing.T, query, variables string) {
		q, _ := json.Marshal(query) // a string always encodes
		body := `{"query":` + string(q)
		if variables != "" {
			body += `,"variables":` + variables // perhaps not JSON: a request error
		}
		body += "}"
		req, err := http.NewRequest(http.MethodPost, s.url+"/graphql", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", s.admin)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode >= 500 {
			t.Fatalf("POST %q: %d %s", body, res.StatusCode, b)
		}
		if !json.Valid(b) {
			t.Fatalf("POST %q: %d, body not JSON: %q", body, res.StatusCode, b)
		}
		if len(b) > graph.DefaultMaxResponseBytes {
			t.Fatalf("POST %q: %d bytes answered", body, len(b))
		}
	})
}
