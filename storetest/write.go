package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

type opener = func(t *testing.T) resourceapi.Store

func testPing(t *testing.T, open opener) {
	s := open(t)
	if err := s.Ping(timeout(t)); err != nil {
		t.Fatalf("Ping() = %v, want nil", err)
	}
}

func testCreate(t *testing.T, open opener) {
	t.Run("ReturnsStoredRecord", func(t *testing.T) {
		s := open(t)
		in := user("Ada Lovelace", "Ada@Example.com")
		in["age"] = int64(36)
		in["password"] = hash
		got, wall := followsWallClock(t, s, in)
		want := resourceapi.Record{
			"id": got.ID(), "name": "Ada Lovelace", "email": "Ada@Example.com", "age": int64(36),
			"roles": []string{resourceapi.RoleUser}, "permissions": []string{}, "deleted": false, "service": false,
			"created_at": got["created_at"], "updated_at": got["created_at"],
		}
		mustSame(t, got, want, "Create")
		mustStamp(t, got, nil, nil, window{}, false, "Create")
		mustSame(t, mustGet(t, s, got.ID()), got, "Get after Create")
		if !wall {
			t.Logf("timestamps do not follow the wall clock; checking only their order")
		}
	})

	t.Run("AppliesDefaults", func(t *testing.T) {
		s := open(t)
		got := mustCreate(t, s, user("Grace", "grace@example.com"))
		for name, want := range map[string]any{"age": nil, "roles": []string{resourceapi.RoleUser}, "deleted": false} {
			if !equalValue(got[name], want) {
				t.Fatalf("%s = %s, want the default %s", name, showValue(got[name]), showValue(want))
			}
			if def := users.Field(name).DefaultValue(); !equalValue(def, want) {
				t.Fatalf("declared default of %s = %s, the suite expects %s", name, showValue(def), showValue(want))
			}
		}
	})

	t.Run("KeepsGivenValues", func(t *testing.T) {
		tests := []struct {
			name  string
			field string
			value any
			want  any
		}{
			{"zero age is not null", "age", int64(0), int64(0)},
			{"max age", "age", int64(150), int64(150)},
			{"null age", "age", nil, nil},
			{"roles normalized", "roles", []string{"editor", "admin", "editor"}, []string{"admin", "editor"}},
			{"empty roles stay empty", "roles", []string{}, []string{}},
			{"created deleted", "deleted", true, true},
			{"unicode name", "name", "  Zoë 😀 O'Brien \"x\" \\ %_  ", `Zoë 😀 O'Brien "x" \ %_`},
			{"100-character name", "name", strings.Repeat("é", 100), strings.Repeat("é", 100)},
			{"254-byte email", "email", longEmail(), longEmail()},
			{"email case kept", "email", "MiXeD.Case@Example.COM", "MiXeD.Case@Example.COM"},
		}
		s := open(t)
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				in := user("Someone", "someone"+string(rune('a'+i))+"@example.com")
				in[tt.field] = tt.value
				got := mustCreate(t, s, in)
				if !equalValue(got[tt.field], tt.want) {
					t.Fatalf("%s = %s, want %s", tt.field, showValue(got[tt.field]), showValue(tt.want))
				}
				mustSame(t, mustGet(t, s, got.ID()), got, "Get after Create")
			})
		}
	})

	t.Run("IDsIncrease", func(t *testing.T) {
		s := open(t)
		var last int64
		for i := range 5 {
			got := mustCreate(t, s, user("N", "n"+string(rune('a'+i))+"@example.com"))
			if got.ID() <= last {
				t.Fatalf("id of create %d = %d, want > %d", i+1, got.ID(), last)
			}
			last = got.ID()
		}
		// A deleted record's id is not handed out again either.
		mustDelete(t, s, last)
		if got := mustCreate(t, s, user("N", "n@example.com")); got.ID() <= last {
			t.Fatalf("id of create after deleting %d = %d, want > %d", last, got.ID(), last)
		}
	})

	t.Run("DoesNotModifyInput", func(t *testing.T) {
		s := open(t)
		in := mustValid(t, user("Ida", "ida@example.com"), resourceapi.ModeCreate)
		before := clone(in)
		got, err := s.Create(timeout(t), users, in)
		if err != nil {
			t.Fatalf("Create error = %v", err)
		}
		got["name"] = "changed by caller"
		if d := diff(in, before); d != "" {
			t.Fatalf("Create changed the record it was given: %s", d)
		}
		if name := mustGet(t, s, got.ID())["name"]; name != "Ida" {
			t.Fatalf("name = %v after the caller changed the returned record, want %q", name, "Ida")
		}
	})
}

