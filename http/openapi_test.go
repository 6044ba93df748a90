package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// everyResource lists every resource declaration of the domain, served or
// not yet, so the generator is checked against all of them.
var everyResource = []*resourceapi.Resource{
	resourceapi.Users, resourceapi.APIKeys, resourceapi.OAuthClients, resourceapi.Products, resourceapi.Reviews,
	resourceapi.Orders, resourceapi.Articles, resourceapi.Comments, resourceapi.Posts,
}

// TestOpenAPIDocument checks that the served document is valid OpenAPI 3.1
// (kin-openapi's validation, examples and patterns included), is served as
// a cacheable asset, and describes every declared resource.
func TestOpenAPIDocument(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now))
	r := c.anonymous().get("/api/openapi.json")
	r.mustStatus(t, http.StatusOK)
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if r.Header.Get("ETag") == "" || r.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("ETag = %q, Cache-Control = %q; want a tag and no-cache", r.Header.Get("ETag"), r.Header.Get("Cache-Control"))
	}
	c.anonymous().get("/api/openapi.json", "If-None-Match", r.Header.Get("ETag")).mustStatus(t, http.StatusNotModified)
	writeForCI(t, "served.json", r.body)

	if !bytes.Equal(r.body, c.contract.doc) {
		t.Error("the served document is not the one the tests check exchanges against")
	}
	ct, err := loadContract(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if got := ct.doc.OpenAPI; got != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", got)
	}
	for _, res := range resourceapi.Declared() {
		for _, p := range []string{"/" + res.Path, "/" + res.Path + "/{id}"} {
			if ct.doc.Paths.Value(p) == nil {
				t.Errorf("no path %s for %s", p, res.Name)
			}
		}
	}
	for _, name := range []string{"apiKey", "bearer", "basic"} {
		if ct.doc.Components.SecuritySchemes[name] == nil {
			t.Errorf("no security scheme %s", name)
		}
	}
}

// TestOpenAPIEveryDeclaration generates the document of a server of every
// resource the domain declares, served yet or not, with OAuth mounted, and
// validates it: a declaration the generator cannot describe fails here
// before it is served.
func TestOpenAPIEveryDeclaration(t *testing.T) {
	b, err := rhttp.OpenAPIOf(everyResource...)
	if err != nil {
		t.Fatal(err)
	}
	writeForCI(t, "every-resource.json", b)
	ct, err := parseContract(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range everyResource {
		var name string
		for _, w := range strings.Fields(res.Singular) {
			name += strings.ToUpper(w[:1]) + w[1:]
		}
		for _, suffix := range []string{"", "Selection", "Create", "Replace", "Patch", "List"} {
			if ct.doc.Components.Schemas[name+suffix] == nil {
				t.Errorf("no schema %s%s for %s", name, suffix, res.Name)
			}
		}
	}
	if ct.doc.Components.SecuritySchemes["oauth2"] == nil || ct.doc.Paths.Value("/oauth/token") == nil {
		t.Error("OAuth is mounted, but the document has no oauth2 scheme or /oauth/token")
	}
	if ct.doc.Paths.Value("/graphql") == nil {
		t.Error("GraphQL is mounted, but the document has no /graphql")
	}
}

// TestOpenAPIRoutes holds the document and the router to each other: every
// route the server registers is described, and every described path and
// method is served, as the router's own Allow says.
func TestOpenAPIRoutes(t *testing.T) {
	store := mustSQLite(t, newClock().Now)
	cfg := testConfig(t, store)
	// Stand-ins: the document describes what is mounted.
	cfg.OAuth, cfg.GraphQL = http.NotFoundHandler(), http.NotFoundHandler()
	cfg.EventStream = &rhttp.EventStreamConfig{} // GET /api/events, described too
	srv := rhttp.NewServer(cfg)
	c := mustServer(t, store, func(c *rhttp.Config) { c.OAuth, c.GraphQL, c.EventStream = cfg.OAuth, cfg.GraphQL, cfg.EventStream })
	ct, err := c.contract.get()
	if err != nil {
		t.Fatal(err)
	}
	doc := ct.doc

	// Route table -> document.
	for _, pattern := range srv.RoutePatterns() {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok { // a subtree handed to another package
			path, method = pattern, ""
		}
		path = strings.TrimSuffix(path, "{$}") // GET /{$}: the path / alone
		found := false
		for _, p := range doc.Paths.InMatchingOrder() {
			item := doc.Paths.Value(p)
			for _, base := range serverURLs(doc, item) {
				// A path handed to another package (method "") is covered
				// by the document's paths at or under it.
				if base+p != path && !(method == "" && (strings.HasPrefix(base+p, path) || base+p == strings.TrimSuffix(path, "/"))) {
					continue
				}
				found = method == "" || item.GetOperation(method) != nil
				if method == "GET" && item.Head == nil {
					t.Errorf("%s: no HEAD in the document", pattern)
				}
				if item.Options == nil && method != "" {
					t.Errorf("%s: no OPTIONS in the document", pattern)
				}
			}
		}
		if !found {
			t.Errorf("route %s is not in the document", pattern)
		}
	}

	// Document -> server: OPTIONS on every documented path, under every
	// server, answers with exactly the documented methods.
	for _, p := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(p)
		want := strings.Join(documentedMethods(item), ", ")
		for _, base := range serverURLs(doc, item) {
			if strings.HasPrefix(base+p, "/oauth/") || strings.HasPrefix(base+p, "/.well-known/") || base+p == "/graphql" {
				continue // the stand-ins answer nothing; TestOpenAPIOAuth covers OAuth
			}
			r := c.do("OPTIONS", concretePath(base+p), "")
			r.mustStatus(t, http.StatusOK)
			if got := r.Header.Get("Allow"); got != want {
				t.Errorf("OPTIONS %s: Allow = %q, the document has %q", base+p, got, want)
			}
		}
	}

	// Declarations -> server: each declared resource's paths, derived here
	// independently of the route table, are documented with the methods
	// the router has.
	for _, res := range resourceapi.Declared() {
		paths := []string{"/" + res.Path}
		if parent := res.ParentResource(); parent != nil {
			paths = append(paths, "/"+parent.Path+"/{parent}/"+res.Path)
		}
		for _, coll := range paths {
			for _, p := range []string{coll, coll + "/{id}"} {
				item := doc.Paths.Value(p)
				if item == nil {
					t.Errorf("%s: path %s is not in the document", res.Name, p)
					continue
				}
				for _, prefix := range []string{"/api", "/api/v1", "/api/v2"} {
					if !slices.Contains(serverURLs(doc, item), prefix) {
						t.Errorf("%s: %s is not served under %s", res.Name, p, prefix)
					}
					r := c.do("OPTIONS", concretePath(prefix+p), "")
					if got, want := r.Header.Get("Allow"), strings.Join(documentedMethods(item), ", "); got != want {
						t.Errorf("OPTIONS %s: Allow = %q, the document has %q", prefix+p, got, want)
					}
				}
			}
		}
	}
}

