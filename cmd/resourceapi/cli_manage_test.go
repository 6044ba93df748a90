package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestManageCommands runs the management commands of the binary beside a
// server, on each store, and checks their effect over HTTP: user list
// (--role, --deleted, --json), set-password, grant and revoke, API keys
// named by email, client list and delete. People read emails and RFC 3339
// times; scripts read --json.
func TestManageCommands(t *testing.T) {
	for name, database := range stores() {
		t.Run(name, func(t *testing.T) {
			dbEnv := "RESOURCEAPI_DATABASE_URL=" + database(t)
			srv := mustStart(t, dbEnv)
			c := newCLI(t, dbEnv)
			admin := withKey(srv.Key)

			c.must("ann's first password\n", "user", "create", "--email", "ann@example.com", "--name", "Ann Example",
				"--role", "editor", "--password-stdin")
			out := c.must("bob's password\n", "user", "create", "--email", "bob@example.com", "--name", "Bob Example", "--password-stdin")
			if !strings.Contains(out, "bob@example.com") || regexp.MustCompile(`\d`).MatchString(out) {
				t.Errorf("user create printed %q, want the email and no internal id", out)
			}

			// user list: a table by email, with RFC 3339 times.
			rows := tableRows(t, c.must("", "user", "list"), "EMAIL", "NAME", "ROLES", "PERMISSIONS", "CREATED")
			if got := column(rows, 0); !slicesEqual(got, []string{"admin@localhost", "ann@example.com", "bob@example.com"}) {
				t.Errorf("user list emails = %v", got)
			}
			for _, r := range rows {
				if _, err := time.Parse(time.RFC3339, r[len(r)-1]); err != nil {
					t.Errorf("user list CREATED %q is not RFC 3339", r[len(r)-1])
				}
			}
			if got := column(tableRows(t, c.must("", "user", "list", "--role", "editor"), "EMAIL"), 0); !slicesEqual(got, []string{"ann@example.com"}) {
				t.Errorf("user list --role editor = %v, want ann", got)
			}
			users := listJSON(t, c.must("", "user", "list", "--json"))
			bob := users[2]
			if bob["email"] != "bob@example.com" || bob["deleted"] != false || fmt.Sprint(bob["roles"]) != "[user]" {
				t.Fatalf("user list --json: %v", bob)
			}
			if _, err := time.Parse(time.RFC3339, bob["created_at"].(string)); err != nil {
				t.Errorf("user list --json created_at: %v", err)
			}
			bobID := int64(bob["id"].(float64))
			annID := int64(users[1]["id"].(float64))

			// set-password: the new password signs in at once, the old one
			// no longer does.
			if out := c.must("ann's second password\n", "user", "set-password", "ANN@example.com"); !strings.Contains(out, "ann@example.com") {
				t.Errorf("user set-password printed %q", out)
			}
			annPath := fmt.Sprintf("/api/users/%d", annID)
			if status, _ := request(t, srv, "GET", annPath, "", withPassword("ann@example.com", "ann's second password")); status != http.StatusOK {
				t.Errorf("the new password: %d, want 200", status)
			}
			if status, body := request(t, srv, "GET", annPath, "", withPassword("ann@example.com", "ann's first password")); status != http.StatusForbidden || !strings.Contains(fmt.Sprint(body), "INVALID_TOKEN") {
				t.Errorf("the old password: %d %v, want 403 INVALID_TOKEN", status, body)
			}
			if errOut := c.fails(1, "short\n", "user", "set-password", "ann@example.com"); !strings.Contains(errOut, "password") || !strings.Contains(errOut, "8 to 1024") {
				t.Errorf("a short password: %q, want the rule", errOut)
			}
			c.fails(1, "whatever it is\n", "user", "set-password", "nobody@example.com")

			// grant and revoke, felt by the server on the next request.
			bobWrites := func() int {
				t.Helper()
				status, _ := request(t, srv, "POST", "/api/products", `{"name":"Difference Engine","price_cents":100}`,
					withPassword("bob@example.com", "bob's password"))
				return status
			}
			steps := []struct {
				args []string
				want int
			}{
				{nil, http.StatusForbidden},
				{[]string{"grant", "bob@example.com", "--permission", "products:write"}, http.StatusCreated},
				{[]string{"revoke", "bob@example.com", "--permission", "products:write"}, http.StatusForbidden},
				{[]string{"grant", "bob@example.com", "--role", "editor"}, http.StatusCreated},
				{[]string{"revoke", "bob@example.com", "--role", "editor"}, http.StatusForbidden},
			}
			for _, s := range steps {
				if s.args != nil {
					c.must("", append([]string{"user"}, s.args...)...)
				}
				if got := bobWrites(); got != s.want {
					t.Fatalf("after user %v, bob's POST /api/products = %d, want %d", s.args, got, s.want)
				}
			}
			if errOut := c.fails(1, "", "user", "revoke", "admin@localhost", "--role", "admin"); !strings.Contains(errOut, "last admin") {
				t.Errorf("revoking the last admin: %q", errOut)
			}
			if errOut := c.fails(1, "", "user", "grant", "bob@example.com", "--permission", "everything"); !strings.Contains(errOut, "permissions") {
				t.Errorf("granting a malformed permission: %q", errOut)
			}
			c.fails(2, "", "user", "grant", "bob@example.com")

			// A soft-deleted user is listed with --deleted only.
			if status, body := request(t, srv, "PATCH", fmt.Sprintf("/api/users/%d", bobID), `{"deleted":true}`, admin); status != http.StatusOK {
				t.Fatalf("delete bob: %d %v", status, body)
			}
			if got := column(tableRows(t, c.must("", "user", "list"), "EMAIL"), 0); !slicesEqual(got, []string{"admin@localhost", "ann@example.com"}) {
				t.Errorf("user list after bob's deletion = %v", got)
			}
			if got := column(tableRows(t, c.must("", "user", "list", "--deleted"), "EMAIL"), 0); !slicesEqual(got, []string{"bob@example.com"}) {
				t.Errorf("user list --deleted = %v, want bob", got)
			}

			// API keys are shown with their user's email.
			out = c.must("", "apikey", "create", "--user", "ann@example.com", "--name", "ci")
			if !strings.Contains(out, "for ann@example.com") {
				t.Errorf("apikey create printed %q", out)
			}
			keys := tableRows(t, c.must("", "apikey", "list", "--user", "ann@example.com"), "ID", "USER", "PREFIX", "NAME", "CREATED")
			if len(keys) != 1 || keys[0][1] != "ann@example.com" || keys[0][3] != "ci" {
				t.Errorf("apikey list --user ann = %v", keys)
			}
			if _, err := time.Parse(time.RFC3339, keys[0][4]); err != nil {
				t.Errorf("apikey list CREATED: %v", err)
			}
			if js := listJSON(t, c.must("", "apikey", "list", "--json")); len(js) != 2 || js[1]["user"] != "ann@example.com" || js[1]["name"] != "ci" {
				t.Errorf("apikey list --json = %v", js)
			}

			// --expires-in sets the key's expiry, said in the output.
			out = c.must("", "apikey", "create", "--user", "ann@example.com", "--expires-in", "720h")
			if !regexp.MustCompile(`It expires at \d{4}-\d\d-\d\dT[\d:]+Z\.`).MatchString(out) {
				t.Errorf("apikey create --expires-in printed %q", out)
			}
			c.fails(2, "", "apikey", "create", "--user", "ann@example.com", "--expires-in", "-1h")

			// Clients: listed, and deleted for good.
			out = c.must("", "client", "create", "--name", "Reports", "--grant", "client_credentials")
			id := clientIDLine.FindStringSubmatch(out)
			secret := clientSecretLine.FindStringSubmatch(out)
			if id == nil || secret == nil {
				t.Fatalf("client create printed %q", out)
			}
			token := func() int {
				t.Helper()
				resp, err := http.PostForm(srv.URL+"/oauth/token", url.Values{"grant_type": {"client_credentials"},
					"client_id": {id[1]}, "client_secret": {secret[1]}})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if got := token(); got != http.StatusOK {
				t.Fatalf("client credentials grant: %d", got)
			}
			clients := tableRows(t, c.must("", "client", "list"), "CLIENT_ID", "NAME", "TYPE", "GRANTS", "REDIRECT_URIS", "CREATED")
			if len(clients) != 1 || clients[0][0] != id[1] || clients[0][1] != "Reports" || clients[0][2] != "confidential" || clients[0][3] != "client_credentials" {
				t.Errorf("client list = %v", clients)
			}
			if js := listJSON(t, c.must("", "client", "list", "--json")); len(js) != 1 || js[0]["client_id"] != id[1] || js[0]["public"] != false {
				t.Errorf("client list --json = %v", js)
			}
			c.must("", "client", "delete", id[1])
			if got := token(); got != http.StatusUnauthorized {
				t.Errorf("the deleted client's grant: %d, want 401", got)
			}
			if rows := tableRows(t, c.must("", "client", "list"), "CLIENT_ID"); len(rows) != 0 {
				t.Errorf("client list after delete = %v", rows)
			}
			if errOut := c.fails(1, "", "client", "delete", id[1]); !strings.Contains(errOut, "not found") {
				t.Errorf("deleting a deleted client: %q", errOut)
			}
		})
	}
}

var (
	clientIDLine     = regexp.MustCompile(`(?m)^client_id: (rac_[a-z2-7]+)$`)
	clientSecretLine = regexp.MustCompile(`(?m)^client_secret: (racs_[A-Z2-7]+)$`)
)

// tableRows checks the header of a table a list command printed and
// returns its rows, split on runs of two spaces or more.
func tableRows(t *testing.T, out string, header ...string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	split := regexp.MustCompile(`\s{2,}`)
	if got := split.Split(strings.TrimSpace(lines[0]), -1); !slicesEqual(got[:min(len(header), len(got))], header) {
		t.Fatalf("table header %q, want %q", lines[0], header)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, split.Split(strings.TrimSpace(l), -1))
	}
	return rows
}

