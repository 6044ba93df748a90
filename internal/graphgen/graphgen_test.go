package graphgen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/internal/graphgen"
)

func mustGenerate(t *testing.T, resources []*resourceapi.Resource) (graphgen.Output, []byte) {
	t.Helper()
	spec, err := os.ReadFile(filepath.Join("..", "..", "graph", "schema", "schema.graphqls"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := graphgen.Generate(spec, resources)
	if err != nil {
		t.Fatal(err)
	}
	return out, spec
}

// What graph holds is what the declarations make now: run
// `go generate ./graph` when this fails (TestGeneratedCodeIsCurrent, in
// package graph, checks what gqlgen makes of it).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	out, _ := mustGenerate(t, resourceapi.Declared())
	dir := filepath.Join("..", "..", "graph")
	for name, want := range map[string][]byte{
		filepath.Join("schema", "resources.graphqls"): out.Schema,
		"resources_gen.go":                            out.Go,
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("graph/%s is stale: run go generate ./graph", name)
		}
	}
	yml, err := os.ReadFile(filepath.Join(dir, "gqlgen.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := graphgen.ReplaceModels(yml, out.Models)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(yml, want) {
		t.Error("graph/gqlgen.yml is stale: run go generate ./graph")
	}
}

// The generated schema and the specification's make one valid schema in
// which the specification's fields keep their signatures.
func TestSchemaIsValidAndKeepsTheSpecification(t *testing.T) {
	out, spec := mustGenerate(t, resourceapi.Declared())
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(spec)},
		&ast.Source{Name: "resources.graphqls", Input: string(out.Schema)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ typ, field, args string }{
		{"Query", "users", "limit offset"}, {"Query", "user", "id"}, {"Mutation", "createUser", "name email"},
		{"Mutation", "updateUser", "id name email"}, {"Mutation", "deleteUser", "id"},
		{"Mutation", "createPost", "title content authorId"},
	} {
		f := schema.Types[c.typ].Fields.ForName(c.field)
		if f == nil {
			t.Fatalf("%s.%s missing", c.typ, c.field)
		}
		var names []string
		for _, a := range f.Arguments {
			names = append(names, a.Name)
		}
		if got := strings.Join(names, " "); got != c.args {
			t.Errorf("%s.%s(%s), want (%s)", c.typ, c.field, got, c.args)
		}
	}
	for _, name := range []string{"Comment", "Article", "OrderItem", "APIKey", "OAuthClient"} {
		if schema.Types[name] == nil {
			t.Errorf("type %s missing", name)
		}
	}
}