// longEmail returns a valid address of exactly resourceapi.MaxEmailLength bytes.
func longEmail() string {
	return strings.Repeat("x", 64) + "@" + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 57) + ".com"
}

func testGet(t *testing.T, open opener) {
	t.Run("Unknown", func(t *testing.T) {
		s := open(t)
		u := mustCreate(t, s, user("Ada", "ada@example.com"))
		for _, id := range []int64{u.ID() + 1, 0, -1, 1 << 62} {
			rec, err := s.Get(timeout(t), users, id)
			mustCode(t, err, resourceapi.CodeNotFound, "Get of an unknown id")
			if rec != nil {
				t.Fatalf("Get(%d) record = %v, want nil with the error", id, show(rec))
			}
		}
	})

	t.Run("SoftDeleted", func(t *testing.T) {
		s := open(t)
		u := mustCreate(t, s, user("Ada", "ada@example.com"))
		upd := mustUpdate(t, s, u.ID(), resourceapi.Record{"deleted": true})
		got := mustGet(t, s, u.ID())
		if got["deleted"] != true {
			t.Fatalf("deleted = %v, want true", got["deleted"])
		}
		mustSame(t, got, upd, "Get of a soft-deleted user")
	})
}

func testUnique(t *testing.T, open opener) {
	// setup stores a = "A@x.io" and b, and returns them.
	setup := func(t *testing.T) (resourceapi.Store, resourceapi.Record, resourceapi.Record) {
		s := open(t)
		return s, mustCreate(t, s, user("A", "A@x.io")), mustCreate(t, s, user("B", "b@x.io"))
	}
	taken := []string{"a@X.IO", "A@x.io", " a@x.io "}
	writes := []struct {
		name  string
		write func(t *testing.T, s resourceapi.Store, b resourceapi.Record, email string) error
	}{
		{"Create", func(t *testing.T, s resourceapi.Store, _ resourceapi.Record, email string) error {
			_, err := s.Create(timeout(t), users, mustValid(t, user("C", email), resourceapi.ModeCreate))
			return err
		}},
		{"ReplaceExisting", func(t *testing.T, s resourceapi.Store, b resourceapi.Record, email string) error {
			_, _, err := s.Replace(timeout(t), users, b.ID(), mustValid(t, user("B2", email), resourceapi.ModeReplace), nil)
			return err
		}},
		{"ReplaceAbsent", func(t *testing.T, s resourceapi.Store, b resourceapi.Record, email string) error {
			_, _, err := s.Replace(timeout(t), users, b.ID()+100, mustValid(t, user("C", email), resourceapi.ModeReplace), nil)
			return err
		}},
		{"Update", func(t *testing.T, s resourceapi.Store, b resourceapi.Record, email string) error {
			_, err := s.Update(timeout(t), users, b.ID(), mustValid(t, resourceapi.Record{"email": email, "name": "B2"}, resourceapi.ModePatch), nil)
			return err
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			s, a, b := setup(t)
			for _, email := range taken {
				err := w.write(t, s, b, email)
				mustCode(t, err, resourceapi.CodeConflict, w.name+" with email "+email+" of another user")
				mustUnchanged(t, s, a, "a conflicting "+w.name)
				mustUnchanged(t, s, b, "a conflicting "+w.name)
				if got := mustTotal(t, s); got != 2 {
					t.Fatalf("after a conflicting %s, total = %d, want 2", w.name, got)
				}
				mustAbsent(t, s, b.ID()+100, "a conflicting "+w.name)
			}
		})
	}

	t.Run("OwnEmailInOtherCase", func(t *testing.T) {
		s, a, _ := setup(t)
		if got := mustUpdate(t, s, a.ID(), resourceapi.Record{"email": "a@x.io"}); got["email"] != "a@x.io" {
			t.Fatalf("email = %v, want %q", got["email"], "a@x.io")
		}
		if got, _ := mustReplace(t, s, a.ID(), user("A", "A@X.IO")); got["email"] != "A@X.IO" {
			t.Fatalf("email = %v, want %q", got["email"], "A@X.IO")
		}
	})

	t.Run("NonASCII", func(t *testing.T) {
		// Validate accepts internationalized addresses, and "case-insensitively"
		// does not stop at ASCII.
		s := open(t)
		a := mustCreate(t, s, user("Élodie", "Élodie@Exämple.io"))
		for _, email := range []string{"élodie@exämple.io", "ÉLODIE@EXÄMPLE.IO"} {
			_, err := s.Create(timeout(t), users, mustValid(t, user("C", email), resourceapi.ModeCreate))
			mustCode(t, err, resourceapi.CodeConflict, "Create with "+email+" after "+a["email"].(string))
		}
		mustCreate(t, s, user("E", "elodie@example.io")) // no accent folding
	})

	t.Run("SoftDeletedKeepsEmail", func(t *testing.T) {
		s, a, _ := setup(t)
		mustUpdate(t, s, a.ID(), resourceapi.Record{"deleted": true})
		_, err := s.Create(timeout(t), users, mustValid(t, user("C", "a@x.io"), resourceapi.ModeCreate))
		mustCode(t, err, resourceapi.CodeConflict, "Create with the email of a soft-deleted user")
	})

	t.Run("DeleteFreesEmail", func(t *testing.T) {
		s, a, _ := setup(t)
		mustDelete(t, s, a.ID())
		if got := mustCreate(t, s, user("C", "a@x.io")); got.ID() == a.ID() {
			t.Fatalf("id = %d, the id of the deleted user; want a new id", got.ID())
		}
	})

	t.Run("SwapThroughThirdValue", func(t *testing.T) {
		s, a, b := setup(t)
		mustUpdate(t, s, a.ID(), resourceapi.Record{"email": "tmp@x.io"})
		mustUpdate(t, s, b.ID(), resourceapi.Record{"email": "a@x.io"})
		mustUpdate(t, s, a.ID(), resourceapi.Record{"email": "b@x.io"})
		if got := mustGet(t, s, b.ID())["email"]; got != "a@x.io" {
			t.Fatalf("email of b = %v, want %q", got, "a@x.io")
		}
	})
}

