package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlite/sqlitetest"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestCacheMonotonicReads runs writers (updates and creates) and readers
// (Get and List) together on a store with the cache on, and checks that
// reads never go back in time: once a read has returned a version of a
// record, or a write has been acknowledged, no read that starts later returns
// an older version. The store's clock steps on every reading, and one
// goroutine runs every write, so updated_at orders the versions of a record.
// The work runs in rounds that start together: bursts of writes that commit
// in one batch are what exposed the race of issue 5 (entries dropped after
// the commit, by each caller).
func TestCacheMonotonicReads(t *testing.T) {
	const (
		rounds  = 16
		seeded  = 4 // the records updated and read
		writers = 8
		writes  = 40 // per writer and round; every tenth is a create
		readers = 8
		reads   = 400 // per reader and round
		maxID   = seeded + rounds*writers*writes/10
	)
	clock := storetest.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Millisecond)
	db := mustOpen(t, sqlite.Options{Sync: sqlite.SyncNormal, Now: clock.Now})
	ctx := context.Background()
	users := resourceapi.Users
	for i := range seeded {
		mustCreateUser(t, db, fmt.Sprintf("Seed %d", i), fmt.Sprintf("seed%d@example.com", i))
	}
	lq, err := rhttp.ParseListQuery(users, url.Values{"limit": {"10"}, "status": {"all"}})
	if err != nil {
		t.Fatal(err)
	}

	// seen[id] is the newest version (updated_at in ms) that a finished read
	// returned or a write acknowledged.
	var seen [maxID + 1]atomic.Int64
	observe := func(rec resourceapi.Record) {
		id, v := rec.ID(), version(rec)
		for {
			old := seen[id].Load()
			if v <= old || seen[id].CompareAndSwap(old, v) {
				return
			}
		}
	}
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			t.Errorf(format, args...)
		}
	}

	writer := func(w, round int) {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
		for n := range writes {
			if failed.Load() {
				return
			}
			var out resourceapi.Record
			var err error
			if n%10 == 9 {
				rec := resourceapi.Record{"name": "New", "email": fmt.Sprintf("new%d-%d-%d@example.com", round, w, n)}
				if err := resourceapi.Validate(users, rec, resourceapi.ModeCreate); err != nil {
					fail("validate: %v", err)
					return
				}
				if out, err = db.Create(ctx, users, rec); err != nil {
					fail("Create: %v", err)
					return
				}
			} else {
				id := 1 + rng.Int64N(seeded)
				patch := resourceapi.Record{"name": fmt.Sprintf("Writer %d op %d", w, n)}
				if out, err = db.Update(ctx, users, id, patch, nil); err != nil {
					fail("Update(%d): %v", id, err)
					return
				}
			}
			observe(out)
			// The writer's own read sees its acknowledged write.
			got, err := db.Get(ctx, users, out.ID())
			if err != nil {
				fail("Get(%d) after a write: %v", out.ID(), err)
				return
			}
			if version(got) < version(out) {
				fail("Get(%d) after an acknowledged write returned version %d, older than the write's %d", out.ID(), version(got), version(out))
				return
			}
		}
	}
	reader := func(r, round int) {
		rng := rand.New(rand.NewPCG(uint64(r), uint64(round)+1000))
		for range reads {
			if failed.Load() {
				return
			}
			var before [seeded + 1]int64
			for id := range before {
				before[id] = seen[id].Load()
			}
			var recs []resourceapi.Record
			what := "List"
			if rng.IntN(2) == 0 {
				id := 1 + rng.Int64N(seeded)
				what = fmt.Sprintf("Get(%d)", id)
				rec, err := db.Get(ctx, users, id)
				if err != nil {
					fail("%s: %v", what, err)
					return
				}
				recs = []resourceapi.Record{rec}
			} else {
				page, err := db.List(ctx, users, lq)
				if err != nil {
					fail("List: %v", err)
					return
				}
				recs = page.Records[:seeded] // sorted by id
			}
			for _, rec := range recs {
				if v, id := version(rec), rec.ID(); v < before[id] {
					fail("%s returned record %d at version %d, older than version %d seen before the read began", what, id, v, before[id])
					return
				}
			}
			for _, rec := range recs {
				observe(rec)
			}
		}
	}
	for round := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			wg.Go(func() { <-start; writer(w, round) })
		}
		for r := range readers {
			wg.Go(func() { <-start; reader(r, round) })
		}
		close(start)
		wg.Wait()
	}
}

