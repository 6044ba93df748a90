// Package storetest is the conformance suite every resourceapi.Store runs, in the
// manner of testing/fstest: a store's own tests call TestStore with a function
// that opens a fresh store, and the suite checks the whole contract of
// resourceapi.Store on the users resource (resourceapi.Users), and on every
// other declared resource from its declaration (see testResources).
//
// The suite feeds writes the way the transports do: records are built as Go
// values, passed through resourceapi.Validate, and carry an already-hashed
// password. List queries are built with http.ParseListQuery (package resourceapi/http), so they are
// always valid.
//
// Beyond what the resourceapi package states, the suite pins these choices, so
// that every store gives the same answers:
//
//   - Records returned by any method (and passed to a Condition) hold exactly
//     the visible fields of the resource: never the password hash, never an
//     omitted field. Absent values are nil, a list is a non-nil []string (an
//     empty list stays empty, not null), and timestamps are UTC with
//     millisecond precision. A Condition sees the record Get would return.
//   - Ties in a sort break by id in the direction of the sort: order=desc is
//     the exact reverse of order=asc, so paging backwards visits the same
//     sequence. Null sorts before every value (first ascending, last
//     descending), again so that desc is the reverse of asc.
//   - Search (q) matches a literal, Unicode case-insensitive substring of a
//     searchable field: % _ \ " and ' are ordinary characters, "ÉMILE" finds
//     "émile", and accents are not folded ("zoe" does not find "Zoë").
//   - Unique fields are unique under Unicode case folding ("élodie@x.io"
//     conflicts with "ÉLODIE@X.IO"), stay taken by soft-deleted records, and
//     are freed by a hard delete. A record may change the case of its own
//     unique value.
//   - The Retain invariant (the last admin) forbids only writes that take the
//     number of active holders from one or more to zero; when there is none
//     already (an empty store), other writes proceed. Its error carries
//     Retain.Message.
//   - A Condition's error is returned as is (the same error value, not
//     wrapped). Update or Delete of a missing id calls the Condition with nil
//     or not at all, and returns CodeNotFound or the Condition's error.
//   - An explicit id given to Replace is never handed out again by Create, nor
//     is the id of a deleted record. Replace never moves the ids Create
//     assigns: after Replace of any id, resourceapi.MaxID included, Create
//     still succeeds and skips the ids Replace took. (Create fails with
//     CodeUnprocessable only when no id up to MaxID is free after the ones
//     it has assigned, which takes 2^53 Creates: the suite cannot reach it.)
//   - A call that returns an error changed nothing, even when its context ended
//     while it was under way (decisions §8: a failed request changes
//     nothing). A context that is already done makes every method fail.
//
// Stores that keep an outbox of events (resourceapi.Outbox) are checked to
// record, in the write's own transaction, the event each write's resource
// declares, with the record as committed (a Replace that creates publishes
// the create's event), and none for a write that fails.
//
// Every call the suite makes is bounded by a 30-second context, so a store
// that deadlocks fails the call that hung rather than the test binary.
//
// The suite needs no control of the store's clock. When a store's timestamps
// follow the wall clock, it checks that writes stamp the time of the call;
// otherwise (a store running on a test Clock) it checks only that timestamps
// never go backwards.
package storetest

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// TestStore runs the conformance suite against stores made by open. open
// returns a fresh, empty, migrated store for each call (each subtest calls
// it) and registers its cleanup with t.Cleanup.
func TestStore(t *testing.T, open func(t *testing.T) resourceapi.Store) {
	t.Helper()
	opened := func(t *testing.T) resourceapi.Store {
		t.Helper()
		s := open(t)
		if s == nil {
			t.Fatalf("open returned a nil store")
		}
		return s
	}
	groups := []struct {
		name string
		run  func(t *testing.T, open func(t *testing.T) resourceapi.Store)
	}{
		{"Ping", testPing},
		{"Create", testCreate},
		{"Get", testGet},
		{"Unique", testUnique},
		{"List", testList},
		{"Replace", testReplace},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"Condition", testCondition},
		{"Retain", testRetain},
		{"Atomicity", testAtomicity},
		{"Concurrency", testConcurrency},
		{"Context", testContext},
		{"MaxID", testMaxID},
		{"Identity", testIdentity},
		{"OAuth", testOAuth},
		{"Credentials", testCredentials},
		{"Resources", testResources},
		{"Batch", testBatch},
		{"Events", testEvents},
		{"Prerequisites", testPrerequisites},
		{"Webhooks", testWebhooks},
	}
	// The groups run in parallel: each opens stores of its own, and on a
	// database server most of a test's time is waiting for it (commits, new
	// databases), which the others use.
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, opened)
		})
	}
}

