package storetest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/storetest"
)

// TestMemStore shows that a store keeping the contract passes the suite, on
// the wall clock and on a test clock.
func TestMemStore(t *testing.T) {
	t.Run("WallClock", func(t *testing.T) {
		storetest.TestStore(t, func(t *testing.T) resourceapi.Store { return newMemStore(time.Now) })
	})
	t.Run("TestClock", func(t *testing.T) {
		clock := storetest.NewClock(time.Date(2026, 11, 21, 5, 7, 37, 123456789, time.UTC), time.Millisecond)
		storetest.TestStore(t, func(t *testing.T) resourceapi.Store { return newMemStore(clock.Now) })
	})
}

// mutants maps each defect the memStore can be given to a subtest of the suite
// that must fail because of it.
var mutants = map[string]string{
	"returns-password":            "Create/ReturnsStoredRecord",
	"no-defaults":                 "Create/AppliesDefaults",
	"nanosecond-local-time":       "Create/ReturnsStoredRecord",
	"frozen-updated-at":           "Update/OnlyPresentFieldsChange",
	"case-sensitive-unique":       "Unique/Create",
	"deleted-frees-unique":        "Unique/SoftDeletedKeepsEmail",
	"reuse-ids":                   "Create/IDsIncrease",
	"put-moves-sequence":          "MaxID/AfterReplaceOfMaxID",
	"no-skip":                     "MaxID/AfterReplaceOfRunAhead",
	"ties-ascending":              "List/Sort/name/desc",
	"nulls-last":                  "List/Sort/age/asc",
	"like-wildcards":              "List/Search/underscore_between_letters",
	"ascii-case-folding":          "List/Search/non-ASCII_upper",
	"ignore-condition":            "Condition/Update/ErrorAborts",
	"wrap-condition-error":        "Condition/Delete/ErrorAborts",
	"no-retain":                   "Retain/LastAdmin/Delete",
	"retain-counts-deleted":       "Retain/SoftDeletedAdminDoesNotCount",
	"racy-retain":                 "Concurrency/LastAdminRace",
	"racy-replace":                "Concurrency/ReplacesOfAbsentID",
	"partial-writes":              "Atomicity/ConflictingUpdateChangesNoField",
	"ignore-context":              "Context/Canceled",
	"cached-reads-ignore-context": "Context/Canceled",
	"late-cancel":                 "Context/CanceledDuringWrites",
	"dangling-references":         "Resources/reviews/References",
	"items-dropped":               "Resources/Items/orders.items",
	"no-cascade":                  "Resources/Cascade/users",
	"no-restrict":                 "Resources/Cascade/products",
	"stale-cascade-cache":         "Resources/Cascade/articles",
	"ids-come-back":               "Credentials/RetiredIDs/posts",
}

// TestMutants runs the suite against memStores with one defect each, in a
// child process, and checks that the suite fails where it should.
func TestMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per mutant")
	}
	for bug, subtest := range mutants {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_MUTANT="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store with bug %q", bug)
			}
			if want := "--- FAIL: TestMutant/" + subtest; !strings.Contains(string(out), want) {
				t.Fatalf("bug %q: output lacks %q:\n%s", bug, want, out)
			}
		})
	}
}

// TestMutant is TestMutants' child: it runs the suite against a memStore with
// the defect named by STORETEST_MUTANT.
func TestMutant(t *testing.T) {
	bug := os.Getenv("STORETEST_MUTANT")
	if bug == "" {
		t.Skip("run by TestMutants")
	}
	storetest.TestStore(t, func(t *testing.T) resourceapi.Store { return newMemStore(time.Now, bug) })
}
