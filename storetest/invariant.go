package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

func admin(name, email string) resourceapi.Record {
	u := user(name, email)
	u["roles"] = []string{resourceapi.RoleAdmin}
	return u
}

// demotion is a write that makes an admin stop counting as one. prepare runs
// on the test's goroutine and returns the write, which may run on any.
type demotion struct {
	name    string
	prepare func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error
}

func (d demotion) write(t *testing.T, s resourceapi.Store, rec resourceapi.Record) error {
	return d.prepare(t, s, rec)()
}

var demotions = []demotion{
	{"UpdateRoles", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		return update(t, s, rec.ID(), resourceapi.Record{"roles": []string{"user"}})
	}},
	{"UpdateRolesEmpty", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		return update(t, s, rec.ID(), resourceapi.Record{"roles": []string{}})
	}},
	{"UpdateRolesAndName", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		return update(t, s, rec.ID(), resourceapi.Record{"name": "Changed", "roles": []string{"editor"}})
	}},
	{"UpdateDeleted", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		return update(t, s, rec.ID(), resourceapi.Record{"deleted": true})
	}},
	{"ReplaceRoles", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		in := user("Changed", rec["email"].(string))
		in["roles"] = []string{"editor", "user"}
		return replace(t, s, rec.ID(), in)
	}},
	{"ReplaceDeleted", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		in := user("Changed", rec["email"].(string))
		in["deleted"] = true
		return replace(t, s, rec.ID(), in)
	}},
	{"Delete", func(t *testing.T, s resourceapi.Store, rec resourceapi.Record) func() error {
		return func() error { return s.Delete(timeout(t), users, rec.ID(), nil) }
	}},
}

// update validates patch and returns an Update of record id with it.
func update(t *testing.T, s resourceapi.Store, id int64, patch resourceapi.Record) func() error {
	t.Helper()
	patch = mustValid(t, patch, resourceapi.ModePatch)
	return func() error {
		_, err := s.Update(timeout(t), users, id, patch, nil)
		return err
	}
}

// replace validates rec and returns a Replace of record id with it.
func replace(t *testing.T, s resourceapi.Store, id int64, rec resourceapi.Record) func() error {
	t.Helper()
	rec = mustValid(t, rec, resourceapi.ModeReplace)
	return func() error {
		_, _, err := s.Replace(timeout(t), users, id, rec, nil)
		return err
	}
}

// mustRetainError fails unless err is the Retain invariant's error.
func mustRetainError(tb testing.TB, err error, what string) {
	tb.Helper()
	mustCode(tb, err, resourceapi.CodeUnprocessable, what)
	if got, want := resourceapi.ErrorOf(err).Message, users.Retain.Message; got != want {
		tb.Fatalf("%s error message = %q, want %q", what, got, want)
	}
}

// mustAdmins fails unless the active admins are exactly want, in id order.
func mustAdmins(tb testing.TB, s resourceapi.Store, want ...int64) {
	tb.Helper()
	page := mustList(tb, s, "role", resourceapi.RoleAdmin, "limit", "100")
	if got := ids(page.Records); !slices.Equal(got, want) || page.Total != len(want) {
		tb.Fatalf("active admins = %v (total %d), want %v", got, page.Total, want)
	}
}

