package graph_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The generated code is what gqlgen makes of the schema and gqlgen.yml now:
// the test copies the module to a temporary directory, regenerates there,
// and compares. Run `go generate ./graph` when it fails.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating takes a while; skipped with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The module's Go files, go.mod and go.sum, and the graph package's
	// schema and configuration: what gqlgen loads.
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		keep := strings.HasSuffix(path, ".go") || rel == "go.mod" || rel == "go.sum" ||
			strings.HasPrefix(rel, filepath.Join("graph", "schema")) || rel == filepath.Join("graph", "gqlgen.yml") ||
			strings.HasPrefix(rel, filepath.Join("graph", "graphiql"))
		if !keep {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "generate", "./graph")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go generate: %v\n%s", err, out)
	}
	for _, name := range []string{"generated.go", "models_gen.go"} {
		want, err := os.ReadFile(filepath.Join(dir, "graph", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("graph/%s is stale: run go generate ./graph", name)
		}
	}
}
