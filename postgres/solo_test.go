package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	rauth "github.com/resourceapi/resourceapi/auth"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// soloInstance is a store opened with Options.Solo, the Service over it
// (API keys authenticate), and the count of the statements it ran.
type soloInstance struct {
	db         *postgres.DB
	svc        *resourceapi.Service
	statements *atomic.Int64
}

func mustOpenSolo(t *testing.T, url string) *soloInstance {
	t.Helper()
	var n atomic.Int64
	db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4, Solo: true,
		OnStatement: func(string) { n.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	hasher := &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}
	auth, err := rauth.New(rauth.Config{Store: db, Hasher: hasher})
	if err != nil {
		t.Fatal(err)
	}
	svc := resourceapi.NewService(db, hasher)
	svc.SetAuthenticator(auth)
	return &soloInstance{db: db, svc: svc, statements: &n}
}

// waitHolding waits, boundedly, until db serves from its cache.
func waitHolding(t *testing.T, db *postgres.DB) {
	t.Helper()
	for range 1000 {
		if db.Holding() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the store never became the solo holder")
}

// getAs reads the user id as the caller whose API key is key, from scratch
// (authentication included), as a request does.
func (s *soloInstance) getAs(t *testing.T, key string, id int64) (resourceapi.Record, error) {
	t.Helper()
	ctx := context.Background()
	c, err := s.svc.Authenticate(ctx, resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key})
	if err != nil {
		return nil, err
	}
	return s.svc.Get(ctx, c, resourceapi.Users, resourceapi.Address{ID: id})
}