func testRetain(t *testing.T, open opener) {
	t.Run("LastAdmin", func(t *testing.T) {
		for _, d := range demotions {
			t.Run(d.name, func(t *testing.T) {
				s := open(t)
				a := mustCreate(t, s, admin("A", "a@example.com"))
				u := mustCreate(t, s, user("U", "u@example.com"))
				err := d.write(t, s, a)
				mustRetainError(t, err, d.name+" of the last admin")
				mustUnchanged(t, s, a, d.name+" of the last admin")
				mustUnchanged(t, s, u, d.name+" of the last admin")
				mustAdmins(t, s, a.ID())
				// The store is still usable after the refusal.
				mustUpdate(t, s, a.ID(), resourceapi.Record{"name": "Still admin"})
			})
		}
	})

	t.Run("AllowedOnLastAdmin", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, admin("A", "a@example.com"))
		mustUpdate(t, s, a.ID(), resourceapi.Record{"name": "A2", "age": int64(50)})
		mustUpdate(t, s, a.ID(), resourceapi.Record{"roles": []string{"editor", "admin"}})
		mustUpdate(t, s, a.ID(), resourceapi.Record{"deleted": false})
		mustReplace(t, s, a.ID(), user("A3", "a@example.com")) // roles kept
		in := user("A4", "a4@example.com")
		in["roles"] = []string{"admin"}
		mustReplace(t, s, a.ID(), in)
		mustAdmins(t, s, a.ID())
		// Writes on other users do not touch the invariant.
		u := mustCreate(t, s, user("U", "u@example.com"))
		mustUpdate(t, s, u.ID(), resourceapi.Record{"deleted": true})
		mustDelete(t, s, u.ID())
	})

	t.Run("TwoAdmins", func(t *testing.T) {
		for _, d := range demotions {
			t.Run(d.name, func(t *testing.T) {
				s := open(t)
				a := mustCreate(t, s, admin("A", "a@example.com"))
				b := mustCreate(t, s, admin("B", "b@example.com"))
				if err := d.write(t, s, a); err != nil {
					t.Fatalf("%s of one of two admins error = %v, want nil", d.name, err)
				}
				mustAdmins(t, s, b.ID())
				err := d.write(t, s, b)
				mustRetainError(t, err, d.name+" of the remaining admin")
				mustUnchanged(t, s, b, d.name+" of the remaining admin")
			})
		}
	})

	t.Run("SoftDeletedAdminDoesNotCount", func(t *testing.T) {
		for _, d := range demotions {
			t.Run(d.name, func(t *testing.T) {
				s := open(t)
				a := mustCreate(t, s, admin("A", "a@example.com"))
				in := admin("C", "c@example.com")
				in["deleted"] = true
				c := mustCreate(t, s, in)
				mustAdmins(t, s, a.ID())
				err := d.write(t, s, a)
				mustRetainError(t, err, d.name+" of the last active admin beside a soft-deleted one")
				mustUnchanged(t, s, a, "a refused "+d.name)
				mustUpdate(t, s, c.ID(), resourceapi.Record{"deleted": false})
				if err := d.write(t, s, a); err != nil {
					t.Fatalf("%s after restoring a second admin error = %v, want nil", d.name, err)
				}
				mustAdmins(t, s, c.ID())
			})
		}
	})

	t.Run("NoActiveAdminToLose", func(t *testing.T) {
		// With no active admin there is nothing to retain: writes that do not
		// remove an active admin proceed (an empty store must be usable).
		s := open(t)
		in := admin("C", "c@example.com")
		in["deleted"] = true
		c := mustCreate(t, s, in)
		u := mustCreate(t, s, user("U", "u@example.com"))
		mustUpdate(t, s, u.ID(), resourceapi.Record{"name": "U2"})
		mustUpdate(t, s, c.ID(), resourceapi.Record{"roles": []string{"user"}})
		mustDelete(t, s, c.ID())
		mustDelete(t, s, u.ID())
		mustAdmins(t, s)
	})
}

