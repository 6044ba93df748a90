package graph_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/internal/graphgen"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// widgets is a resource that only this test declares: one declaration, and
// nothing else written for it.
func widgets() *resourceapi.Resource {
	return resourceapi.NewResource(resourceapi.Resource{
		Name:     "widgets",
		Singular: "widget",
		Fields: []resourceapi.Field{
			{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true, Sortable: true},
			{Name: "owner_id", Type: resourceapi.TypeInt, References: "users", Sortable: true},
			{Name: "name", Type: resourceapi.TypeString, Required: true, Sortable: true, Searchable: true, Length: &resourceapi.Range{Min: 1, Max: 100}},
			{Name: "color", Type: resourceapi.TypeString, Enum: []string{"red", "blue"}, Default: func() any { return "red" }},
			{Name: "size", Type: resourceapi.TypeInt, Nullable: true, Range: &resourceapi.Range{Min: 1, Max: 10}},
			{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
			{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true, Sortable: true},
		},
		Filters: []resourceapi.Filter{{Param: "color", Kind: resourceapi.FilterEqual, Field: "color", Values: []string{"red", "blue"}}},
		Access: resourceapi.Access{Owner: "owner_id", Guarded: true, Self: []resourceapi.Op{resourceapi.OpDelete},
			Grants: map[string][]resourceapi.Action{resourceapi.RoleUser: {resourceapi.ActionRead, resourceapi.ActionWrite}}},
		Example: func(n int) resourceapi.Record { return resourceapi.Record{"name": "Widget " + itoa(int64(n))} },
	})
}

// TestADeclarationIsEnough is the proof that a resource is declared once: a
// resource declared here, in test code only, is served over REST (routes,
// validation, its filters and search), in the OpenAPI document, with the
// permissions its declaration grants the default roles (which its
// generated migration seeds), its table made by the migration that
// sqlite.GenerateMigration writes for it, and the events of its writes
// (through the store's outbox, the relay and the hub, to whom the rule
// layer lets see them); and over GraphQL, whose schema and resolvers for it
// graphgen writes at development time: the test checks what graphgen makes
// of the declaration, and runs the generic resolvers those generated
// resolvers call, with the request's caller, as a query, the mutations and
// a subscription would.
func TestADeclarationIsEnough(t *testing.T) {
	res := widgets()
	t.Cleanup(resourceapi.Declare(res))

	// Its migration, generated from the declaration, over the released ones.
	released := sqlite.Migrations()
	snap, err := sqlstore.ReadSnapshot(released)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := sqlite.GenerateMigration(snap, resourceapi.Declared())
	if err != nil || !strings.Contains(m.SQL, "CREATE TABLE widgets (") {
		t.Fatalf("GenerateMigration = %v\n%s", err, m.SQL)
	}
	migrations := fstest.MapFS{}
	if err := fs.WalkDir(released, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(released, name)
		migrations[name] = &fstest.MapFile{Data: b}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	file, err := sqlstore.MigrationFileName(migrations, m, sqlite.GoMigrationVersions()...)
	if err != nil {
		t.Fatal(err)
	}
	migrations[file] = &fstest.MapFile{Data: []byte(m.SQL)}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "widgets.db"), sqlite.Options{Sync: sqlite.SyncNormal, Migrations: migrations})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })

	s := mustServer(t, db, withRelay, withListQuery)
	ursula := s.mustAccount("Ursula", "ursula@test.example", resourceapi.RoleUser)
	otto := s.mustAccount("Otto", "otto@test.example", resourceapi.RoleUser)
	nobody := s.mustAccount("Nobody", "nobody@test.example") // no role: no grant
	events, err := resourceapi.Subscribe(t.Context(), s.hub, "widgets.created", 16)
	if err != nil {
		t.Fatal(err)
	}

	// REST: its routes, validation, search and filters, and its rules.
	var created struct {
		ID      int64
		OwnerID int64 `json:"owner_id"`
		Name    string
		Color   string
	}
	if st := rest(t, s, ursula, "POST", "/api/widgets", `{"name": "Sprocket", "size": 3}`, &created); st != http.StatusCreated {
		t.Fatalf("POST /api/widgets = %d", st)
	}
	if created.OwnerID != s.ids["ursula@test.example"] || created.Color != "red" {
		t.Fatalf("created %+v, want Ursula's, red by default", created)
	}
	if st := rest(t, s, ursula, "POST", "/api/widgets", `{"name": "", "size": 11}`, nil); st != http.StatusUnprocessableEntity && st != http.StatusBadRequest {
		t.Fatalf("POST of an invalid widget = %d, want a 4xx", st)
	}
	var list struct{ Data []struct{ Name string } }
	if st := rest(t, s, otto, "GET", "/api/widgets?q=sprock&color=red&sort=name", "", &list); st != http.StatusOK || len(list.Data) != 1 {
		t.Fatalf("GET /api/widgets?q=sprock = %d, %+v", st, list)
	}
	if st := rest(t, s, nobody, "GET", "/api/widgets", "", nil); st != http.StatusForbidden {
		t.Fatalf("GET /api/widgets without the grant = %d, want 403", st)
	}
	if st := rest(t, s, otto, "DELETE", "/api/widgets/"+itoa(created.ID), "", nil); st != http.StatusForbidden {
		t.Fatalf("DELETE of another's widget = %d, want 403", st)
	}

	// OpenAPI describes it.
	var doc struct{ Paths map[string]any }
	if st := rest(t, s, "", "GET", "/api/openapi.json", "", &doc); st != http.StatusOK || doc.Paths["/widgets"] == nil || doc.Paths["/widgets/{id}"] == nil || doc.Paths["/users/{parent}/widgets"] != nil {
		t.Fatalf("OpenAPI paths lack /widgets and /widgets/{id} under the /api servers (status %d)", st)
	}

	// Its events: the create's, with its actor, to whom the rule layer
	// lets see it.
	ev := <-events
	if ev.Resource != "widgets" || ev.Record["name"] != "Sprocket" || ev.Actor != s.ids["ursula@test.example"] {
		t.Fatalf("event %+v, want the create of Sprocket by Ursula", ev)
	}
	ctx := context.Background()
	callerOf := func(key string) *resourceapi.Caller {
		cred, err := rhttp.ParseCredential([]string{key}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.service.Authenticate(ctx, cred)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, ok := s.service.EventFor(callerOf(otto), ev); !ok {
		t.Error("Otto, who may read widgets, does not receive the event")
	}
	if _, ok := s.service.EventFor(callerOf(nobody), ev); ok {
		t.Error("a caller without widgets:read receives the event")
	}

	// GraphQL: what graphgen writes for the declaration, beside the
	// specification's schema...
	spec, err := os.ReadFile(filepath.Join("schema", "schema.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := graphgen.Generate(spec, resourceapi.Declared())
	if err != nil {
		t.Fatal(err)
	}
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(spec)}, &ast.Source{Name: "resources.graphqls", Input: string(out.Schema)})
	if err != nil {
		t.Fatal(err)
	}
	for typ, fields := range map[string][]string{
		"Query":        {"widget", "widgetsPage"},
		"Mutation":     {"createWidget", "updateWidget", "deleteWidget"},
		"Subscription": {"widgetCreated", "widgetUpdated", "widgetDeleted"},
		"Widget":       {"id", "ownerId", "name", "color", "size", "createdAt", "updatedAt", "owner"},
	} {
		for _, f := range fields {
			if schema.Types[typ] == nil || schema.Types[typ].Fields.ForName(f) == nil {
				t.Errorf("generated schema lacks %s.%s", typ, f)
			}
		}
	}
	if args := schema.Types["Query"].Fields.ForName("widgetsPage").Arguments; args.ForName("q") == nil || args.ForName("color") == nil || args.ForName("owner_id") == nil {
		t.Errorf("widgetsPage lacks REST's parameters: %v", args)
	}
	// ...whose resolvers are the generic ones, with the resource,
	for _, call := range []string{
		`r.one(ctx, resWidgets, id)`, `page(ctx, r.resolver, resWidgets, 0, listParams{`, `r.create(ctx, resWidgets, input)`,
		`r.update(ctx, resWidgets, id, input)`, `r.remove(ctx, resWidgets, id)`, `subscribeEach(ctx, r.h, resWidgets, "widgets.created", resWidgetsObject)`,
		`r.reference(ctx, recordIn(obj), resUsers, "owner_id")`,
	} {
		if !strings.Contains(string(out.Go), call) {
			t.Errorf("generated resolvers lack %s", call)
		}
	}
	// ...which serve it, by the Service's rules, as the mutations, the
	// queries and (TestGeneratedSubscriptions) the subscriptions do.
	gen := graph.GenericOf(s.gql)
	as := func(key string) context.Context { return resourceapi.WithCaller(ctx, callerOf(key)) }
	gear, err := gen.Create(as(otto), res, map[string]any{"name": "Gear", "color": "blue"})
	if err != nil || gear["ownerId"] != itoa(s.ids["otto@test.example"]) || gear["color"] != "blue" {
		t.Fatalf("createWidget = %v, %v", gear, err)
	}
	if _, err := gen.Create(as(nobody), res, map[string]any{"name": "Nope"}); resourceapi.ErrorCode(err) != resourceapi.CodeForbidden {
		t.Fatalf("createWidget without the grant: %v, want FORBIDDEN", err)
	}
	if _, err := gen.Update(as(ursula), res, gear["id"].(string), map[string]any{"name": "Mine"}); resourceapi.ErrorCode(err) != resourceapi.CodeForbidden {
		t.Fatalf("updateWidget of another's widget: %v, want FORBIDDEN", err)
	}
	got, err := gen.One(as(ursula), res, gear["id"].(string))
	if err != nil || got["name"] != "Gear" {
		t.Fatalf("widget(id) = %v, %v", got, err)
	}
	pg, err := gen.Page(as(ursula), res, map[string]string{"color": "blue", "sort": "name", "order": "desc"})
	if err != nil || pg["total"] != 1 {
		t.Fatalf("widgetsPage(color: blue) = %v, %v", pg, err)
	}
	if _, err := gen.Page(as(ursula), res, map[string]string{"color": "green"}); resourceapi.ErrorCode(err) != resourceapi.CodeValidation {
		t.Fatalf("widgetsPage(color: green): %v, want REST's validation error", err)
	}
	for _, want := range []bool{true, false} {
		if ok, err := gen.Delete(as(otto), res, gear["id"].(string)); err != nil || *ok != want {
			t.Fatalf("deleteWidget = %v, %v; want %v", ok, err, want)
		}
	}
}

// rest sends a REST request as the holder of key and decodes the JSON
// response into v; it returns the status.
func rest(t *testing.T, s *server, key, method, path, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if v != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return res.StatusCode
}
