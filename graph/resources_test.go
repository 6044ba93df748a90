package graph_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/internal/graphgen"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
)

// withListQuery hands the page fields REST's list parameter parsing, as
// serve wires it.
func withListQuery(o *graph.Options, _ *rhttp.Config) { o.ParseListQuery = rhttp.ParseListQuery }

// Every declared resource is served over GraphQL from its declaration:
// its object type, a query for one record and one for a page, and its
// mutations (those the specification does not name already).
func TestEveryResourceHasItsFields(t *testing.T) {
	s := mustServer(t, mustSQLite(t, sqlitetest.Migrated(t), nil), withListQuery)
	var d struct {
		Query, Mutation struct {
			Fields []struct{ Name string }
		}
	}
	s.mustData(s.admin, `{ Query: __type(name: "Query") { fields { name } } Mutation: __type(name: "Mutation") { fields { name } } }`, nil, &d)
	has := func(fields []struct{ Name string }, name string) bool {
		for _, f := range fields {
			if f.Name == name {
				return true
			}
		}
		return false
	}
	for _, res := range resourceapi.Declared() {
		typ := graphgen.TypeName(res)
		for _, f := range []string{graphgen.OneField(res), graphgen.PageField(res)} {
			if !has(d.Query.Fields, f) {
				t.Errorf("Query.%s (%s) missing", f, res.Name)
			}
		}
		for _, f := range []string{"create" + typ, "update" + typ, "delete" + typ} {
			if !has(d.Mutation.Fields, f) && res != resourceapi.Users {
				t.Errorf("Mutation.%s missing", f)
			}
		}
		var ty struct {
			T *struct{ Name string } `json:"t"`
		}
		s.mustData(s.admin, `query($n: String!) { t: __type(name: $n) { name } }`, map[string]any{"n": typ}, &ty)
		if ty.T == nil {
			t.Errorf("type %s (%s) missing", typ, res.Name)
		}
	}
}

// camel, which objectOf calls for every field of every record, names each
// declared field as graphgen.Camel named it in the schema, the first time
// and once kept.
func TestCamelAsGraphgen(t *testing.T) {
	for range 2 {
		for _, res := range resourceapi.Declared() {
			for _, f := range res.Fields {
				names := []string{f.Name}
				if f.Items != nil {
					for _, sub := range f.Items.Fields {
						names = append(names, sub.Name)
					}
				}
				for _, n := range names {
					if got, want := graph.Camel(n), graphgen.Camel(n); got != want {
						t.Errorf("camel(%q) = %q, want %q", n, got, want)
					}
				}
			}
		}
	}
	for _, n := range []string{"", "a", "a_", "a__b", "a_b_c", "x_1"} {
		if got, want := graph.Camel(n), graphgen.Camel(n); got != want {
			t.Errorf("camel(%q) = %q, want %q", n, got, want)
		}
	}
}