func testReplace(t *testing.T, open opener) {
	t.Run("Existing", func(t *testing.T) {
		s := open(t)
		in := user("Old", "old@example.com")
		in["age"], in["password"], in["roles"], in["deleted"] = int64(30), hash, []string{"editor"}, true
		old, wall := followsWallClock(t, s, in)
		time.Sleep(2 * time.Millisecond)
		w := start()
		got, created := mustReplace(t, s, old.ID(), user("New", "new@example.com"))
		w = w.end()
		if created {
			t.Fatalf("created = true, want false for an existing record")
		}
		want := clone(old)
		want["name"], want["email"], want["age"], want["updated_at"] = "New", "new@example.com", nil, got["updated_at"]
		mustSame(t, got, want, "Replace (age cleared, roles and deleted kept)")
		mustStamp(t, got, old, old, w, wall, "Replace")
		mustSame(t, mustGet(t, s, old.ID()), got, "Get after Replace")
	})

	t.Run("KeepFieldsGiven", func(t *testing.T) {
		s := open(t)
		in := user("Old", "old@example.com")
		in["roles"], in["deleted"] = []string{"editor"}, true
		old := mustCreate(t, s, in)
		in = user("New", "old@example.com")
		in["age"], in["roles"], in["deleted"], in["password"] = int64(5), []string{"user", "editor"}, false, hash
		got, _ := mustReplace(t, s, old.ID(), in)
		want := clone(old)
		want["name"], want["age"], want["roles"], want["deleted"], want["updated_at"] = "New", int64(5), []string{"editor", "user"}, false, got["updated_at"]
		mustSame(t, got, want, "Replace with every field")
	})

	t.Run("AbsentCreatesWithThatID", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		id := a.ID() + 1000
		w := start()
		got, created := mustReplace(t, s, id, user("P", "p@example.com"))
		w = w.end()
		if !created {
			t.Fatalf("created = false, want true for an absent id")
		}
		want := resourceapi.Record{
			"id": id, "name": "P", "email": "p@example.com", "age": nil, "roles": []string{resourceapi.RoleUser},
			"permissions": []string{}, "deleted": false, "service": false, "created_at": got["created_at"], "updated_at": got["created_at"],
		}
		mustSame(t, got, want, "Replace of an absent id (defaults applied)")
		_, wall := followsWallClock(t, s, user("W", "w@example.com"))
		mustStamp(t, got, nil, nil, w, wall, "Replace of an absent id")
		mustSame(t, mustGet(t, s, id), got, "Get after Replace")
		last := a.ID()
		for i := range 3 {
			next := mustCreate(t, s, user("N", "n"+string(rune('a'+i))+"@example.com"))
			if next.ID() == id {
				t.Fatalf("Create after Replace(%d) gave id %d again (an explicit id must not be handed out again)", id, next.ID())
			}
			if next.ID() <= last {
				t.Fatalf("Create after Replace(%d) gave id %d, want > %d", id, next.ID(), last)
			}
			last = next.ID()
		}
		mustSame(t, mustGet(t, s, id), got, "Get after the Creates that followed Replace")
	})

	t.Run("AbsentIDInsideSequence", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		b := mustCreate(t, s, user("B", "b@example.com"))
		c := mustCreate(t, s, user("C", "c@example.com"))
		mustDelete(t, s, b.ID())
		// A deleted record's id is retired: only a Replace whose context
		// allows it creates a record there (see testCredentials).
		_, _, err := s.Replace(timeout(t), users, b.ID(), mustValid(t, user("B2", "b2@example.com"), resourceapi.ModeReplace), nil)
		mustCode(t, err, resourceapi.CodeConflict, "Replace at a deleted record's id")
		ctx, cancel := context.WithTimeout(resourceapi.WithIDReuse(t.Context()), callTimeout)
		defer cancel()
		got, created, err := s.Replace(ctx, users, b.ID(), mustValid(t, user("B2", "b2@example.com"), resourceapi.ModeReplace), nil)
		if err != nil {
			t.Fatalf("Replace(%d) with reuse allowed = %v", b.ID(), err)
		}
		if !created || got.ID() != b.ID() {
			t.Fatalf("Replace(%d) = id %d, created %v; want id %d, created true", b.ID(), got.ID(), created, b.ID())
		}
		next := mustCreate(t, s, user("D", "d@example.com"))
		if next.ID() <= c.ID() {
			t.Fatalf("Create id = %d, want > %d", next.ID(), c.ID())
		}
		if got := mustTotal(t, s); got != 4 {
			t.Fatalf("total = %d, want 4", got)
		}
		mustSame(t, mustGet(t, s, a.ID()), a, "untouched record")
	})

	t.Run("ValidateClearsNonKeepFields", func(t *testing.T) {
		// Not a store check: it documents that ModeReplace clears non-Keep
		// fields, which the Existing case relies on.
		rec := mustValid(t, user("X", "x@example.com"), resourceapi.ModeReplace)
		if v, ok := rec["age"]; !ok || v != nil {
			t.Fatalf("Validate(ModeReplace) age = %v, %v; want present and nil", v, ok)
		}
		for _, keep := range []string{"password", "roles", "deleted"} {
			if _, ok := rec[keep]; ok {
				t.Fatalf("Validate(ModeReplace) set Keep field %s; want it absent", keep)
			}
		}
	})
}