func testAtomicity(t *testing.T, open opener) {
	t.Run("ConflictingCreateLeavesNoRow", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		in := user("Ghost", "A@EXAMPLE.COM")
		in["roles"], in["age"] = []string{"admin"}, int64(3)
		_, err := s.Create(timeout(t), users, mustValid(t, in, resourceapi.ModeCreate))
		mustCode(t, err, resourceapi.CodeConflict, "conflicting Create")
		mustListIDs(t, s, []string{"status", "all"}, []int64{a.ID()}, 0)
		mustListIDs(t, s, []string{"status", "all", "q", "ghost"}, nil, 0)
		mustAdmins(t, s)
	})

	t.Run("ConflictingUpdateChangesNoField", func(t *testing.T) {
		s := open(t)
		mustCreate(t, s, user("A", "a@example.com"))
		b := mustCreate(t, s, user("B", "b@example.com"))
		patch := resourceapi.Record{"name": "Changed", "age": int64(9), "deleted": true, "email": "A@example.com"}
		_, err := s.Update(timeout(t), users, b.ID(), mustValid(t, patch, resourceapi.ModePatch), nil)
		mustCode(t, err, resourceapi.CodeConflict, "conflicting Update")
		mustUnchanged(t, s, b, "a conflicting Update")
	})

	t.Run("ConflictingReplaceChangesNoField", func(t *testing.T) {
		s := open(t)
		mustCreate(t, s, user("A", "a@example.com"))
		in := user("B", "b@example.com")
		in["age"] = int64(4)
		b := mustCreate(t, s, in)
		rep := user("Changed", "a@EXAMPLE.com")
		rep["roles"] = []string{"editor"}
		_, _, err := s.Replace(timeout(t), users, b.ID(), mustValid(t, rep, resourceapi.ModeReplace), nil)
		mustCode(t, err, resourceapi.CodeConflict, "conflicting Replace")
		mustUnchanged(t, s, b, "a conflicting Replace")
	})

	t.Run("FailuresReleaseTheStore", func(t *testing.T) {
		// A failed write must end its transaction: a store that leaks one
		// (holding a lock or a connection) stalls or fails the writes after it.
		s := open(t)
		a := mustCreate(t, s, admin("A", "a@example.com"))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		for i := range 30 {
			switch i % 5 {
			case 0:
				_, err := s.Create(ctx, users, mustValid(t, user("X", "a@example.com"), resourceapi.ModeCreate))
				mustCode(t, err, resourceapi.CodeConflict, "conflicting Create")
			case 1:
				_, err := s.Update(ctx, users, a.ID(), mustValid(t, resourceapi.Record{"deleted": true}, resourceapi.ModePatch), nil)
				mustRetainError(t, err, "soft-deleting the last admin")
			case 2:
				_, _, err := s.Replace(ctx, users, a.ID(), mustValid(t, user("X", "x@example.com"), resourceapi.ModeReplace),
					func(resourceapi.Record) error { return errPrecondition })
				mustConditionError(t, err, errPrecondition, "Replace")
			case 3:
				_, err := s.Update(ctx, users, a.ID()+99, mustValid(t, resourceapi.Record{"name": "X"}, resourceapi.ModePatch), nil)
				mustCode(t, err, resourceapi.CodeNotFound, "Update of an unknown id")
			case 4:
				mustCode(t, s.Delete(ctx, users, a.ID(), nil), resourceapi.CodeUnprocessable, "Delete of the last admin")
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("30 failing writes took over 30s")
		}
		mustCreate(t, s, user("B", "b@example.com"))
		mustUpdate(t, s, a.ID(), resourceapi.Record{"name": "A2"})
	})
}

