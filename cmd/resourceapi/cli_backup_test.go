package main_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test reads the copy as SQLite itself does

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestBackupUnderWrites backs up a SQLite database with the binary while a
// server runs on it and four clients write to it: the copy passes
// PRAGMA integrity_check, a server starts on it, and it holds every write
// acknowledged before the backup began.
func TestBackupUnderWrites(t *testing.T) {
	c := newCLI(t)
	db := filepath.Join(t.TempDir(), "live.db")
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	srv := mustStart(t, "RESOURCEAPI_DATABASE_URL="+db)
	c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db}

	var (
		mu    sync.Mutex
		acked []int64 // ids of the products whose creation got a 201
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := range 20_000 {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"name":"Backup %d-%d","description":"%s","price_cents":%d}`, w, i, strings.Repeat("x", 500), i)
				req, _ := http.NewRequest("POST", srv.URL+"/api/products", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Key", srv.Key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				id, err := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("Location"), "/api/products/"), 10, 64)
				if resp.StatusCode != http.StatusCreated || err != nil {
					errs <- fmt.Errorf("POST /api/products: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	ackedSoFar := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), acked...)
	}
	for deadline := time.Now().Add(2 * time.Minute); len(ackedSoFar()) < 500; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged in two minutes", len(ackedSoFar()))
		}
	}
	before := ackedSoFar()
	out := c.must("", "backup", copyPath)
	during := len(ackedSoFar()) - len(before)
	if !strings.Contains(out, "Backed up "+db+" to "+copyPath) {
		t.Errorf("backup printed %q", out)
	}
	t.Logf("%d writes acknowledged before the backup, %d while it ran", len(before), during)

	copyDB, err := sql.Open("sqlite", "file:"+copyPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := copyDB.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the copy = %q, %v; want ok", check, err)
	}
	copyDB.Close()

	restored := mustStart(t, "RESOURCEAPI_DATABASE_URL="+copyPath)
	found := map[int64]bool{}
	for page := 1; ; page++ {
		status, body := request(t, restored, "GET", fmt.Sprintf("/api/products?limit=100&page=%d&fields=id", page), "", withKey(srv.Key))
		if status != http.StatusOK {
			t.Fatalf("GET /api/products on the copy: %d %v", status, body)
		}
		data, _ := body["data"].([]any)
		for _, r := range data {
			found[int64(r.(map[string]any)["id"].(float64))] = true
		}
		if len(data) < 100 {
			break
		}
	}
	missing := 0
	for _, id := range before {
		if !found[id] {
			missing++
		}
	}
	if missing > 0 || len(found) < len(before) {
		t.Fatalf("the copy misses %d of the %d products acknowledged before the backup (it holds %d)", missing, len(before), len(found))
	}
}

// TestBackupRefusals: backup never overwrites a file without --force, never
// writes over the database itself, leaves no partial file, shows progress on
// a terminal only, and on PostgreSQL says to use pg_dump.
func TestBackupRefusals(t *testing.T) {
	c := newCLI(t)
	db := filepath.Join(c.dir, "data", "r.db")
	c.env = []string{"RESOURCEAPI_DATABASE_URL=" + db}
	c.must("", "migrate")
	target := filepath.Join(c.dir, "backup.db")
	os.WriteFile(target, []byte("yesterday's backup"), 0o600)
	if errOut := c.fails(1, "", "backup", "backup.db"); !strings.Contains(errOut, "--force") {
		t.Errorf("backup over a file: %q, want a hint of --force", errOut)
	}
	if b, _ := os.ReadFile(target); string(b) != "yesterday's backup" {
		t.Fatalf("backup without --force changed the file")
	}
	r := c.run("", "backup", "--force", "backup.db")
	if r.code != 0 || strings.ContainsAny(r.stderr, "\r%|") {
		t.Fatalf("backup --force: exit %d, stderr %q, want no progress bar without a terminal", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); !strings.HasPrefix(string(b), "SQLite format 3\x00") {
		t.Fatalf("backup --force did not replace the file with a database")
	}
	if errOut := c.fails(1, "", "backup", "--force", db); !strings.Contains(errOut, "the database itself") {
		t.Errorf("backup over the database: %q", errOut)
	}
	c.fails(1, "", "backup", filepath.Join(c.dir, "no", "such", "dir", "b.db"))
	c.must("", "user", "list") // the database is whole
	entries, _ := filepath.Glob(filepath.Join(c.dir, ".*partial*"))
	if len(entries) > 0 {
		t.Errorf("partial files left: %v", entries)
	}

	if script, err := exec.LookPath("script"); err == nil {
		tty := exec.Command(script, "-qec", c.bin+" backup tty.db", "/dev/null")
		tty.Dir, tty.Env = c.dir, append(os.Environ(), c.env...)
		out, err := tty.CombinedOutput()
		if err != nil || !regexp.MustCompile(`backup\s+\d+% \|`).Match(out) {
			t.Errorf("backup on a terminal: %v, printed %q, want a progress bar", err, out)
		}
	}

	t.Run("postgres", func(t *testing.T) {
		c.env = []string{"RESOURCEAPI_DATABASE_URL=" + pgtest.NewDatabase(t)}
		if errOut := c.fails(1, "", "backup", "pg.db"); !strings.Contains(errOut, "pg_dump") {
			t.Errorf("backup on PostgreSQL: %q, want it to say pg_dump", errOut)
		}
		if _, err := os.Stat(filepath.Join(c.dir, "pg.db")); !os.IsNotExist(err) {
			t.Errorf("backup on PostgreSQL wrote pg.db")
		}
	})
}