func testUpdate(t *testing.T, open opener) {
	t.Run("OnlyPresentFieldsChange", func(t *testing.T) {
		tests := []struct {
			name  string
			patch resourceapi.Record
		}{
			{"name", resourceapi.Record{"name": "  Renamed  "}},
			{"email", resourceapi.Record{"email": "new@example.com"}},
			{"age", resourceapi.Record{"age": int64(41)}},
			{"age to null", resourceapi.Record{"age": nil}},
			{"roles", resourceapi.Record{"roles": []string{"user", "admin"}}},
			{"roles to empty", resourceapi.Record{"roles": []string{}}},
			{"password", resourceapi.Record{"password": hash + "2"}},
			{"several", resourceapi.Record{"name": "N", "age": int64(0), "deleted": true}},
			{"nothing", resourceapi.Record{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				in := user("Old", "old@example.com")
				in["age"], in["roles"], in["password"] = int64(40), []string{"editor"}, hash
				old, wall := followsWallClock(t, s, in)
				time.Sleep(2 * time.Millisecond)
				w := start()
				got := mustUpdate(t, s, old.ID(), tt.patch)
				w = w.end()
				want := clone(old)
				for name, v := range mustValid(t, tt.patch, resourceapi.ModePatch) {
					if users.Visible(name) {
						want[name] = v
					}
				}
				want["updated_at"] = got["updated_at"]
				mustSame(t, got, want, "Update")
				mustStamp(t, got, old, old, w, wall, "Update")
				mustSame(t, mustGet(t, s, old.ID()), got, "Get after Update")
			})
		}
	})

	t.Run("SoftDeleteAndRestore", func(t *testing.T) {
		s := open(t)
		u := mustCreate(t, s, user("Ada", "ada@example.com"))
		other := mustCreate(t, s, user("Bob", "bob@example.com"))
		del := mustUpdate(t, s, u.ID(), resourceapi.Record{"deleted": true})
		if del["deleted"] != true {
			t.Fatalf("deleted = %v, want true", del["deleted"])
		}
		if got, want := ids(mustList(t, s).Records), []int64{other.ID()}; !slices.Equal(got, want) {
			t.Fatalf("active ids = %v, want %v", got, want)
		}
		if got, want := ids(mustList(t, s, "status", "deleted").Records), []int64{u.ID()}; !slices.Equal(got, want) {
			t.Fatalf("deleted ids = %v, want %v", got, want)
		}
		res := mustUpdate(t, s, u.ID(), resourceapi.Record{"deleted": false})
		if res["deleted"] != false {
			t.Fatalf("deleted = %v, want false", res["deleted"])
		}
		if got, want := ids(mustList(t, s).Records), []int64{u.ID(), other.ID()}; !slices.Equal(got, want) {
			t.Fatalf("active ids after restore = %v, want %v", got, want)
		}
		want := clone(u)
		want["updated_at"] = res["updated_at"]
		mustSame(t, res, want, "restored user")
	})

	t.Run("Unknown", func(t *testing.T) {
		s := open(t)
		u := mustCreate(t, s, user("Ada", "ada@example.com"))
		id := u.ID() + 1
		rec, err := s.Update(timeout(t), users, id, mustValid(t, resourceapi.Record{"name": "X"}, resourceapi.ModePatch), nil)
		mustCode(t, err, resourceapi.CodeNotFound, "Update of an unknown id")
		if rec != nil {
			t.Fatalf("Update record = %s, want nil with the error", show(rec))
		}
		mustAbsent(t, s, id, "Update of an unknown id")
		mustUnchanged(t, s, u, "Update of an unknown id")
	})
}

