package main_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstAdminAfterBind starts the binary on a fresh database with its
// port taken: it fails without creating the first admin or printing a
// password or key (on SQLite, without creating the database), so that the
// start that does serve creates the admin and prints them.
func TestFirstAdminAfterBind(t *testing.T) {
	for name, database := range stores() {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			db := database(t)
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db, "RESOURCEAPI_ADDR=" + taken.Addr().String()}
			errOut := c.fails(1, "", "serve")
			if !strings.Contains(errOut, "RESOURCEAPI_ADDR") || !strings.Contains(errOut, "address already in use") {
				t.Errorf("serve on a taken port: stderr %q, want it to name RESOURCEAPI_ADDR and the cause", errOut)
			}
			for _, secret := range []string{"password:", "API key:", "first admin"} {
				if strings.Contains(errOut, secret) {
					t.Errorf("serve on a taken port printed %q:\n%s", secret, errOut)
				}
			}
			if name == "sqlite" {
				if _, err := os.Stat(filepath.Dir(db)); !os.IsNotExist(err) {
					t.Errorf("serve on a taken port created %s", filepath.Dir(db))
				}
			}
			srv := mustStart(t, "RESOURCEAPI_DATABASE_URL="+db)
			if srv.Key == "" || !strings.Contains(srv.stderr.String(), "Created the first admin user") {
				t.Fatalf("the first start that serves did not create the admin:\n%s", srv.stderr)
			}
			if status, _ := request(t, srv, "GET", "/api/users", "", withKey(srv.Key)); status != http.StatusOK {
				t.Errorf("the printed key: GET /api/users = %d, want 200", status)
			}
		})
	}
}

// TestAdminSettingsRefused starts the binary with a first admin the rules
// refuse: it fails, naming the variable and the rule, and leaves no
// database behind.
func TestAdminSettingsRefused(t *testing.T) {
	c := newCLI(t)
	db := filepath.Join(t.TempDir(), "data", "r.db")
	for setting, want := range map[string]string{
		"RESOURCEAPI_ADMIN_PASSWORD=short":     "RESOURCEAPI_ADMIN_PASSWORD must be 8 to 1024 characters",
		"RESOURCEAPI_ADMIN_EMAIL=not an email": "RESOURCEAPI_ADMIN_EMAIL must be a valid email address",
	} {
		c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db, "RESOURCEAPI_ADDR=127.0.0.1:0", setting}
		if errOut := c.fails(1, "", "serve"); !strings.Contains(errOut, want) {
			t.Errorf("serve with %s: stderr %q, want %q", setting, errOut, want)
		}
		if _, err := os.Stat(filepath.Dir(db)); !os.IsNotExist(err) {
			t.Fatalf("serve with %s created %s", setting, filepath.Dir(db))
		}
	}
}

// TestAdminSettingsIgnored restarts the binary on a database that has its
// admin with other RESOURCEAPI_ADMIN_* values: they change nothing, and the
// log says so, with the command that does; the same values say nothing.
func TestAdminSettingsIgnored(t *testing.T) {
	for name, database := range stores() {
		t.Run(name, func(t *testing.T) {
			dbEnv := "RESOURCEAPI_DATABASE_URL=" + database(t)
			restart := func(env ...string) string {
				t.Helper()
				srv := mustStart(t, append([]string{dbEnv}, env...)...)
				// The password the admin was created with still works.
				if status, _ := request(t, srv, "GET", "/api/users/1", "", withPassword("admin@localhost", "correct horse battery")); status != http.StatusOK {
					t.Errorf("the first admin's password: GET /api/users/1 = %d, want 200", status)
				}
				return srv.stop(t)
			}
			if log := restart(); !strings.Contains(log, "Created the first admin") {
				t.Fatalf("the first start did not create the admin:\n%s", log)
			}
			if log := restart(); strings.Contains(log, "ignored") {
				t.Errorf("a restart with the same settings logged:\n%s", log)
			}
			log := restart("RESOURCEAPI_ADMIN_PASSWORD=a new password")
			for _, want := range []string{"RESOURCEAPI_ADMIN_PASSWORD is ignored", "resourceapi user set-password admin@localhost"} {
				if !strings.Contains(log, want) {
					t.Errorf("a restart with another password did not log %q:\n%s", want, log)
				}
			}
			log = restart("RESOURCEAPI_ADMIN_EMAIL=boss@example.com")
			for _, want := range []string{"RESOURCEAPI_ADMIN_EMAIL is ignored", "resourceapi user grant <email> --role admin"} {
				if !strings.Contains(log, want) {
					t.Errorf("a restart with another email did not log %q:\n%s", want, log)
				}
			}
			if strings.Contains(log, "Created the first admin") {
				t.Errorf("a restart with another email created an admin:\n%s", log)
			}
		})
	}
}