func TestGeneratedResourceOverRealServer(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, b.open(t, nil), withListQuery)
			editor := s.mustAccount("Edith", "edith@test.example", resourceapi.RoleEditor)
			user := s.mustAccount("Ursula", "ursula@test.example", resourceapi.RoleUser)
			other := s.mustAccount("Otto", "otto@test.example", resourceapi.RoleUser)

			// An editor writes an article; a user comments on it.
			var a struct {
				CreateArticle struct{ ID, Title string } `json:"createArticle"`
			}
			s.mustData(editor, `mutation { createArticle(input: {title: "  Mills  ", body: "On mills."}) { id title } }`, nil, &a)
			if a.CreateArticle.Title != "Mills" { // normalized by the rule layer
				t.Fatalf("title = %q, want Mills", a.CreateArticle.Title)
			}
			var c struct {
				CreateComment struct {
					ID       string
					AuthorID string `json:"authorId"`
					Article  struct{ Title string }
				} `json:"createComment"`
			}
			s.mustData(user, `mutation($a: ID!) { createComment(input: {articleId: $a, body: "A fine mill."}) { id authorId article { title } } }`,
				map[string]any{"a": a.CreateArticle.ID}, &c)
			if c.CreateComment.Article.Title != "Mills" || c.CreateComment.AuthorID != itoa(s.ids["ursula@test.example"]) {
				t.Fatalf("comment = %+v", c.CreateComment)
			}
			id := c.CreateComment.ID

			// One record, nested pages, and a page with REST's parameters.
			var got struct {
				Comment struct {
					Body   string
					Author struct{ Name string }
				}
				Article struct {
					Comments struct {
						Items []struct{ ID string }
						Total int
					}
				}
				CommentsPage struct {
					Items              []struct{ Body string }
					Total, Page, Limit int
				} `json:"commentsPage"`
				Missing *struct{ ID string } `json:"missing"`
			}
			s.mustData(other, `query($c: ID!, $a: ID!) {
				comment(id: $c) { body author { name } }
				article(id: $a) { comments { items { id } total } }
				commentsPage(q: "fine", sort: "created_at", order: "desc", limit: 5) { items { body } total page limit }
				missing: comment(id: "999999") { id }
			}`, map[string]any{"c": id, "a": a.CreateArticle.ID}, &got)
			if got.Comment.Body != "A fine mill." || got.Comment.Author.Name != "Ursula" || got.Article.Comments.Total != 1 ||
				len(got.Article.Comments.Items) != 1 || got.CommentsPage.Total != 1 || got.CommentsPage.Limit != 5 || got.CommentsPage.Page != 1 || got.Missing != nil {
				t.Fatalf("read = %+v", got)
			}

			// The same errors as REST's list parameters.
			r := s.post(other, `{ commentsPage(limit: 0, sort: "body") { total } }`, nil)
			wantError(t, r, "BAD_USER_INPUT", "") // GraphQL's name of CodeValidation (errors.go)
			rest := restGet(t, s, other, "/api/comments?limit=0&sort=body")
			if det := r.Errors[0].Extensions["details"]; !sameJSON(det, rest["details"]) {
				t.Fatalf("GraphQL details %v, REST details %v", det, rest["details"])
			}

			// The rules are the Service's: another user may not change the
			// comment, its author may; validation reports each field.
			wantError(t, s.post(other, `mutation($c: ID!) { updateComment(id: $c, input: {body: "Mine now"}) { id } }`, map[string]any{"c": id}), "FORBIDDEN", "")
			wantError(t, s.post(user, `mutation($c: ID!) { updateComment(id: $c, input: {body: ""}) { id } }`, map[string]any{"c": id}), "BAD_USER_INPUT", "")
			var u struct {
				UpdateComment struct{ Body string } `json:"updateComment"`
			}
			s.mustData(user, `mutation($c: ID!) { updateComment(id: $c, input: {body: "A finer mill."}) { body } }`, map[string]any{"c": id}, &u)
			if u.UpdateComment.Body != "A finer mill." {
				t.Fatalf("updated body = %q", u.UpdateComment.Body)
			}
			var del struct{ First, Second bool }
			s.mustData(user, `mutation($c: ID!) { first: deleteComment(id: $c) second: deleteComment(id: $c) }`, map[string]any{"c": id}, &del)
			if !del.First || del.Second {
				t.Fatalf("deletes = %+v, want true then false", del)
			}

			// A generated secret is shown once, by the create.
			var k struct {
				CreateAPIKey struct{ ID, Key string } `json:"createAPIKey"`
				Again        *struct{ Key *string }   `json:"again"`
			}
			s.mustData(user, `mutation { createAPIKey(input: {name: "laptop"}) { id key } }`, nil, &k)
			if !strings.HasPrefix(k.CreateAPIKey.Key, "rak_") {
				t.Fatalf("key = %q, want a new key", k.CreateAPIKey.Key)
			}
			var again struct {
				APIKey struct{ Key *string } `json:"apiKey"`
			}
			s.mustData(user, `query($k: ID!) { apiKey(id: $k) { key } }`, map[string]any{"k": k.CreateAPIKey.ID}, &again)
			if again.APIKey.Key != nil {
				t.Fatalf("key shown again: %q", *again.APIKey.Key)
			}
			// Another user's keys, nested under them, are refused.
			r = s.post(other, `query($u: ID!) { user(id: $u) { apiKeys { total } } }`, map[string]any{"u": itoa(s.ids["ursula@test.example"])})
			wantError(t, r, "FORBIDDEN", "")
		})
	}
}

