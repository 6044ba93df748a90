package storetest

import (
	"testing"

	"github.com/resourceapi/resourceapi"
)

// testPrerequisites checks Create with prerequisites (an OAuth client and
// its service user): the records are created in one transaction, each
// prerequisite's id set into the field its Link names, and a failure of any
// of them leaves none.
func testPrerequisites(t *testing.T, open opener) {
	post := func(title string) resourceapi.Record {
		// author_id is set from the prerequisite; Validate needs one now.
		return mustValidOf(t, resourceapi.Posts, resourceapi.Record{"title": title, "content": "Text", "author_id": int64(1)})
	}
	author := func(email string) resourceapi.Prerequisite {
		return resourceapi.Prerequisite{Resource: users, Record: mustValid(t, user("Author", email), resourceapi.ModeCreate), Link: "author_id"}
	}
	count := func(t *testing.T, s resourceapi.Store, res *resourceapi.Resource) int {
		t.Helper()
		return mustListOf(t, s, res).Total
	}

	t.Run("CreatedTogether", func(t *testing.T) {
		s := open(t)
		mustCreate(t, s, user("First", "first@example.com")) // the prerequisite's id is not 1
		got, err := s.Create(timeout(t), resourceapi.Posts, post("Linked"), author("author@example.com"))
		if err != nil {
			t.Fatalf("Create with a prerequisite: %v", err)
		}
		id, _ := got["author_id"].(int64)
		if id == 1 {
			t.Fatalf("author_id = 1: the prerequisite's id was not set into the record")
		}
		u, err := s.Get(timeout(t), users, id)
		if err != nil || u["email"] != "author@example.com" {
			t.Fatalf("Get(users, %d) = %v, %v; want the prerequisite", id, u, err)
		}
	})

	t.Run("PrerequisiteFailsNothingCreated", func(t *testing.T) {
		s := open(t)
		mustCreate(t, s, user("Taken", "taken@example.com"))
		_, err := s.Create(timeout(t), resourceapi.Posts, post("Orphan"), author("taken@example.com"))
		mustCode(t, err, resourceapi.CodeConflict, "Create with a prerequisite whose email is taken")
		if n := count(t, s, resourceapi.Posts); n != 0 {
			t.Fatalf("%d posts after a failed prerequisite, want 0", n)
		}
	})

	t.Run("RecordFailsPrerequisiteUndone", func(t *testing.T) {
		s := open(t)
		mustCreate(t, s, user("Taken", "taken@example.com"))
		// The record itself conflicts once its prerequisite is created: a
		// user whose email is taken, linked to its prerequisite by age.
		rec := mustValid(t, user("Again", "taken@example.com"), resourceapi.ModeCreate)
		pre := resourceapi.Prerequisite{Resource: users, Record: mustValid(t, user("Pre", "pre@example.com"), resourceapi.ModeCreate), Link: "age"}
		_, err := s.Create(timeout(t), users, rec, pre)
		mustCode(t, err, resourceapi.CodeConflict, "Create of a conflicting record with a prerequisite")
		if n := count(t, s, users); n != 1 {
			t.Fatalf("%d users after the record failed, want 1: its prerequisite stayed", n)
		}
	})
}