func testConcurrency(t *testing.T, open opener) {
	t.Run("Creates", func(t *testing.T) {
		s := open(t)
		const rounds, writers, readers = 2, 50, 10
		var created []resourceapi.Record
		for round := range rounds {
			var (
				mu   sync.Mutex
				wg   sync.WaitGroup
				gate = make(chan struct{})
			)
			q := mustQuery(t, "status", "all", "limit", "100")
			for i := range writers {
				email := fmt.Sprintf("c%d-%d@example.com", round, i)
				in := mustValid(t, user("C", email), resourceapi.ModeCreate)
				wg.Go(func() {
					<-gate
					rec, err := s.Create(timeout(t), users, in)
					if err != nil {
						t.Errorf("concurrent Create(%s) error = %v, want nil", email, err)
						return
					}
					if rec["email"] != email {
						t.Errorf("concurrent Create(%s) returned email %v", email, rec["email"])
					}
					mu.Lock()
					created = append(created, rec)
					mu.Unlock()
				})
			}
			for range readers {
				wg.Go(func() {
					<-gate
					for range 5 {
						if _, err := s.List(timeout(t), users, q); err != nil {
							t.Errorf("List during concurrent creates error = %v, want nil", err)
							return
						}
					}
				})
			}
			close(gate)
			wg.Wait()
		}
		if t.Failed() {
			t.FailNow()
		}
		seen := make(map[int64]bool)
		for _, rec := range created {
			if seen[rec.ID()] {
				t.Fatalf("id %d was handed out twice", rec.ID())
			}
			seen[rec.ID()] = true
		}
		if got, want := mustTotal(t, s), rounds*writers; got != want {
			t.Fatalf("total = %d, want %d", got, want)
		}
		for _, rec := range created {
			mustSame(t, mustGet(t, s, rec.ID()), rec, "Get after concurrent Create")
		}
	})

	t.Run("UpdatesOfOneRecord", func(t *testing.T) {
		s := open(t)
		u := mustCreate(t, s, user("U", "u@example.com"))
		const n = 50
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range n {
			patch := mustValid(t, resourceapi.Record{"name": "n" + strconv.Itoa(i), "age": int64(i)}, resourceapi.ModePatch)
			wg.Go(func() {
				<-gate
				rec, err := s.Update(timeout(t), users, u.ID(), patch, nil)
				if err != nil {
					t.Errorf("concurrent Update error = %v, want nil", err)
					return
				}
				if rec["name"] != patch["name"] || rec["age"] != patch["age"] {
					t.Errorf("concurrent Update returned name %v, age %v; want %v, %v", rec["name"], rec["age"], patch["name"], patch["age"])
				}
			})
		}
		close(gate)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		got := mustGet(t, s, u.ID())
		age, _ := got["age"].(int64)
		if want := "n" + strconv.FormatInt(age, 10); got["name"] != want {
			t.Fatalf("after concurrent updates name = %v, age = %v; want the name and age of one update (%q)", got["name"], got["age"], want)
		}
	})

	t.Run("ConditionalUpdatesOneWins", func(t *testing.T) {
		// The Condition is how If-Match prevents lost updates: it must see the
		// record as the write will change it, so of concurrent writers that all
		// expect the same version exactly one wins.
		s := open(t)
		u := mustCreate(t, s, user("v0", "u@example.com"))
		const n = 20
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			gate    = make(chan struct{})
		)
		for i := range n {
			name := "v" + strconv.Itoa(i+1)
			patch := mustValid(t, resourceapi.Record{"name": name}, resourceapi.ModePatch)
			wg.Go(func() {
				<-gate
				cond := func(cur resourceapi.Record) error {
					if cur == nil || cur["name"] != "v0" {
						return errPrecondition
					}
					return nil
				}
				_, err := s.Update(timeout(t), users, u.ID(), patch, cond)
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, name)
					mu.Unlock()
				case !errors.Is(err, errPrecondition):
					t.Errorf("conditional Update error = %v, want nil or the Condition's error", err)
				}
			})
		}
		close(gate)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("%d conditional updates won (%v), want exactly 1", len(winners), winners)
		}
		if got := mustGet(t, s, u.ID())["name"]; got != winners[0] {
			t.Fatalf("name = %v, want the winner's %q", got, winners[0])
		}
	})

	t.Run("ReplacesOfAbsentID", func(t *testing.T) {
		// PUT is idempotent: identical Replaces of an absent id, as a client
		// retrying one gives, all succeed and exactly one creates the record,
		// however they interleave. A store that finds the id absent in each
		// and inserts it in each fails all but one with CodeConflict.
		s := open(t)
		base := mustCreate(t, s, user("A", "a@example.com")).ID() + 100
		const rounds, writers = 20, 4
		for round := range rounds {
			id := base + int64(round)
			in := mustValid(t, user("P", fmt.Sprintf("p%d@example.com", round)), resourceapi.ModeReplace)
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				created int
				gate    = make(chan struct{})
			)
			for range writers {
				wg.Go(func() {
					<-gate
					rec, c, err := s.Replace(timeout(t), users, id, clone(in), nil)
					if err != nil {
						t.Errorf("round %d: concurrent identical Replace(%d) error = %v, want nil", round, id, err)
						return
					}
					if rec.ID() != id || rec["email"] != in["email"] {
						t.Errorf("round %d: Replace(%d) returned id %d, email %v", round, id, rec.ID(), rec["email"])
					}
					if c {
						mu.Lock()
						created++
						mu.Unlock()
					}
				})
			}
			close(gate)
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			if created != 1 {
				t.Fatalf("round %d: %d of %d identical Replaces of an absent id reported created, want 1", round, created, writers)
			}
			if got, want := mustTotal(t, s), round+2; got != want {
				t.Fatalf("round %d: total = %d, want %d", round, got, want)
			}
			mustGet(t, s, id)
		}
	})

	t.Run("CreateOnlyReplacesOfAbsentID", func(t *testing.T) {
		// With a Condition that refuses an existing record (If-None-Match: *),
		// exactly one of concurrent Replaces of an absent id creates it and
		// the others get the Condition's error, not CodeConflict.
		s := open(t)
		base := mustCreate(t, s, user("A", "a@example.com")).ID() + 100
		absent := func(cur resourceapi.Record) error {
			if cur != nil {
				return errPrecondition
			}
			return nil
		}
		const rounds, writers = 20, 4
		for round := range rounds {
			id := base + int64(round)
			in := mustValid(t, user("P", fmt.Sprintf("p%d@example.com", round)), resourceapi.ModeReplace)
			errs := make([]error, writers)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := range writers {
				wg.Go(func() {
					<-gate
					_, _, errs[i] = s.Replace(timeout(t), users, id, clone(in), absent)
				})
			}
			close(gate)
			wg.Wait()
			var won int
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, errPrecondition):
					t.Fatalf("round %d: create-only Replace(%d) error = %v, want nil or the Condition's error", round, id, err)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d of %d create-only Replaces of an absent id succeeded, want 1", round, won, writers)
			}
			if got, want := mustTotal(t, s), round+2; got != want {
				t.Fatalf("round %d: total = %d, want %d", round, got, want)
			}
		}
	})

	t.Run("CreateAndReplaceOfNextID", func(t *testing.T) {
		// A Replace of the id Create is about to assign, concurrent with that
		// Create: both succeed, in either order. Either Replace created the
		// id and Create took another, or Create took it and Replace then
		// replaced that record.
		s := open(t)
		last := mustCreate(t, s, user("A", "a@example.com")).ID()
		total := 1
		const rounds = 20
		for round := range rounds {
			post := mustValid(t, user("C", fmt.Sprintf("c%d@example.com", round)), resourceapi.ModeCreate)
			put := mustValid(t, user("P", fmt.Sprintf("p%d@example.com", round)), resourceapi.ModeReplace)
			id := last + 1
			var (
				wg       sync.WaitGroup
				created  resourceapi.Record
				replaced bool
				errs     [2]error
				gate     = make(chan struct{})
			)
			wg.Go(func() {
				<-gate
				created, errs[0] = s.Create(timeout(t), users, post)
			})
			wg.Go(func() {
				<-gate
				_, replaced, errs[1] = s.Replace(timeout(t), users, id, put, nil)
			})
			close(gate)
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("round %d: concurrent Create and Replace(%d) errors = %v, %v; want nil, nil", round, id, errs[0], errs[1])
			}
			if replaced {
				total += 2
				if created.ID() == id {
					t.Fatalf("round %d: Create and Replace both report creating id %d", round, id)
				}
			} else {
				total++
				if created.ID() != id {
					t.Fatalf("round %d: Replace(%d) replaced a record, but Create took id %d", round, id, created.ID())
				}
			}
			if got := mustGet(t, s, id)["email"]; got != put["email"] {
				t.Fatalf("round %d: email of %d = %v, want the Replace's %v", round, id, got, put["email"])
			}
			if got := mustTotal(t, s); got != total {
				t.Fatalf("round %d: total = %d, want %d", round, got, total)
			}
			last = max(id, created.ID())
		}
	})

	t.Run("LastAdminRace", func(t *testing.T) {
		// Two transactions that each see another admin must not both demote:
		// a store that checks and writes without serializing ends with none.
		s := open(t)
		remaining := mustCreate(t, s, admin("R", "r@example.com"))
		for round := range 3 * len(demotions) {
			d := demotions[round%len(demotions)]
			other := mustCreate(t, s, admin("N", fmt.Sprintf("n%d@example.com", round)))
			pair := []resourceapi.Record{remaining, other}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := range pair {
				write := d.prepare(t, s, pair[i])
				wg.Go(func() {
					<-gate
					errs[i] = write()
				})
			}
			close(gate)
			wg.Wait()
			var ok []int
			for i, err := range errs {
				switch {
				case err == nil:
					ok = append(ok, i)
				case resourceapi.ErrorCode(err) != resourceapi.CodeUnprocessable:
					t.Fatalf("round %d (%s): error = %v, want nil or %s", round, d.name, err, resourceapi.CodeUnprocessable)
				}
			}
			page := mustList(t, s, "role", resourceapi.RoleAdmin)
			if page.Total == 0 {
				t.Fatalf("round %d (%s): concurrent demotions of the two admins both succeeded; no active admin is left", round, d.name)
			}
			if len(ok) != 1 || page.Total != 1 {
				t.Fatalf("round %d (%s): %d of 2 demotions succeeded, %d admins left; want 1 and 1", round, d.name, len(ok), page.Total)
			}
			remaining = pair[1-ok[0]]
			mustAdmins(t, s, remaining.ID())
		}
	})
}