func version(rec resourceapi.Record) int64 { return rec["updated_at"].(time.Time).UnixMilli() }

func mustCreateUser(t *testing.T, db *sqlite.DB, name, email string) resourceapi.Record {
	t.Helper()
	rec := resourceapi.Record{"name": name, "email": email}
	if err := resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate); err != nil {
		t.Fatal(err)
	}
	out, err := db.Create(context.Background(), resourceapi.Users, rec)
	if err != nil {
		t.Fatalf("Create(%s): %v", email, err)
	}
	return out
}

// TestForeignWritesVisible writes the database file behind the store's back,
// the way the sqlite3 shell or another command would, and checks that the
// store's next reads show the change although it had the record and the page
// cached: through another connection in this process, through another
// process, and followed by one of the store's own writes (whose transaction
// is the first to notice).
func TestForeignWritesVisible(t *testing.T) {
	writers := []struct {
		name  string
		write func(t *testing.T, path, name string)
	}{
		{"Connection", foreignUpdate},
		{"Process", func(t *testing.T, path, name string) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestForeignWriteHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SQLITE_FOREIGN_WRITE="+path, "SQLITE_FOREIGN_NAME="+name)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child process: %v\n%s", err, out)
			}
		}},
	}
	for _, w := range writers {
		for _, ownWrite := range []bool{false, true} {
			name := w.name
			if ownWrite {
				name += "ThenOwnWrite"
			}
			t.Run(name, func(t *testing.T) {
				path := sqlitetest.Migrated(t)
				db, err := sqlite.Open(context.Background(), path, sqlite.Options{Sync: sqlite.SyncNormal})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				for i := range 5 {
					mustCreateUser(t, db, fmt.Sprintf("User %d", i+1), fmt.Sprintf("user%d@example.com", i+1))
				}
				mustName(t, db, 3, "User 3") // cached now
				mustName(t, db, 3, "User 3")

				w.write(t, path, "Changed Elsewhere")
				if ownWrite {
					if _, err := db.Update(context.Background(), resourceapi.Users, 5, resourceapi.Record{"name": "Own"}, nil); err != nil {
						t.Fatal(err)
					}
				}
				mustName(t, db, 3, "Changed Elsewhere")
			})
		}
	}
}

// mustName checks the name of record id through Get, and through List (both
// twice, so that the second read may come from the cache).
func mustName(t *testing.T, db *sqlite.DB, id int64, want string) {
	t.Helper()
	ctx := context.Background()
	lq, err := rhttp.ParseListQuery(resourceapi.Users, url.Values{"sort": {"id"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rec, err := db.Get(ctx, resourceapi.Users, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec["name"]; got != want {
			t.Fatalf("Get(%d) name = %q, want %q", id, got, want)
		}
		page, err := db.List(ctx, resourceapi.Users, lq)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(page.Records, func(r resourceapi.Record) bool { return r.ID() == id })
		if i < 0 {
			t.Fatalf("List: record %d missing", id)
		}
		if got := page.Records[i]["name"]; got != want {
			t.Fatalf("List: record %d name = %q, want %q", id, got, want)
		}
	}
}

// foreignUpdate renames user 3 through a database/sql connection of its own,
// as the sqlite3 shell would.
func foreignUpdate(t *testing.T, path, name string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec("UPDATE users SET name = ? WHERE id = 3", name)
	if err != nil {
		t.Fatalf("foreign UPDATE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("foreign UPDATE changed %d rows, want 1", n)
	}
}

// TestForeignWriteHelper is TestForeignWritesVisible's child process.
func TestForeignWriteHelper(t *testing.T) {
	path := os.Getenv("SQLITE_FOREIGN_WRITE")
	if path == "" {
		t.Skip("run by TestForeignWritesVisible")
	}
	foreignUpdate(t, path, os.Getenv("SQLITE_FOREIGN_NAME"))
}