func testDelete(t *testing.T, open opener) {
	t.Run("Removes", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		b := mustCreate(t, s, user("B", "b@example.com"))
		mustDelete(t, s, a.ID())
		mustAbsent(t, s, a.ID(), "Delete")
		if got := mustTotal(t, s); got != 1 {
			t.Fatalf("total = %d, want 1", got)
		}
		mustUnchanged(t, s, b, "Delete of another user")
		err := s.Delete(timeout(t), users, a.ID(), nil)
		mustCode(t, err, resourceapi.CodeNotFound, "second Delete")
	})

	t.Run("SoftDeleted", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		mustUpdate(t, s, a.ID(), resourceapi.Record{"deleted": true})
		mustDelete(t, s, a.ID())
		mustAbsent(t, s, a.ID(), "Delete of a soft-deleted user")
	})

	t.Run("Unknown", func(t *testing.T) {
		s := open(t)
		for _, id := range []int64{1, 0, -1} {
			err := s.Delete(timeout(t), users, id, nil)
			mustCode(t, err, resourceapi.CodeNotFound, "Delete of an unknown id")
		}
	})
}

// spy is a Condition that records what it was called with and returns err.
type spy struct {
	mu    sync.Mutex
	calls int
	got   resourceapi.Record
	err   error
}