// restGet reads a REST error response's error object.
func restGet(t *testing.T, s *server, key, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct{ Error map[string]any }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Error
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Every resource has its subscriptions, on the events every committed write
// publishes; each event reaches only the subscribers the rule layer lets
// see its record (Service.EventFor): a user's orders are theirs alone.
func TestGeneratedSubscriptions(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil), withRelay, withListQuery)
	ursula := s.mustAccount("Ursula", "ursula@test.example", resourceapi.RoleUser)
	otto := s.mustAccount("Otto", "otto@test.example", resourceapi.RoleUser)
	u, o := s.dial(t, protocols[0], nil), s.dial(t, protocols[0], nil)
	u.init(map[string]any{"X-API-Key": ursula})
	o.init(map[string]any{"X-API-Key": otto})
	admin := s.dial(t, protocols[0], nil)
	admin.init(map[string]any{"X-API-Key": s.admin})
	for _, c := range []*wsClient{u, o} {
		c.subscribe("orders", "subscription { orderCreated { id userId status items { productId quantity } } }")
	}
	admin.subscribe("gone", "subscription { productDeleted { id name } }")
	waitFor(t, "three subscribers", func() bool {
		return s.hub.Subscribers("orders.created") == 2 && s.hub.Subscribers("products.deleted") == 1
	})

	var p struct {
		CreateProduct struct{ ID string } `json:"createProduct"`
	}
	s.mustData(s.admin, `mutation { createProduct(input: {name: "Millstone", priceCents: 1200}) { id } }`, nil, &p)
	order := func(email string) string {
		var d struct {
			CreateOrder struct{ ID string } `json:"createOrder"`
		}
		s.mustData(s.admin, `mutation($u: ID!, $p: ID!) { createOrder(input: {userId: $u, items: [{productId: $p, quantity: 2}]}) { id } }`,
			map[string]any{"u": itoa(s.ids[email]), "p": p.CreateProduct.ID}, &d)
		return d.CreateOrder.ID
	}
	first := order("ursula@test.example")
	second := order("otto@test.example")
	// Otto's first event is his own order: Ursula's, committed before it,
	// never reached him.
	for c, want := range map[*wsClient]string{u: first, o: second} {
		m := c.next()
		if !strings.Contains(string(m.Payload), `"id":"`+want+`"`) || !strings.Contains(string(m.Payload), `"quantity":2`) {
			t.Fatalf("event %s, want order %s", m.Payload, want)
		}
	}
	var del struct {
		DeleteOrder, DeleteProduct bool
	}
	s.mustData(s.admin, `mutation($o: ID!, $o2: ID!) { a: deleteOrder(id: $o) b: deleteOrder(id: $o2) }`, map[string]any{"o": first, "o2": second}, nil)
	s.mustData(s.admin, `mutation($p: ID!) { deleteProduct(id: $p) }`, map[string]any{"p": p.CreateProduct.ID}, &del)
	if m := admin.next(); !strings.Contains(string(m.Payload), `"name":"Millstone"`) {
		t.Fatalf("productDeleted event %s", m.Payload)
	}
}

// The schema served at /graphql/schema.graphql is one valid document: the
// specification's first, then what the declarations add to it.
func TestServedSchemaHasEveryResource(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	r := s.send(http.MethodGet, "/graphql/schema.graphql", "", nil)
	text := string(r.raw)
	if _, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: text}); err != nil {
		t.Fatalf("served schema: %v", err)
	}
	def, ext := strings.Index(text, "type Query {"), strings.Index(text, "extend type Query {")
	if def < 0 || ext < def || !strings.Contains(text, "type Comment {") {
		t.Fatalf("served schema: the specification's Query at %d, its extension at %d; want the definition first", def, ext)
	}
}