// Clock is a controllable clock for store tests. Its Now method is a
// resourceapi.Clock: every reading returns the current time and then advances
// it by the step, so successive transactions see distinct, increasing times.
// It is safe for concurrent use. A store's own tests may run the suite on it:
//
//	clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Millisecond)
//	storetest.TestStore(t, func(t *testing.T) resourceapi.Store {
//		return openWithClock(t, clock.Now)
//	})
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

// NewClock returns a Clock that starts at start and advances by step on every
// reading (step may be 0 for a clock that moves only when told).
func NewClock(start time.Time, step time.Duration) *Clock {
	return &Clock{now: start, step: step}
}

// Now returns the clock's time and advances it by its step.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// callTimeout bounds every store call of the suite, so that a store that hangs
// fails the call that hung instead of the whole test binary.
const callTimeout = 30 * time.Second

// timeout returns a context for one store call: tb's, ending after
// callTimeout.
func timeout(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(tb.Context(), callTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// hash stands in for a password hash: stores never hash, they store what the
// transport hands them.
const hash = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA"

var users = resourceapi.Users

// user returns an unvalidated record with a name and an email.
func user(name, email string) resourceapi.Record {
	return resourceapi.Record{"name": name, "email": email}
}

// clone copies rec deeply enough that the copy can be changed freely.
func clone(rec resourceapi.Record) resourceapi.Record {
	if rec == nil {
		return nil
	}
	c := maps.Clone(rec)
	for k, v := range c {
		if l, ok := v.([]string); ok {
			c[k] = slices.Clone(l)
		}
	}
	return c
}

// mustValid returns a validated copy of rec for a write in mode.
func mustValid(tb testing.TB, rec resourceapi.Record, mode resourceapi.WriteMode) resourceapi.Record {
	tb.Helper()
	rec = clone(rec)
	if err := resourceapi.Validate(users, rec, mode); err != nil {
		tb.Fatalf("Validate(%v) = %v; the suite's own record is invalid", rec, err)
	}
	return rec
}

func mustCreate(tb testing.TB, s resourceapi.Store, rec resourceapi.Record) resourceapi.Record {
	tb.Helper()
	got, err := s.Create(timeout(tb), users, mustValid(tb, rec, resourceapi.ModeCreate))
	if err != nil {
		tb.Fatalf("Create(%v) error = %v, want nil", rec, err)
	}
	mustShape(tb, got, "Create")
	return got
}

func mustGet(tb testing.TB, s resourceapi.Store, id int64) resourceapi.Record {
	tb.Helper()
	got, err := s.Get(timeout(tb), users, id)
	if err != nil {
		tb.Fatalf("Get(%d) error = %v, want nil", id, err)
	}
	mustShape(tb, got, "Get")
	if got.ID() != id {
		tb.Fatalf("Get(%d) id = %d, want %d", id, got.ID(), id)
	}
	return got
}

func mustReplace(tb testing.TB, s resourceapi.Store, id int64, rec resourceapi.Record) (resourceapi.Record, bool) {
	tb.Helper()
	got, created, err := s.Replace(timeout(tb), users, id, mustValid(tb, rec, resourceapi.ModeReplace), nil)
	if err != nil {
		tb.Fatalf("Replace(%d, %v) error = %v, want nil", id, rec, err)
	}
	mustShape(tb, got, "Replace")
	if got.ID() != id {
		tb.Fatalf("Replace(%d) id = %d, want %d", id, got.ID(), id)
	}
	return got, created
}

func mustUpdate(tb testing.TB, s resourceapi.Store, id int64, patch resourceapi.Record) resourceapi.Record {
	tb.Helper()
	got, err := s.Update(timeout(tb), users, id, mustValid(tb, patch, resourceapi.ModePatch), nil)
	if err != nil {
		tb.Fatalf("Update(%d, %v) error = %v, want nil", id, patch, err)
	}
	mustShape(tb, got, "Update")
	if got.ID() != id {
		tb.Fatalf("Update(%d) id = %d, want %d", id, got.ID(), id)
	}
	return got
}

func mustDelete(tb testing.TB, s resourceapi.Store, id int64) {
	tb.Helper()
	if err := s.Delete(timeout(tb), users, id, nil); err != nil {
		tb.Fatalf("Delete(%d) error = %v, want nil", id, err)
	}
}

// mustList lists with query parameters given as name, value pairs.
func mustList(tb testing.TB, s resourceapi.Store, params ...string) resourceapi.Page {
	tb.Helper()
	q := mustQuery(tb, params...)
	page, err := s.List(timeout(tb), users, q)
	if err != nil {
		tb.Fatalf("List(%v) error = %v, want nil", params, err)
	}
	if len(page.Records) > q.Limit {
		tb.Fatalf("List(%v) returned %d records, want at most the limit %d", params, len(page.Records), q.Limit)
	}
	for _, rec := range page.Records {
		mustShape(tb, rec, "List")
	}
	return page
}

func mustQuery(tb testing.TB, params ...string) resourceapi.ListQuery {
	tb.Helper()
	if len(params)%2 != 0 {
		tb.Fatalf("mustQuery: odd number of parameters %q", params)
	}
	v := url.Values{}
	for i := 0; i < len(params); i += 2 {
		v.Add(params[i], params[i+1])
	}
	q, err := rhttp.ParseListQuery(users, v)
	if err != nil {
		tb.Fatalf("ParseListQuery(%v) = %v; the suite's own query is invalid", v, err)
	}
	return q
}

// mustTotal returns the number of records of every status.
func mustTotal(tb testing.TB, s resourceapi.Store) int {
	tb.Helper()
	return mustList(tb, s, "status", "all").Total
}

// mustUnchanged fails unless the stored record still equals want.
func mustUnchanged(tb testing.TB, s resourceapi.Store, want resourceapi.Record, what string) {
	tb.Helper()
	if d := diff(mustGet(tb, s, want.ID()), want); d != "" {
		tb.Fatalf("after %s, record %d changed: %s", what, want.ID(), d)
	}
}

// mustAbsent fails unless Get(id) reports CodeNotFound.
func mustAbsent(tb testing.TB, s resourceapi.Store, id int64, what string) {
	tb.Helper()
	rec, err := s.Get(timeout(tb), users, id)
	if got := resourceapi.ErrorCode(err); got != resourceapi.CodeNotFound {
		tb.Fatalf("after %s, Get(%d) = %v, %v; code = %q, want %q", what, id, rec, err, got, resourceapi.CodeNotFound)
	}
}

// mustCode fails unless err carries code.
func mustCode(tb testing.TB, err error, code resourceapi.Code, what string) {
	tb.Helper()
	if got := resourceapi.ErrorCode(err); got != code {
		tb.Fatalf("%s error = %v (code %q), want code %q", what, err, got, code)
	}
	if leak := leaks(resourceapi.ErrorOf(err).Message); leak != "" {
		tb.Fatalf("%s error message %q reveals the database (%q); it reaches clients", what, resourceapi.ErrorOf(err).Message, leak)
	}
}

// leaks returns a word of msg that only a database would say, or "".
func leaks(msg string) string {
	lower := strings.ToLower(msg)
	for _, w := range []string{"sql", "constraint", "duplicate key", "violates", "pq:", "pgx", "syntax error"} {
		if strings.Contains(lower, w) {
			return w
		}
	}
	return ""
}

// mustSame fails unless got and want hold the same fields and values.
func mustSame(tb testing.TB, got, want resourceapi.Record, what string) {
	tb.Helper()
	if d := diff(got, want); d != "" {
		tb.Fatalf("%s: %s", what, d)
	}
}

// mustShape fails unless rec is a well-formed user as stores return it: the
// visible fields exactly, with values of the declared types.
func mustShape(tb testing.TB, rec resourceapi.Record, what string) {
	tb.Helper()
	if problems := shape(rec); len(problems) > 0 {
		tb.Fatalf("%s returned a malformed record %s: %s", what, show(rec), strings.Join(problems, "; "))
	}
}

func shape(rec resourceapi.Record) []string { return shapeOf(users, rec) }

// diff returns how got differs from want, or "" when they hold the same fields
// with equal values (timestamps compared as instants).
func diff(got, want resourceapi.Record) string {
	if got == nil || want == nil {
		if got == nil && want == nil {
			return ""
		}
		return fmt.Sprintf("record = %s, want %s", show(got), show(want))
	}
	names := slices.Sorted(maps.Keys(got))
	for name := range want {
		if _, ok := got[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		g, gok := got[name]
		w, wok := want[name]
		switch {
		case !gok:
			out = append(out, fmt.Sprintf("%s missing, want %s", name, showValue(w)))
		case !wok:
			out = append(out, fmt.Sprintf("%s = %s, want no such field", name, showValue(g)))
		case !equalValue(g, w):
			out = append(out, fmt.Sprintf("%s = %s, want %s", name, showValue(g), showValue(w)))
		}
	}
	return strings.Join(out, "; ")
}

func equalValue(a, b any) bool {
	switch a := a.(type) {
	case time.Time:
		b, ok := b.(time.Time)
		return ok && a.Equal(b)
	case []string:
		b, ok := b.([]string)
		return ok && slices.Equal(a, b)
	}
	return reflect.DeepEqual(a, b)
}

func show(rec resourceapi.Record) string {
	if rec == nil {
		return "nil"
	}
	parts := make([]string, 0, len(rec))
	for _, name := range slices.Sorted(maps.Keys(rec)) {
		parts = append(parts, name+":"+showValue(rec[name]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func showValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("%q", v)
	case time.Time:
		return v.Format(time.RFC3339Nano) + "(" + v.Location().String() + ")"
	case []string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%v(%T)", v, v)
}

func ids(recs []resourceapi.Record) []int64 {
	out := make([]int64, len(recs))
	for i, rec := range recs {
		out[i] = rec.ID()
	}
	return out
}

func timeOf(tb testing.TB, rec resourceapi.Record, name string) time.Time {
	tb.Helper()
	t, ok := rec[name].(time.Time)
	if !ok {
		tb.Fatalf("%s = %v, want a time.Time", name, rec[name])
	}
	return t
}

// window brackets a store call with wall-clock readings, so that the suite can
// tell a store that follows real time from one that runs on a test clock.
type window struct{ from, to time.Time }

func start() window { return window{from: time.Now()} }

func (w window) end() window { w.to = time.Now(); return w }

// holds reports whether t, as a store stamps it, lies within the window.
func (w window) holds(t time.Time) bool {
	return !t.Before(resourceapi.Timestamp(w.from)) && !t.After(w.to)
}

// mustStamp checks a write's timestamps. created is the record as first stored
// (nil when rec was just created), prev the record before this write (nil when
// rec was just created). wall says whether the store follows the wall clock.
func mustStamp(tb testing.TB, rec, created, prev resourceapi.Record, w window, wall bool, what string) {
	tb.Helper()
	ca, ua := timeOf(tb, rec, "created_at"), timeOf(tb, rec, "updated_at")
	if created == nil {
		if !ca.Equal(ua) {
			tb.Fatalf("%s: created_at = %s, updated_at = %s, want them equal on insert", what, showValue(ca), showValue(ua))
		}
	} else if want := timeOf(tb, created, "created_at"); !ca.Equal(want) {
		tb.Fatalf("%s: created_at = %s, want it unchanged at %s", what, showValue(ca), showValue(want))
	}
	if prev != nil {
		if old := timeOf(tb, prev, "updated_at"); ua.Before(old) {
			tb.Fatalf("%s: updated_at = %s, want at least the previous %s", what, showValue(ua), showValue(old))
		}
	}
	if wall && !w.holds(ua) {
		tb.Fatalf("%s: updated_at = %s, want the time of the call, between %s and %s", what, showValue(ua),
			showValue(w.from.Round(0).UTC()), showValue(w.to.Round(0).UTC()))
	}
}

// followsWallClock creates a user and reports whether its timestamps are the
// wall-clock time of the call; it returns the created record too.
func followsWallClock(tb testing.TB, s resourceapi.Store, rec resourceapi.Record) (resourceapi.Record, bool) {
	tb.Helper()
	w := start()
	got := mustCreate(tb, s, rec)
	w = w.end()
	return got, w.holds(timeOf(tb, got, "created_at"))
}