func (c *spy) cond(current resourceapi.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.got = clone(current)
	return c.err
}

// errPrecondition is a Condition error of the kind transports use (If-Match).
var errPrecondition = resourceapi.Errorf(resourceapi.CodePreconditionFailed, "The record has changed")

// errPlain is a Condition error that is not a *resourceapi.Error.
var errPlain = errors.New("storetest: condition failed")

// mustConditionError fails unless err is the Condition's error want (wrapped
// or not: ErrorAborts checks for it unchanged).
func mustConditionError(tb testing.TB, err, want error, what string) {
	tb.Helper()
	if !errors.Is(err, want) {
		tb.Fatalf("%s error = %v, want the Condition's error %v", what, err, want)
	}
}

// conditional is one write that takes a Condition.
type conditional struct {
	name  string
	write func(t *testing.T, s resourceapi.Store, id int64, cond resourceapi.Condition) error
}

var conditionals = []conditional{
	{"Replace", func(t *testing.T, s resourceapi.Store, id int64, cond resourceapi.Condition) error {
		_, _, err := s.Replace(timeout(t), users, id, mustValid(t, user("New", "new@example.com"), resourceapi.ModeReplace), cond)
		return err
	}},
	{"Update", func(t *testing.T, s resourceapi.Store, id int64, cond resourceapi.Condition) error {
		_, err := s.Update(timeout(t), users, id, mustValid(t, resourceapi.Record{"name": "New", "deleted": true}, resourceapi.ModePatch), cond)
		return err
	}},
	// A change that depends on nothing stored: on PostgreSQL its UPDATE
	// is sent with the read of the record, before the Condition sees it
	// (sqlstore.Follower), and rolled back when the Condition refuses.
	{"UpdateAge", func(t *testing.T, s resourceapi.Store, id int64, cond resourceapi.Condition) error {
		_, err := s.Update(timeout(t), users, id, mustValid(t, resourceapi.Record{"age": int64(99)}, resourceapi.ModePatch), cond)
		return err
	}},
	{"Delete", func(t *testing.T, s resourceapi.Store, id int64, cond resourceapi.Condition) error {
		return s.Delete(timeout(t), users, id, cond)
	}},
}

