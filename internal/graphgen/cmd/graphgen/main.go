// Command graphgen writes what package graph serves of the declared
// resources beyond the specification's schema (graphgen.Generate): run in
// graph/ by its go:generate line, before gqlgen, it reads
// schema/schema.graphqls and writes schema/resources.graphqls,
// resources_gen.go and the generated models of gqlgen.yml.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/internal/graphgen"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "graphgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	spec, err := os.ReadFile(filepath.Join(dir, "schema", "schema.graphqls"))
	if err != nil {
		return err
	}
	out, err := graphgen.Generate(spec, resourceapi.Declared())
	if err != nil {
		return err
	}
	yml, err := os.ReadFile(filepath.Join(dir, "gqlgen.yml"))
	if err != nil {
		return err
	}
	yml, err = graphgen.ReplaceModels(yml, out.Models)
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{
		filepath.Join("schema", "resources.graphqls"): out.Schema,
		"resources_gen.go":                            out.Go,
		"gqlgen.yml":                                  yml,
	} {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