func column(rows [][]string, i int) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[i])
	}
	return out
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func listJSON(t *testing.T, out string) []map[string]any {
	t.Helper()
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("--json printed %q: %v", out, err)
	}
	return v
}

// TestSeed fills a new database with the sample through the binary, beside
// a server, on each store: the server lists what seed says it wrote, a
// sample user signs in with the password seed printed, and a second seed
// is refused and writes nothing. Without a terminal there is no progress
// bar; on a terminal (script(1) gives one) there is.
func TestSeed(t *testing.T) {
	for name, database := range stores() {
		t.Run(name, func(t *testing.T) {
			dbEnv := "RESOURCEAPI_DATABASE_URL=" + database(t)
			srv := mustStart(t, dbEnv)
			c := newCLI(t, dbEnv)
			r := c.run("", "seed")
			if r.code != 0 {
				t.Fatalf("seed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if strings.Count(r.stderr, "\n") != 1 || strings.ContainsAny(r.stderr, "\r%|") {
				t.Errorf("seed without a terminal wrote %q to stderr, want only the database it used", r.stderr)
			}
			counts := regexp.MustCompile(`(\d+) (user|post|product|review|order|article|comment)s?\b`).FindAllStringSubmatch(r.stdout, -1)
			if len(counts) != 7 {
				t.Fatalf("seed printed %q, want the count of each resource", r.stdout)
			}
			admin := withKey(srv.Key)
			for _, m := range counts {
				want, _ := strconv.Atoi(m[1])
				if m[2] == "user" {
					want++ // the first admin
				}
				status, body := request(t, srv, "GET", "/api/"+m[2]+"s?limit=1", "", admin)
				if status != http.StatusOK || total(t, body) != want || want < 2 {
					t.Errorf("GET /api/%ss: %d, total %v, want %d", m[2], status, body["pagination"], want)
				}
			}
			pw := regexp.MustCompile(`signs in with the password (\S+) \(shown once\)`).FindStringSubmatch(r.stdout)
			if pw == nil {
				t.Fatalf("seed printed no password: %q", r.stdout)
			}
			if status, _ := request(t, srv, "GET", "/api/posts", "", withPassword("grace.hopper@example.com", pw[1])); status != http.StatusOK {
				t.Errorf("a sample user with the printed password: %d, want 200", status)
			}
			if errOut := c.fails(1, "", "seed"); !strings.Contains(errOut, "empty database only") || !strings.Contains(errOut, "11 posts") {
				t.Errorf("a second seed: %q", errOut)
			}
			if _, body := request(t, srv, "GET", "/api/posts?limit=1", "", admin); total(t, body) != 11 {
				t.Errorf("a refused seed wrote posts: %v", body["pagination"])
			}
			if name != "sqlite" {
				return
			}
			script, err := exec.LookPath("script")
			if err != nil {
				t.Skip("no script(1) to run seed on a terminal")
			}
			db := filepath.Join(t.TempDir(), "tty.db")
			c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db}
			c.must("", "migrate")
			tty := exec.Command(script, "-qec", c.bin+" seed", "/dev/null")
			tty.Env = append(os.Environ(), c.env...)
			out, err := tty.CombinedOutput()
			if err != nil || !regexp.MustCompile(`seed\s+\d+% \|`).Match(out) || !strings.Contains(string(out), "Seeded 8 users") {
				t.Errorf("seed on a terminal: %v, printed %q, want a progress bar", err, out)
			}
		})
	}
}