func testCondition(t *testing.T, open opener) {
	for _, c := range conditionals {
		t.Run(c.name, func(t *testing.T) {
			t.Run("SeesCurrentRecord", func(t *testing.T) {
				s := open(t)
				in := user("Old", "old@example.com")
				in["password"], in["age"] = hash, int64(7)
				u := mustCreate(t, s, in)
				sp := &spy{}
				if err := c.write(t, s, u.ID(), sp.cond); err != nil {
					t.Fatalf("%s with a passing Condition error = %v, want nil", c.name, err)
				}
				if sp.calls == 0 {
					t.Fatalf("Condition was not called")
				}
				mustSame(t, sp.got, u, "Condition's current record (want what Get returns)")
			})

			for _, cerr := range []error{errPrecondition, errPlain} {
				t.Run("ErrorAborts/"+string(resourceapi.ErrorCode(cerr)), func(t *testing.T) {
					s := open(t)
					u := mustCreate(t, s, user("Old", "old@example.com"))
					sp := &spy{err: cerr}
					err := c.write(t, s, u.ID(), sp.cond)
					mustConditionError(t, err, cerr, c.name)
					mustUnchanged(t, s, u, "a failed Condition")
					if got := mustTotal(t, s); got != 1 {
						t.Fatalf("total = %d, want 1", got)
					}
					if err != cerr {
						t.Fatalf("%s error = %v (%T), want the Condition's error itself, not wrapped", c.name, err, err)
					}
				})
			}

			t.Run("Absent", func(t *testing.T) {
				s := open(t)
				u := mustCreate(t, s, user("Old", "old@example.com"))
				id := u.ID() + 10
				sp := &spy{err: errPrecondition}
				err := c.write(t, s, id, sp.cond)
				if sp.calls > 0 && sp.got != nil {
					t.Fatalf("Condition got %s for an absent record, want nil", show(sp.got))
				}
				switch {
				case c.name == "Replace":
					mustConditionError(t, err, errPrecondition, "Replace of an absent id")
				case !errors.Is(err, errPrecondition):
					mustCode(t, err, resourceapi.CodeNotFound, c.name+" of an absent id")
				}
				mustAbsent(t, s, id, "a failed Condition on an absent id")
				if got := mustTotal(t, s); got != 1 {
					t.Fatalf("total = %d, want 1", got)
				}
				if c.name != "Replace" {
					return
				}
				sp = &spy{}
				if err := c.write(t, s, id, sp.cond); err != nil {
					t.Fatalf("Replace of an absent id with a passing Condition error = %v", err)
				}
				if sp.calls == 0 || sp.got != nil {
					t.Fatalf("Condition calls = %d, current = %s; want called with nil", sp.calls, show(sp.got))
				}
				mustGet(t, s, id)
			})
		})
	}
}

// testMaxID checks that no single write can stop creation. Replace creates
// the ids its client gives, up to resourceapi.MaxID, the largest id a JSON
// client holds exactly, but never moves the ids Create assigns: after a
// Replace of MaxID, or of a run of ids just ahead of the ones Create would
// assign next, Create still succeeds, with an id that was free.
func testMaxID(t *testing.T, open func(t *testing.T) resourceapi.Store) {
	t.Run("AfterReplaceOfMaxID", func(t *testing.T) {
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		last, created := mustReplace(t, s, resourceapi.MaxID, user("Last", "last@example.com"))
		if !created {
			t.Fatalf("Replace(MaxID) created = false, want true")
		}
		next := mustCreate(t, s, user("Next", "next@example.com"))
		if next.ID() <= a.ID() || next.ID() >= resourceapi.MaxID {
			t.Fatalf("Create after Replace(MaxID) gave id %d, want one between %d and %d", next.ID(), a.ID(), resourceapi.MaxID)
		}
		mustSame(t, mustGet(t, s, resourceapi.MaxID), last, "record MaxID after Create")
		if got := mustTotal(t, s); got != 3 {
			t.Fatalf("%d users, want 3", got)
		}
	})

	t.Run("AfterReplaceOfRunAhead", func(t *testing.T) {
		// A client that PUTs the ids Create would assign next: Create skips
		// the whole run, and does not overwrite or conflict with it.
		s := open(t)
		a := mustCreate(t, s, user("A", "a@example.com"))
		const run = 40
		taken := make(map[int64]resourceapi.Record)
		for i := range int64(run) {
			id := a.ID() + 1 + i
			rec, created := mustReplace(t, s, id, user("R", fmt.Sprintf("r%d@example.com", i)))
			if !created {
				t.Fatalf("Replace(%d) created = false, want true", id)
			}
			taken[id] = rec
		}
		last := a.ID()
		for i := range 3 {
			next := mustCreate(t, s, user("N", fmt.Sprintf("n%d@example.com", i)))
			if taken[next.ID()] != nil || next.ID() <= last {
				t.Fatalf("Create %d after Replace of ids %d to %d gave id %d, want a free id above %d", i+1, a.ID()+1, a.ID()+run, next.ID(), last)
			}
			last = next.ID()
		}
		for id, rec := range taken {
			mustSame(t, mustGet(t, s, id), rec, "record created by Replace, after Creates")
		}
		if got, want := mustTotal(t, s), 1+run+3; got != want {
			t.Fatalf("%d users, want %d", got, want)
		}
	})
}