// TestOpenAPIExamples creates a record of every declared resource from its
// documented example, through every documented create path, so that the
// examples stay valid requests (the contract check sees each exchange).
func TestOpenAPIExamples(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now))
	ct, err := c.contract.get()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resourceapi.Declared() {
		item := ct.doc.Paths.Value("/" + res.Path)
		if item == nil || item.Post == nil {
			t.Errorf("%s: no POST /%s", res.Name, res.Path)
			continue
		}
		ex := item.Post.RequestBody.Value.Content.Get("application/json").Example
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		r := c.post("/api/"+res.Path, string(b))
		r.mustStatus(t, http.StatusCreated)
	}
	if err := ct.doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatal(err)
	}
}

// writeForCI writes a document into $RESOURCEAPI_OPENAPI_DIR, when it is
// set, for .ci/run to hand to a second validator (web/validate).
func writeForCI(t *testing.T, name string, doc []byte) {
	t.Helper()
	dir := os.Getenv("RESOURCEAPI_OPENAPI_DIR")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), doc, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPILimits: the declared limits of fields (ranges, lengths, allowed
// values) are in the document, where a client's own validation can use them.
func TestOpenAPILimits(t *testing.T) {
	c := mustServer(t, mustSQLite(t, newClock().Now))
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Minimum   *int64 `json:"minimum"`
					Maximum   *int64 `json:"maximum"`
					MinLength *int   `json:"minLength"`
					MaxLength *int   `json:"maxLength"`
					Enum      []any  `json:"enum"`
					Items     *struct {
						Enum []any `json:"enum"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(c.anonymous().get("/api/openapi.json").body, &doc); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for name, s := range doc.Components.Schemas {
		if p, ok := s.Properties["rating"]; ok && p.Minimum != nil && *p.Minimum == 1 && p.Maximum != nil && *p.Maximum == 5 {
			found["rating 1..5"] = true
		}
		if p, ok := s.Properties["status"]; ok && strings.HasPrefix(name, "Order") && len(p.Enum) == 4 {
			found["order status enum"] = true
		}
		if p, ok := s.Properties["name"]; ok && strings.HasPrefix(name, "User") && p.MaxLength != nil && *p.MaxLength == 100 {
			found["user name length"] = true
		}
		if p, ok := s.Properties["roles"]; ok && p.Items != nil && len(p.Items.Enum) == 3 {
			found["roles enum"] = true
		}
	}
	for _, want := range []string{"rating 1..5", "order status enum", "user name length", "roles enum"} {
		if !found[want] {
			t.Errorf("the document does not show %s", want)
		}
	}
}
