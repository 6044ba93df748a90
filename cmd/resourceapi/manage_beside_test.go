package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestManageBesideServer runs the commands while a server runs on the same
// SQLite file (a separate process, as in production): the server serves
// their writes at once, never stale.
func TestManageBesideServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "beside.db")
	dbEnv := "RESOURCEAPI_DATABASE_URL=" + db
	srv := mustStart(t, dbEnv)
	cli := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{dbEnv}
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("resourceapi %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return string(out)
	}
	get := func(path, key string) (int, []byte) {
		t.Helper()
		resp, err := srv.do("GET", path, "", key)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.Bytes()
	}
	total := func() float64 {
		t.Helper()
		status, body := get("/api/users?q=beside", srv.Key)
		var env struct{ Pagination struct{ Total float64 } }
		if status != http.StatusOK || json.Unmarshal(body, &env) != nil {
			t.Fatalf("list: %d %s", status, body)
		}
		return env.Pagination.Total
	}
	// Read first, so that the server holds the page in its cache.
	if n := total(); n != 0 {
		t.Fatalf("users matching beside = %v before any was created", n)
	}
	cli("pw for beside one\n", "user", "create", "--email", "beside@example.com", "--name", "Beside", "--password-stdin")
	if n := total(); n != 1 {
		t.Fatalf("after the command created a user, the server lists %v, want 1", n)
	}
	key := lastLine(cli("", "apikey", "create", "--user", "beside@example.com"))
	if status, body := get("/api/users?q=beside", key); status != http.StatusOK {
		t.Fatalf("the new key, used at once: %d %s", status, body)
	}
	list := cli("", "apikey", "list", "--user", "beside@example.com")
	id := strings.Fields(lastLine(list))[0]
	cli("", "apikey", "revoke", id)
	if status, _ := get("/api/users?q=beside", key); status != http.StatusForbidden {
		t.Fatalf("the revoked key, used at once: %d, want 403", status)
	}
}