// mustAdminKey creates an admin and an API key of theirs.
func (s *soloInstance) mustAdminKey(t *testing.T) (user resourceapi.Record, key string, keyID int64) {
	t.Helper()
	ctx := context.Background()
	sys := resourceapi.SystemCaller()
	user, err := s.svc.Create(ctx, sys, resourceapi.Users, 0, resourceapi.Record{
		"name": "Ann", "email": "ann@example.com", "roles": []string{resourceapi.RoleAdmin}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.svc.Create(ctx, sys, resourceapi.APIKeys, 0, resourceapi.Record{"user_id": user.ID()})
	if err != nil {
		t.Fatal(err)
	}
	return user, k["key"].(string), k.ID()
}

// TestSoloGetCostsNoStatement: the only instance serves a repeated GET,
// authentication by API key included, without a statement.
func TestSoloGetCostsNoStatement(t *testing.T) {
	a := mustOpenSolo(t, pgtest.Migrated(t))
	user, key, _ := a.mustAdminKey(t)
	waitHolding(t, a.db)
	for range 2 { // the key's user, then the user's account
		if _, err := a.getAs(t, key, user.ID()); err != nil {
			t.Fatal(err)
		}
	}
	before := a.statements.Load()
	for range 3 {
		rec, err := a.getAs(t, key, user.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got := rec["name"]; got != "Ann" {
			t.Fatalf("name = %v, want Ann", got)
		}
	}
	if !a.db.Holding() {
		t.Skip("the holder yielded during the test (another process wrote)")
	}
	if got := a.statements.Load() - before; got != 0 {
		t.Errorf("3 authenticated GETs of a cached user ran %d statements, want 0", got)
	}
}

// TestSoloSecondInstance: a second instance on the same database makes the
// first stop serving from its cache before its Open returns, and every
// write of the second is seen by the first's next read, with the first's
// API key refused on its next request once the second revokes it.
func TestSoloSecondInstance(t *testing.T) {
	url := pgtest.Migrated(t)
	a := mustOpenSolo(t, url)
	user, key, keyID := a.mustAdminKey(t)
	waitHolding(t, a.db)
	if _, err := a.getAs(t, key, user.ID()); err != nil {
		t.Fatal(err)
	}
	b := mustOpenSolo(t, url)
	if a.db.Holding() {
		t.Fatal("the first instance still serves from its cache once a second is open")
	}
	ctx := context.Background()
	sys := resourceapi.SystemCaller()
	for i, name := range []string{"B1", "B2", "B3", "B4", "B5"} {
		if _, err := b.svc.Update(ctx, sys, resourceapi.Users, resourceapi.Address{ID: user.ID()}, resourceapi.Record{"name": name}, nil); err != nil {
			t.Fatal(err)
		}
		rec, err := a.getAs(t, key, user.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got := rec["name"]; got != name {
			t.Fatalf("write %d: the first instance read name %v, want %s", i, got, name)
		}
	}
	if err := b.svc.Delete(ctx, sys, resourceapi.APIKeys, resourceapi.Address{ID: keyID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.getAs(t, key, user.ID()); resourceapi.ErrorCode(err) != resourceapi.CodeInvalidToken {
		t.Fatalf("GET with a key the other instance revoked: %v, want %s", err, resourceapi.CodeInvalidToken)
	}
	if a.db.Holding() || b.db.Holding() {
		t.Errorf("holding with two instances registered: first %v, second %v", a.db.Holding(), b.db.Holding())
	}
}

// TestSoloRawWrites: writes made without the store (psql, database/sql)
// wait for the holder to yield, and the holder's next read sees them; a
// key deleted so is refused on the next request.
func TestSoloRawWrites(t *testing.T) {
	url := pgtest.Migrated(t)
	a := mustOpenSolo(t, url)
	raw := mustOpenRaw(t, url)
	user, key, keyID := a.mustAdminKey(t)
	for _, name := range []string{"R1", "R2", "R3"} {
		waitHolding(t, a.db)
		if _, err := a.getAs(t, key, user.ID()); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec("UPDATE users SET name = $1 WHERE id = $2", name, user.ID()); err != nil {
			t.Fatal(err)
		}
		rec, err := a.getAs(t, key, user.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got := rec["name"]; got != name {
			t.Fatalf("after a raw UPDATE: name = %v, want %s", got, name)
		}
	}
	waitHolding(t, a.db)
	if _, err := a.getAs(t, key, user.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("DELETE FROM api_keys WHERE id = $1", keyID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.getAs(t, key, user.ID()); resourceapi.ErrorCode(err) != resourceapi.CodeInvalidToken {
		t.Fatalf("GET with a key deleted by raw SQL: %v, want %s", err, resourceapi.CodeInvalidToken)
	}
}

// TestSoloRegistrationLost: when the holder's registration connection is
// ended, a raw write made at once is still seen by the holder's next read
// (the write waits out the holder's lease), and the store stops serving
// from its cache until it has registered again.
func TestSoloRegistrationLost(t *testing.T) {
	url := pgtest.Migrated(t)
	a := mustOpenSolo(t, url)
	raw := mustOpenRaw(t, url)
	user, key, _ := a.mustAdminKey(t)
	for _, name := range []string{"K1", "K2"} {
		waitHolding(t, a.db)
		if _, err := a.getAs(t, key, user.ID()); err != nil {
			t.Fatal(err)
		}
		var ended int
		err := raw.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'resourceapi solo'`).Scan(&ended)
		if err != nil {
			t.Fatal(err)
		}
		if ended != 1 {
			t.Fatalf("ended %d registration connections, want 1", ended)
		}
		if _, err := raw.Exec("UPDATE users SET name = $1 WHERE id = $2", name, user.ID()); err != nil {
			t.Fatal(err)
		}
		rec, err := a.getAs(t, key, user.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got := rec["name"]; got != name {
			t.Fatalf("after the registration was lost and a raw UPDATE: name = %v, want %s", got, name)
		}
	}
}

// TestSoloReadsAfterAcknowledgedWrites: readers on the holder run
// continuously while writes come from raw SQL, from the holder itself and
// from a second instance that opens and closes (the holder yields and
// becomes the holder again); no read that begins after a write was
// acknowledged returns the value before it. Run it with -race.
func TestSoloReadsAfterAcknowledgedWrites(t *testing.T) {
	url := pgtest.Migrated(t)
	a := mustOpenSolo(t, url)
	raw := mustOpenRaw(t, url)
	ctx := context.Background()
	sys := resourceapi.SystemCaller()
	user, err := a.svc.Create(ctx, sys, resourceapi.Users, 0, resourceapi.Record{"name": "Ann", "email": "ann@example.com", "age": int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	id := user.ID()
	var acked atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				lo := acked.Load()
				rec, err := a.svc.Get(ctx, sys, resourceapi.Users, resourceapi.Address{ID: id})
				if err != nil {
					errs <- err
					return
				}
				if age := rec["age"].(int64); age < lo {
					errs <- fmt.Errorf("read age %d after the write of %d was acknowledged", age, lo)
					return
				}
			}
		}()
	}
	var b *postgres.DB
	var bsvc *resourceapi.Service
	for i := int64(1); i <= 45; i++ {
		switch {
		case i == 16:
			if b, err = postgres.Open(ctx, url, postgres.Options{MaxConns: 2, Solo: true}); err != nil {
				t.Fatal(err)
			}
			bsvc = resourceapi.NewService(b, nil)
		case i == 31:
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b, bsvc = nil, nil
		}
		patch := resourceapi.Record{"age": i}
		switch {
		case bsvc != nil && i%2 == 0:
			_, err = bsvc.Update(ctx, sys, resourceapi.Users, resourceapi.Address{ID: id}, patch, nil)
		case i%3 == 0:
			_, err = raw.Exec("UPDATE users SET age = $1 WHERE id = $2", i, id)
		default:
			_, err = a.svc.Update(ctx, sys, resourceapi.Users, resourceapi.Address{ID: id}, patch, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		acked.Store(i)
		if i%5 == 0 && b == nil {
			waitHolding(t, a.db)
		}
	}
	close(stop)
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestSoloGuardOncePerTransaction: solo_guard runs once per transaction,
// however many guarded statements it makes (two INSERTs and an UPDATE of
// users; before migration 00045 a user's INSERT fired it on users_search
// and twice on row_counts too, from users' triggers),
// and again after a savepoint rolled back undid the first run (migration
// 00040).
func TestSoloGuardOncePerTransaction(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	ctx := context.Background()
	calls := func(tx *sql.Tx) int {
		t.Helper()
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(pg_stat_get_xact_function_calls('solo_guard'::regproc), 0)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	seq := 0
	insert := func(tx *sql.Tx) {
		t.Helper()
		seq++
		email := fmt.Sprintf("guard-%d@example.com", seq)
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (name, email, email_key, created_at, updated_at)
			VALUES ($1, $2, $2, now(), now())`, fmt.Sprintf("Guard %d", seq), email); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
			t.Fatal(err)
		}
		before := calls(tx)
		insert(tx)
		insert(tx)
		if _, err := tx.ExecContext(ctx, "UPDATE users SET name = name || '.' WHERE email LIKE 'guard-%'"); err != nil {
			t.Fatal(err)
		}
		if n := calls(tx) - before; n != 1 {
			t.Errorf("round %d: solo_guard ran %d times in a transaction of two INSERTs and an UPDATE of users, want 1", round, n)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, stmt := range []string{"SET LOCAL track_functions = 'pl'", "SAVEPOINT s"} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	before := calls(tx)
	insert(tx)
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
		t.Fatal(err)
	}
	insert(tx)
	if n := calls(tx) - before; n != 2 {
		t.Errorf("solo_guard ran %d times around a rolled-back savepoint, want 2 (once before it, once after)", n)
	}
}

// TestWriteTriggersCallWithoutQueries: the trigger functions every write
// runs (the solo guard's first run, the event's id in commit order) call
// the functions they run for their effect (advisory locks, set_config,
// setval) in assignments that PL/pgSQL evaluates itself, not in PERFORM,
// a query through SPI with an executor of its own each (migration 00042).
func TestWriteTriggersCallWithoutQueries(t *testing.T) {
	db := mustAdmin(t, pgtest.Migrated(t))
	for _, fn := range []string{"solo_guard", "events_in_commit_order"} {
		var src string
		if err := db.QueryRowContext(context.Background(), "SELECT prosrc FROM pg_proc WHERE proname = $1", fn).Scan(&src); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		if strings.Contains(src, "PERFORM") {
			t.Errorf("%s runs PERFORM:\n%s", fn, src)
		}
	}
}

// TestSoloDerivedTables: row_counts and the search tables carry no
// solo_guard (migration 00045), because only triggers of guarded tables
// write them, inside a statement whose own guard passed. It checks that
// from the catalog (every trigger that runs a function writing one of
// them, or calling such a function, is on a guarded table), that an
// instance still becomes the holder (solo.go exempts them), and that a raw
// insert's count and search copy reach the holder's next lists.
func TestSoloDerivedTables(t *testing.T) {
	url := pgtest.Migrated(t)
	raw := mustOpenRaw(t, url)
	ctx := context.Background()
	derived := []string{"row_counts"}
	for _, res := range resourceapi.Declared() {
		if len(sqlstore.SearchColumns(res)) > 0 {
			derived = append(derived, postgres.SearchTable(res.Name))
		}
	}
	for _, table := range derived {
		var guarded bool
		if err := raw.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = 'solo_guard')", table).Scan(&guarded); err != nil {
			t.Fatal(err)
		}
		if guarded {
			t.Errorf("%s has a solo_guard: only triggers write it, after the guard of their own table", table)
		}
	}

	// The functions that write a derived table, and those that call them.
	src := map[string]string{}
	rows, err := raw.Query(`SELECT p.proname, p.prosrc FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace
		AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			t.Fatal(err)
		}
		src[name] = body
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	writers := map[string]bool{}
	for name, body := range src {
		for _, table := range derived {
			if regexp.MustCompile(`(?i)\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE)\s+` + table + `\b`).MatchString(body) {
				writers[name] = true
			}
		}
	}
	if !writers[postgres.RowsFunction("users")] || !writers["row_counts_trigger"] {
		t.Fatalf("functions found writing %v: %v; want users_rows and row_counts_trigger among them", derived, writers)
	}
	for grew := true; grew; {
		grew = false
		for name, body := range src {
			for w := range writers {
				if !writers[name] && regexp.MustCompile(`\b`+w+`\s*\(`).MatchString(body) {
					writers[name], grew = true, true
				}
			}
		}
	}
	rows, err = raw.Query(`SELECT t.tgrelid::regclass::text, t.tgname, p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE NOT t.tgisinternal AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.tgrelid AND g.tgname = 'solo_guard')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, trigger, fn string
		if err := rows.Scan(&table, &trigger, &fn); err != nil {
			t.Fatal(err)
		}
		if writers[fn] {
			t.Errorf("trigger %s of %s, a table without solo_guard, runs %s, which writes a table without one", trigger, table, fn)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()

	a := mustOpenSolo(t, url)
	list := func(search string) int {
		t.Helper()
		page, err := a.db.List(ctx, resourceapi.Users, resourceapi.ListQuery{Limit: 10, Sort: "id", Search: search})
		if err != nil {
			t.Fatal(err)
		}
		return page.Total
	}
	for i, name := range []string{"Derived One", "Derived Two"} {
		waitHolding(t, a.db)
		all, found := list(""), list("derived")
		if found != i {
			t.Fatalf("q=derived found %d users, want %d", found, i)
		}
		if _, err := raw.Exec(`INSERT INTO users (name, email, email_key, created_at, updated_at) VALUES ($1, $2, $2, now(), now())`,
			name, fmt.Sprintf("derived-%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
		if got, want := list(""), all+1; got != want {
			t.Errorf("after a raw insert: %d users counted, want %d", got, want)
		}
		if got, want := list("DERIVED"), i+1; got != want {
			t.Errorf("after a raw insert: q=DERIVED found %d users, want %d", got, want)
		}
	}
}