func testContext(t *testing.T, open opener) {
	contexts := []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{"Canceled", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}},
		{"DeadlineExceeded", func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, c := range contexts {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			a := mustCreate(t, s, user("A", "a@example.com"))
			q := mustQuery(t)
			// Read first, so that a store with a cache has these reads in
			// it: a cached answer must fail with a done context too.
			mustGet(t, s, a.ID())
			if _, err := s.List(timeout(t), users, q); err != nil {
				t.Fatalf("List() error = %v, want nil", err)
			}
			ctx := c.ctx(t)
			create := mustValid(t, user("B", "b@example.com"), resourceapi.ModeCreate)
			rep := mustValid(t, user("B", "b@example.com"), resourceapi.ModeReplace)
			patch := mustValid(t, resourceapi.Record{"name": "B"}, resourceapi.ModePatch)
			calls := []struct {
				name string
				call func() error
			}{
				{"Ping", func() error { return s.Ping(ctx) }},
				{"Get", func() error { _, err := s.Get(ctx, users, a.ID()); return err }},
				{"List", func() error { _, err := s.List(ctx, users, q); return err }},
				{"Create", func() error {
					_, err := s.Create(ctx, users, clone(create))
					return err
				}},
				{"ReplaceExisting", func() error {
					_, _, err := s.Replace(ctx, users, a.ID(), clone(rep), nil)
					return err
				}},
				{"ReplaceAbsent", func() error {
					_, _, err := s.Replace(ctx, users, a.ID()+5, clone(rep), nil)
					return err
				}},
				{"Update", func() error {
					_, err := s.Update(ctx, users, a.ID(), clone(patch), nil)
					return err
				}},
				{"Delete", func() error { return s.Delete(ctx, users, a.ID(), nil) }},
			}
			for _, call := range calls {
				if err := callWithin(10*time.Second, call.call); err == nil {
					t.Fatalf("%s with a done context error = nil, want an error", call.name)
				} else if _, bad := err.(stuck); bad {
					t.Fatalf("%s with a done context: %v", call.name, err)
				}
			}
			mustUnchanged(t, s, a, "writes with a done context")
			mustListIDs(t, s, []string{"status", "all"}, []int64{a.ID()}, 0)
		})
	}
	t.Run("CanceledDuringWrites", func(t *testing.T) { testCanceledDuringWrites(t, open) })
}

