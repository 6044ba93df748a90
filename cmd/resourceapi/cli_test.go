package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// cli runs the built binary as a person does: in a working directory, with
// an environment of its own.
type cli struct {
	t   *testing.T
	bin string
	dir string   // the working directory
	env []string // KEY=value, added to PATH
}

// newCLI returns a cli for the test's binary in a new empty working
// directory, with env.
func newCLI(t *testing.T, env ...string) *cli {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return &cli{t: t, bin: bin, dir: t.TempDir(), env: env}
}

// run runs the binary with args and stdin, and returns what it did.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	// A command that should end but serves instead fails the test rather
	// than hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, c.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("resourceapi %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// must runs the binary and fails the test unless it exits 0; it returns
// the standard output.
func (c *cli) must(stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != 0 {
		c.t.Fatalf("resourceapi %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs the binary and fails the test unless it exits with code; it
// returns the standard error.
func (c *cli) fails(code int, stdin string, args ...string) string {
	c.t.Helper()
	r := c.run(stdin, args...)
	if r.code != code {
		c.t.Fatalf("resourceapi %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r.stderr
}

// mustBeEmpty fails the test when dir holds anything.
func mustBeEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("%s was created in %s", e.Name(), dir)
	}
}

// stores returns, for each store, a function that gives a test a database
// URL of its own: a SQLite path that does not exist yet, or a new
// PostgreSQL database (skipped when none is configured).
func stores() map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "resourceapi.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
}

// request sends a request to the server with a credential set by auth
// and returns the status and the decoded JSON body (nil when there is
// none).
func request(t *testing.T, p *process, method, path, body string, auth func(*http.Request)) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		auth(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

func withKey(key string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-API-Key", key) }
}

func withPassword(email, password string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(email, password) }
}

// total returns the pagination total of a list response.
func total(t *testing.T, body map[string]any) int {
	t.Helper()
	pg, ok := body["pagination"].(map[string]any)
	if !ok {
		t.Fatalf("no pagination in %v", body)
	}
	return int(pg["total"].(float64))
}
