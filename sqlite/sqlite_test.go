package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/storetest"
)

func mustOpen(t *testing.T, opts sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Migrated(t), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestStore(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store { return mustOpen(t, sqlite.Options{}) })
}

// TestStoreWithoutCache runs the suite with the record cache off, so that a
// cache bug cannot hide a query bug, or the other way round.
func TestStoreWithoutCache(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store {
		return mustOpen(t, sqlite.Options{CacheRecords: -1, Sync: sqlite.SyncNormal})
	})
}

// TestSearchFollowsWrites checks the full-text index, which the writer brings
// up to date once per transaction, against every kind of write: after each
// commit, q finds exactly the current text.
func TestSearchFollowsWrites(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{CacheRecords: -1})
	users := resourceapi.Users
	search := func(q string) int {
		t.Helper()
		lq, err := rhttp.ParseListQuery(users, url.Values{"q": {q}, "status": {"all"}})
		if err != nil {
			t.Fatal(err)
		}
		page, err := db.List(ctx, users, lq)
		if err != nil {
			t.Fatalf("List(q=%s): %v", q, err)
		}
		return page.Total
	}
	check := func(q string, want int) {
		t.Helper()
		if got := search(q); got != want {
			t.Fatalf("q=%s: total = %d, want %d", q, got, want)
		}
	}

	rec, err := db.Create(ctx, users, resourceapi.Record{"name": "Grace Hopper", "email": "grace@navy.mil"})
	if err != nil {
		t.Fatal(err)
	}
	check("hopper", 1)
	if _, err := db.Update(ctx, users, rec.ID(), resourceapi.Record{"name": "Amazing Grace"}, nil); err != nil {
		t.Fatal(err)
	}
	check("hopper", 0)
	check("amazing", 1)
	if _, _, err := db.Replace(ctx, users, rec.ID(), resourceapi.Record{"name": "Ada", "email": "ada@example.com"}, nil); err != nil {
		t.Fatal(err)
	}
	check("navy", 0)
	check("ada@ex", 1)
	// A failed write in a batch is undone by a savepoint; the index must
	// follow the rollback too.
	if _, err := db.Create(ctx, users, resourceapi.Record{"name": "Zebedee", "email": "ADA@example.com"}); resourceapi.ErrorCode(err) != resourceapi.CodeConflict {
		t.Fatalf("duplicate create: %v, want CONFLICT", err)
	}
	check("zebedee", 0)
	if err := db.Delete(ctx, users, rec.ID(), nil); err != nil {
		t.Fatal(err)
	}
	check("ada", 0)
}

// TestOneProcessPerFile checks that a second store on a file that is in use
// fails to open (the cache assumes one writer), and that closing the first
// frees the file.
func TestOneProcessPerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.db")
	ctx := context.Background()
	first, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if second, err := sqlite.Open(ctx, path, sqlite.Options{}); err == nil {
		second.Close()
		t.Fatal("second Open of a file in use succeeded, want an error")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	again.Close()
}

