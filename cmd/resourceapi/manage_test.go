package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// runCmd runs the program in-process with args and the environment kv, and
// returns what it printed.
func runCmd(t *testing.T, kv map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, env(kv), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, kv map[string]string, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := runCmd(t, kv, stdin, args...)
	if err != nil {
		t.Fatalf("resourceapi %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

var (
	clientIDLine     = regexp.MustCompile(`(?m)^client_id: (rac_[a-z2-7]+)$`)
	clientSecretLine = regexp.MustCompile(`(?m)^client_secret: (racs_[A-Z2-7]+)$`)
)

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestManage runs every management command on a fresh database of each
// store, in-process.
func TestManage(t *testing.T) {
	dbs := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "m.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
	for name, database := range dbs {
		t.Run(name, func(t *testing.T) {
			kv := map[string]string{"RESOURCEAPI_DATABASE_URL": database(t)}
			mustRun(t, kv, "", "migrate") // the management commands never create a database

			out := mustRun(t, kv, "a long passphrase\n", "user", "create", "--email", "ann@example.com", "--name", "Ann",
				"--role", "editor", "--permission", "orders:write", "--password-stdin")
			if !strings.Contains(out, "ann@example.com") || !strings.Contains(out, "editor") {
				t.Errorf("user create printed %q", out)
			}
			// The rule layer's validation, in the terminal's words.
			_, _, err := runCmd(t, kv, "", "user", "create", "--email", "not an email", "--name", "X")
			if err == nil || !strings.Contains(err.Error(), "email") {
				t.Errorf("user create with a bad email: %v", err)
			}
			_, _, err = runCmd(t, kv, "", "user", "create", "--email", "ann@EXAMPLE.com", "--name", "Twin")
			if err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("user create of a taken email: %v", err)
			}
			if _, _, err := runCmd(t, kv, "", "user", "create", "--name", "X"); err == nil {
				t.Error("user create without --email succeeded")
			} else if _, ok := err.(usageError); !ok {
				t.Errorf("user create without --email: %v, want a usage error", err)
			}

			out = mustRun(t, kv, "", "apikey", "create", "--user", "ANN@example.com", "--name", "ci")
			key := lastLine(out)
			if !resourceapi.LooksLikeAPIKey(key) {
				t.Fatalf("apikey create's last line %q is not a key:\n%s", key, out)
			}
			list := mustRun(t, kv, "", "apikey", "list")
			if !strings.Contains(list, key[:12]) || strings.Contains(list, key) {
				t.Errorf("apikey list shows %q, want the prefix %s and never the key:\n", list, key[:12])
			}
			id := strings.Fields(lastLine(list))[0]
			if _, _, err := runCmd(t, kv, "", "apikey", "list", "--user", "nobody@example.com"); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("apikey list of an unknown user: %v, want not found", err)
			}
			mustRun(t, kv, "", "apikey", "revoke", id)
			if list := mustRun(t, kv, "", "apikey", "list"); strings.Contains(list, key[:12]) {
				t.Errorf("revoked key still listed:\n%s", list)
			}
			if _, _, err := runCmd(t, kv, "", "apikey", "revoke", id); err == nil {
				t.Error("revoking a revoked key succeeded")
			}

			out = mustRun(t, kv, "", "client", "create", "--name", "Reports", "--grant", "client_credentials", "--grant", "authorization_code",
				"--redirect-uri", "https://reports.example.com/cb")
			if !clientIDLine.MatchString(out) || !clientSecretLine.MatchString(out) {
				t.Errorf("client create printed %q, want client_id: and client_secret: lines", out)
			}
			out = mustRun(t, kv, "", "client", "create", "--name", "SPA", "--grant", "authorization_code",
				"--redirect-uri", "http://localhost:5173/cb", "--public")
			if !clientIDLine.MatchString(out) || strings.Contains(out, "client_secret") {
				t.Errorf("public client create printed %q, want client_id: and no secret", out)
			}
			if _, _, err := runCmd(t, kv, "", "client", "create", "--name", "Bad", "--grant", "implicit"); err == nil {
				t.Error("client create with the implicit grant succeeded")
			}
		})
	}
}