// testCanceledDuringWrites checks that a write whose context ends while it is
// under way either reports success or changes nothing: a request that failed
// must not have written (decisions §8), whenever the client gave up.
func testCanceledDuringWrites(t *testing.T, open opener) {
	s := open(t)
	const waves, perWave = 8, 25
	type outcome struct {
		email string
		err   error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	for wave := range waves {
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range perWave {
			email := fmt.Sprintf("w%d-%d@example.com", wave, i)
			in := mustValid(t, user("W", email), resourceapi.ModeCreate)
			// Deadlines from 0 to 5ms land in every phase of a write: before
			// it starts, while it waits, while it runs and while it commits.
			limit := time.Duration(i) * 200 * time.Microsecond
			wg.Go(func() {
				<-gate
				ctx, cancel := context.WithTimeout(t.Context(), limit)
				defer cancel()
				_, err := s.Create(ctx, users, in)
				mu.Lock()
				outcomes = append(outcomes, outcome{email, err})
				mu.Unlock()
			})
		}
		close(gate)
		wg.Wait()
	}
	// A write abandoned by its caller may still be finishing; wait until the
	// store has settled before looking.
	stored := settledEmails(t, s)
	var failed int
	for _, o := range outcomes {
		switch {
		case o.err == nil && !stored[o.email]:
			t.Errorf("Create(%s) succeeded but the record is not stored", o.email)
		case o.err != nil && stored[o.email]:
			t.Errorf("Create(%s) failed (%v) but the record was stored; a failed write must change nothing", o.email, o.err)
		case o.err != nil:
			failed++
		}
	}
	t.Logf("%d of %d creates ended by their context", failed, len(outcomes))
}

// settledEmails waits until the number of stored users stops changing and
// returns their emails.
func settledEmails(t *testing.T, s resourceapi.Store) map[string]bool {
	t.Helper()
	last := -1
	for stable := 0; stable < 3; {
		time.Sleep(20 * time.Millisecond)
		if n := mustTotal(t, s); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	emails := make(map[string]bool)
	for p := 1; ; p++ {
		page := mustList(t, s, "status", "all", "limit", "100", "page", strconv.Itoa(p))
		for _, rec := range page.Records {
			emails[rec["email"].(string)] = true
		}
		if len(page.Records) < 100 {
			return emails
		}
	}
}

// stuck is the error of a call that panicked or did not return in time.
type stuck string

func (s stuck) Error() string { return string(s) }

// callWithin runs call, turning a panic or a call that outlasts d into a stuck
// error.
func callWithin(d time.Duration, call func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- stuck(fmt.Sprintf("panicked: %v", r))
			}
		}()
		done <- call()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return stuck(fmt.Sprintf("did not return within %v", d))
	}
}