// TestOneServerWhateverThePath opens a second store on a database file that
// a first one serves, through another path to the same file: a hard link, a
// symbolic link, a path through ".." and one through a symbolic link to the
// directory. Each fails at start, as Migrate does; the first one's lock
// survives SQLite closing its own descriptors of the file (another
// connection in the process opened and closed); and once the first store
// has closed, the file opens through any of them. The lock used to be on
// path+".lock", so two servers, one per name, wrote the file at once: it
// was left malformed, with acknowledged writes lost.
func TestOneServerWhateverThePath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "one.db")
	first, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			first.Close()
		}
	}()
	hard, soft := filepath.Join(dir, "hard.db"), filepath.Join(dir, "soft.db")
	if err := os.Link(path, hard); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, soft); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(dir, other); err != nil {
		t.Fatal(err)
	}
	paths := []string{hard, soft, dir + "/x/../one.db", filepath.Join(other, "one.db"), filepath.Join(other, "hard.db")}
	// SQLite's own locks are POSIX locks, which any close of the file by the
	// process releases: the server's lock must not be one of them.
	mustExec(t, path, "SELECT 1")
	for _, p := range paths {
		if second, err := sqlite.Open(ctx, p, sqlite.Options{}); err == nil {
			second.Close()
			t.Errorf("Open(%s) while %s is served succeeded, want an error", p, path)
		} else if !strings.Contains(err.Error(), "in use by another resourceapi process") {
			t.Errorf("Open(%s) while %s is served = %v, want an error saying it is in use", p, path, err)
		}
		if err := sqlite.Migrate(ctx, p); err == nil || !strings.Contains(err.Error(), "in use by another resourceapi process") {
			t.Errorf("Migrate(%s) while %s is served = %v, want an error saying it is in use", p, path, err)
		}
	}
	closed = true
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		db, err := sqlite.Open(ctx, p, sqlite.Options{})
		if err != nil {
			t.Fatalf("Open(%s) once the first store closed: %v", p, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrate checks that Migrate creates the file's directory, and that it
// takes the lock Open takes: it refuses a file a server has open, and no
// server starts on a file while it migrates.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new", "dir", "m.db")
	if err := sqlite.Migrate(ctx, path); err != nil {
		t.Fatalf("Migrate in a directory that does not exist: %v", err)
	}

	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = sqlite.Migrate(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "in use by another resourceapi process") {
		t.Fatalf("Migrate of a file in use = %v, want an error saying it is in use", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var openErr error
	restore := sqlite.SetMigratingHook(func() {
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err == nil {
			db.Close()
		}
		openErr = err
	})
	defer restore()
	if err := sqlite.Migrate(ctx, path); err != nil {
		t.Fatalf("Migrate after the server closed: %v", err)
	}
	if openErr == nil || !strings.Contains(openErr.Error(), "in use by another resourceapi process") {
		t.Fatalf("Open during Migrate = %v, want an error saying the file is in use", openErr)
	}
}

func mustValid(t *testing.T, rec resourceapi.Record, mode resourceapi.WriteMode) resourceapi.Record {
	t.Helper()
	if err := resourceapi.Validate(resourceapi.Users, rec, mode); err != nil {
		t.Fatal(err)
	}
	return rec
}

// mustExec runs statements on the SQLite file at path through a connection
// of its own, as another process would.
func mustExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// TestIDsRunOut checks the one case where Create fails for want of an id:
// no id up to MaxID is free after the sequence. The suite cannot bring the
// sequence there (that takes 2^53 Creates), so the test sets it.
func TestIDsRunOut(t *testing.T) {
	ctx := context.Background()
	users := resourceapi.Users
	path := filepath.Join(t.TempDir(), "ids.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Replace(ctx, users, resourceapi.MaxID, mustValid(t, resourceapi.Record{"name": "Last", "email": "last@example.com"}, resourceapi.ModeReplace), nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustExec(t, path, fmt.Sprintf(`INSERT INTO sequences (resource, last) VALUES ('users', %d)
		ON CONFLICT (resource) DO UPDATE SET last = excluded.last`, resourceapi.MaxID-2))
	db = mustOpenPath(t, path)

	rec, err := db.Create(ctx, users, mustValid(t, resourceapi.Record{"name": "A", "email": "a@example.com"}, resourceapi.ModeCreate))
	if err != nil {
		t.Fatalf("Create with MaxID-1 free: %v", err)
	}
	if got, want := rec.ID(), int64(resourceapi.MaxID-1); got != want {
		t.Fatalf("id = %d, want %d", got, want)
	}
	_, err = db.Create(ctx, users, mustValid(t, resourceapi.Record{"name": "B", "email": "b@example.com"}, resourceapi.ModeCreate))
	if got := resourceapi.ErrorCode(err); got != resourceapi.CodeUnprocessable {
		t.Fatalf("Create with no id left = %v (%s), want %s", err, got, resourceapi.CodeUnprocessable)
	}
	lq, err := rhttp.ParseListQuery(users, url.Values{"status": {"all"}})
	if err != nil {
		t.Fatal(err)
	}
	if page, err := db.List(ctx, users, lq); err != nil || page.Total != 2 {
		t.Fatalf("List = %d users, %v; want 2 (the failed Create wrote nothing)", page.Total, err)
	}
}

// TestSequencesMigration checks that a database made before the sequences
// table goes on assigning ids where AUTOINCREMENT was.
func TestSequencesMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, old, os.DirFS("migrations"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	old.Close()
	// Two POSTs and a PUT of id 7, as the version before assigned them.
	mustExec(t, path,
		`INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ('A', 'a@x.io', 'a@x.io', 0, 0), ('B', 'b@x.io', 'b@x.io', 0, 0)`,
		`INSERT INTO users (id, name, email, email_key, created_at, updated_at) VALUES (7, 'C', 'c@x.io', 'c@x.io', 0, 0)`)

	db := mustOpenPath(t, path)
	rec, err := db.Create(ctx, resourceapi.Users, mustValid(t, resourceapi.Record{"name": "D", "email": "d@x.io"}, resourceapi.ModeCreate))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.ID(), int64(8); got != want {
		t.Fatalf("id of the first Create after the migration = %d, want %d", got, want)
	}
}

func mustOpenPath(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPathWithURICharacters checks that a path holding characters that mean
// something in a URI (# ? %) opens the file of that exact path, the one its
// lock file sits beside.
func TestPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a#b?c%41d")
	path := filepath.Join(dir, "x.db")
	db := mustOpenPath(t, path)
	if err := db.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(dir) {
			t.Errorf("Open created %s beside %s", e.Name(), dir)
		}
	}
}

// TestAccountsFollowOtherProcesses: accounts are cached (authentication costs
// no query for a repeated caller), yet a role's permissions changed by
// another process (an operator's SQL) apply to the next lookup.
func TestAccountsFollowOtherProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "acct.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.Create(ctx, resourceapi.Users, resourceapi.Record{"name": "A", "email": "a@example.com",
		"roles": []string{resourceapi.RoleUser}, "permissions": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	can := func() bool {
		t.Helper()
		acct, err := db.AccountByID(ctx, u.ID())
		if err != nil {
			t.Fatal(err)
		}
		return acct.Caller().Can("orders:write")
	}
	first, cached := can(), can() // the second answer comes from the cache
	if first || cached {
		t.Fatal("a plain user can write orders")
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`UPDATE roles SET permissions = '["orders:write"]' WHERE name = 'user'`); err != nil {
		t.Fatal(err)
	}
	if !can() {
		t.Fatal("after the role changed in another process, the cached account still lacks the permission")
	}
}

// TestRestrictedDelete deletes a product that an order lists, which the
// order's items keep (ON DELETE RESTRICT): CodeConflict, and nothing
// deleted. SQLite reports a RESTRICT action as SQLITE_CONSTRAINT_TRIGGER,
// not SQLITE_CONSTRAINT_FOREIGNKEY, and the store used to let it through as
// an internal error (a 500).
func TestRestrictedDelete(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t, sqlite.Options{})
	create := func(res *resourceapi.Resource, rec resourceapi.Record) int64 {
		t.Helper()
		if err := resourceapi.Validate(res, rec, resourceapi.ModeCreate); err != nil {
			t.Fatal(err)
		}
		out, err := db.Create(ctx, res, rec)
		if err != nil {
			t.Fatalf("create %s: %v", res.Singular, err)
		}
		return out.ID()
	}
	user := create(resourceapi.Users, resourceapi.Record{"name": "Ann", "email": "ann@example.com"})
	product := create(resourceapi.Products, resourceapi.Record{"name": "Engine", "price_cents": int64(100)})
	order := resourceapi.Record{"user_id": user, "items": []resourceapi.Record{{"product_id": product, "quantity": int64(2)}}}
	if err := resourceapi.Validate(resourceapi.Orders, order, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	order["items"].([]resourceapi.Record)[0]["unit_price_cents"] = int64(100)
	order["total_cents"] = int64(200)
	if _, err := db.Create(ctx, resourceapi.Orders, order); err != nil {
		t.Fatalf("create order: %v", err)
	}

	err := db.Delete(ctx, resourceapi.Products, product, nil)
	if got := resourceapi.ErrorCode(err); got != resourceapi.CodeConflict {
		t.Fatalf("Delete(product an order lists) = %v (code %s), want %s", err, got, resourceapi.CodeConflict)
	}
	if _, err := db.Get(ctx, resourceapi.Products, product); err != nil {
		t.Fatalf("Get(product) after a refused delete = %v", err)
	}
}
