package main_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// managementCommands are the commands that work on an existing database,
// with arguments that would succeed on one.
var managementCommands = [][]string{
	{"user", "create", "--email", "ann@example.com", "--name", "Ann"},
	{"user", "list"},
	{"user", "set-password", "admin@localhost"},
	{"user", "grant", "admin@localhost", "--role", "editor"},
	{"user", "revoke", "admin@localhost", "--role", "editor"},
	{"apikey", "create", "--user", "admin@localhost"},
	{"apikey", "list"},
	{"apikey", "revoke", "1"},
	{"client", "create", "--name", "Reports", "--grant", "client_credentials"},
	{"client", "list"},
	{"client", "delete", "rac_aaaaaaaaaaaaaaaaaaaa"},
	{"seed"},
	{"backup", "copy.db"},
}

// TestNoDatabaseByAccident runs every management command from a directory
// where no database is: each refuses, saying where it looked and how to
// point it elsewhere, and creates nothing. Once a database exists, each says
// on stderr which database it used.
func TestNoDatabaseByAccident(t *testing.T) {
	c := newCLI(t)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere", "r.db")
	for _, setting := range []struct {
		env, path, says string
	}{
		{"", filepath.Join(c.dir, "data", "resourceapi.db"), "the default ./data/resourceapi.db"},
		{"RESOURCEAPI_DATABASE_URL=" + elsewhere, elsewhere, "RESOURCEAPI_DATABASE_URL=" + elsewhere},
		{"RESOURCEAPI_DATABASE_URL=sqlite:" + elsewhere, elsewhere, "RESOURCEAPI_DATABASE_URL=sqlite:" + elsewhere},
	} {
		c.env = nil
		if setting.env != "" {
			c.env = []string{setting.env}
		}
		for _, args := range managementCommands {
			errOut := c.fails(1, "a long password\n", args...)
			for _, want := range []string{"no SQLite database at " + setting.path, setting.says, "RESOURCEAPI_DATABASE_URL", "resourceapi migrate"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("%s resourceapi %s: stderr %q, want it to say %q", setting.env, strings.Join(args, " "), errOut, want)
				}
			}
		}
		mustBeEmpty(t, c.dir)
		if _, err := os.Stat(filepath.Dir(elsewhere)); !os.IsNotExist(err) {
			t.Fatalf("%s was created", filepath.Dir(elsewhere))
		}
	}

	// migrate creates the database; the commands then use it and say so.
	c.env = []string{"RESOURCEAPI_DATABASE_URL=" + elsewhere}
	c.must("", "migrate")
	r := c.run("", "user", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "using SQLite "+elsewhere+"\n") {
		t.Errorf("user list on %s: exit %d, stderr %q, want it to name the database", elsewhere, r.code, r.stderr)
	}
	// A relative path is named absolute: the working directory matters.
	c.env = []string{"RESOURCEAPI_DATABASE_URL=rel/r.db"}
	os.MkdirAll(filepath.Join(c.dir, "rel"), 0o755)
	os.Rename(elsewhere, filepath.Join(c.dir, "rel", "r.db"))
	if r := c.run("", "apikey", "list"); r.code != 0 || !strings.Contains(r.stderr, "using SQLite "+filepath.Join(c.dir, "rel", "r.db")+"\n") {
		t.Errorf("apikey list on rel/r.db: exit %d, stderr %q, want the absolute path", r.code, r.stderr)
	}

	t.Run("postgres", func(t *testing.T) {
		db := pgtest.NewDatabase(t)
		c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db}
		r := c.run("", "user", "list")
		u, _ := url.Parse(db)
		want := "using PostgreSQL postgres://" + u.Host + u.Path + "\n"
		if r.code != 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("user list on PostgreSQL: exit %d, stderr %q, want %q", r.code, r.stderr, want)
		}
		if u.User != nil && strings.Contains(r.stderr, u.User.String()) {
			t.Errorf("user list printed the database's credentials: %q", r.stderr)
		}
	})
}

// TestDatabaseURLRefused starts the binary with database URLs of schemes it
// does not serve: every command refuses at start, naming the accepted forms,
// without repeating the URL's password, and creates nothing.
func TestDatabaseURLRefused(t *testing.T) {
	c := newCLI(t)
	for _, u := range []string{
		"postgress://ann:s3cret@db.example.com/api",
		"mysql://ann:s3cret@db.example.com/api",
		"POSTGRES://ann:s3cret@db.example.com/api",
		"redis://:s3cret@127.0.0.1:6379/0",
		"https://ann:s3cret@example.com/api.db",
	} {
		c.env = []string{"RESOURCEAPI_DATABASE_URL=" + u, "RESOURCEAPI_ADDR=127.0.0.1:0"}
		for _, args := range append([][]string{{"serve"}, {"migrate"}}, managementCommands...) {
			errOut := c.fails(1, "", args...)
			scheme, _, _ := strings.Cut(u, "://")
			for _, want := range []string{"RESOURCEAPI_DATABASE_URL", `"` + scheme + `://"`, "postgres://", "sqlite:"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("%s: resourceapi %s: stderr %q, want it to say %q", u, strings.Join(args, " "), errOut, want)
				}
			}
			if strings.Contains(errOut, "s3cret") {
				t.Errorf("%s: resourceapi %s printed the password: %q", u, strings.Join(args, " "), errOut)
			}
		}
	}
	mustBeEmpty(t, c.dir)

	// The accepted forms work.
	for _, u := range []string{"sqlite:a.db", "sqlite://b.db", "sqlite://" + filepath.Join(c.dir, "c.db"), "file:d.db", "file://" + filepath.Join(c.dir, "e.db"), "f.db"} {
		c.env = []string{"RESOURCEAPI_DATABASE_URL=" + u}
		c.must("", "migrate")
	}
	for _, name := range []string{"a.db", "b.db", "c.db", "d.db", "e.db", "f.db"} {
		if _, err := os.Stat(filepath.Join(c.dir, name)); err != nil {
			t.Errorf("migrate did not create %s: %v", name, err)
		}
	}
}
