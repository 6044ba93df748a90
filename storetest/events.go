package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// testEvents checks the outbox of a store that keeps one
// (resourceapi.Outbox): every write whose resource declares an event records
// it with the record as committed, in the write's own transaction; a failed
// write records none; the outbox hands events out in id order, once, until
// published, and purges only published ones.
func testEvents(t *testing.T, open opener) {
	outbox := func(t *testing.T) (resourceapi.Store, resourceapi.Outbox) {
		t.Helper()
		s := open(t)
		ob, ok := s.(resourceapi.Outbox)
		if !ok {
			t.Skip("the store keeps no outbox (resourceapi.Outbox)")
		}
		return s, ob
	}
	t.Run("Writes", func(t *testing.T) {
		s, ob := outbox(t)
		ann := mustCreate(t, s, user("Ann", "ann@example.com"))
		mustEvents(t, ob, want("users.created", "userCreated", users, ann))

		// Every write publishes: an update, a replace, a delete, each with
		// the record as committed (as it was, for a delete) and the actor
		// the rule layer put in the context.
		anne, err := s.Update(resourceapi.WithActor(timeout(t), &resourceapi.Caller{UserID: ann.ID()}), users, ann.ID(),
			mustValid(t, resourceapi.Record{"name": "Anne"}, resourceapi.ModePatch), nil)
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		updated := want("users.updated", "", users, anne)
		updated.Actor = ann.ID()
		replaced, _ := mustReplace(t, s, ann.ID(), user("Anne", "ann@example.com"))
		bob := mustCreate(t, s, user("Bob", "bob@example.com"))
		mustDelete(t, s, bob.ID())
		deleted := want("users.deleted", "", users, bob)
		deleted.At = time.Time{} // the delete's own time
		mustEvents(t, ob, updated, want("users.updated", "", users, replaced),
			want("users.created", "userCreated", users, bob), deleted)

		// A soft delete is a delete, a restore a create (without the alias:
		// userCreated is of new users).
		gone := mustUpdate(t, s, ann.ID(), resourceapi.Record{"deleted": true})
		back := mustUpdate(t, s, ann.ID(), resourceapi.Record{"deleted": false})
		mustEvents(t, ob, want("users.deleted", "", users, gone), want("users.created", "", users, back))

		// A PUT that creates publishes what a POST would.
		put, created := mustReplace(t, s, 900, user("Put", "put@example.com"))
		if !created {
			t.Fatal("Replace of an absent id did not create")
		}
		mustEvents(t, ob, want("users.created", "userCreated", users, put))

		// Posts alias postCreated; products have no alias.
		post := mustValidOf(t, resourceapi.Posts, resourceapi.Record{"author_id": ann.ID(), "title": "Hello", "content": "World"})
		p, err := s.Create(timeout(t), resourceapi.Posts, post)
		if err != nil {
			t.Fatalf("Create post: %v", err)
		}
		product := mustValidOf(t, resourceapi.Products, resourceapi.Products.Example(1))
		pr, err := s.Create(timeout(t), resourceapi.Products, product)
		if err != nil {
			t.Fatalf("Create product: %v", err)
		}
		mustEvents(t, ob, want("posts.created", "postCreated", resourceapi.Posts, p),
			want("products.created", "", resourceapi.Products, pr))

		// Failed writes record nothing: a conflict, a reference to nobody,
		// a Condition's refusal, a done context.
		if _, err := s.Create(timeout(t), users, mustValid(t, user("Dup", "ANN@example.com"), resourceapi.ModeCreate)); err == nil {
			t.Fatal("Create with a taken email succeeded")
		}
		bad := mustValidOf(t, resourceapi.Posts, resourceapi.Record{"author_id": int64(424242), "title": "Ghost", "content": "x"})
		if _, err := s.Create(timeout(t), resourceapi.Posts, bad); err == nil {
			t.Fatal("Create of a post by no user succeeded")
		}
		refuse := errors.New("refused")
		if _, _, err := s.Replace(timeout(t), users, 901, mustValid(t, user("Cond", "cond@example.com"), resourceapi.ModeReplace),
			func(resourceapi.Record) error { return refuse }); !errors.Is(err, refuse) {
			t.Fatalf("Replace with a refusing Condition = %v, want its error", err)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Create(done, users, mustValid(t, user("Late", "late@example.com"), resourceapi.ModeCreate)); err == nil {
			t.Fatal("Create with a done context succeeded")
		}
		mustEvents(t, ob)
	})

	t.Run("Publish", func(t *testing.T) {
		s, ob := outbox(t)
		var recs []resourceapi.Record
		for i := range 5 {
			recs = append(recs, mustCreate(t, s, user("P", fmt.Sprintf("p%d@example.com", i))))
		}
		// A publisher that fails leaves the events unpublished, to be
		// handed out again, the same ones.
		var failed []resourceapi.Event
		broken := errors.New("engine down")
		n, err := ob.PublishEvents(timeout(t), 3, func(_ context.Context, evs []resourceapi.Event) error {
			failed = append(failed, evs...)
			return broken
		})
		if !errors.Is(err, broken) || n != 0 {
			t.Fatalf("PublishEvents with a failing publisher = %d, %v; want 0 and its error", n, err)
		}
		// Batches of 2 hand out every event once, in id order.
		var got []resourceapi.Event
		for range 4 {
			got = append(got, mustPublish(t, ob, 2)...)
		}
		if len(got) != 5 {
			t.Fatalf("published %d events in batches, want 5", len(got))
		}
		for i, ev := range got {
			if i > 0 && ev.ID <= got[i-1].ID {
				t.Fatalf("event ids %d then %d: not increasing", got[i-1].ID, ev.ID)
			}
			if ev.Record.ID() != recs[i].ID() {
				t.Fatalf("event %d is of record %d, want %d (creation order)", i, ev.Record.ID(), recs[i].ID())
			}
		}
		if len(failed) != 3 || failed[0].ID != got[0].ID || failed[2].ID != got[2].ID {
			t.Fatalf("after a failed publish, got events %v, want the same first three as %v", eventIDs(got), eventIDs(failed))
		}

		// Purge deletes published events before the time, at most limit
		// at a time, and never an unpublished one.
		pending := mustCreate(t, s, user("Pending", "pending@example.com"))
		past, future := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, c := range []struct {
			before time.Time
			limit  int
			want   int
		}{{past, 10, 0}, {future, 2, 2}, {future, 10, 3}, {future, 10, 0}} {
			n, err := ob.PurgeEvents(timeout(t), c.before, c.limit)
			if err != nil || n != c.want {
				t.Fatalf("PurgeEvents(%v, %d) = %d, %v; want %d", c.before, c.limit, n, err, c.want)
			}
		}
		// The log reads back what the outbox keeps, published or not, and
		// says up to which id the purge deleted. It reads final events
		// only: where ids may commit out of order (PostgreSQL), those up to
		// the horizon that a relay's attempt establishes before it
		// publishes, even an attempt that fails.
		if log, ok := s.(resourceapi.EventLog); ok {
			if _, err := ob.PublishEvents(timeout(t), 10, func(context.Context, []resourceapi.Event) error { return broken }); !errors.Is(err, broken) {
				t.Fatalf("PublishEvents with a failing publisher: %v; want its error", err)
			}
			through, err := log.PurgedThrough(timeout(t))
			if err != nil || through != got[len(got)-1].ID {
				t.Fatalf("PurgedThrough = %d, %v; want %d, the last event purged", through, err, got[len(got)-1].ID)
			}
			kept, err := log.EventsAfter(timeout(t), 0, 10)
			if err != nil || len(kept) != 1 || kept[0].Record.ID() != pending.ID() || kept[0].Name != "users.created" {
				t.Fatalf("EventsAfter(0) = %v, %v; want the pending event only", kept, err)
			}
			if after, err := log.EventsAfter(timeout(t), kept[0].ID, 10); err != nil || len(after) != 0 {
				t.Fatalf("EventsAfter(the last) = %v, %v; want none", after, err)
			}
		}
		mustEvents(t, ob, want("users.created", "userCreated", users, pending))
	})

	t.Run("Signal", func(t *testing.T) {
		s, ob := outbox(t)
		wake := ob.EventsWritten()
		select { // a wake-up from an earlier write (the store's set-up) does not count
		case <-wake:
		default:
		}
		mustCreate(t, s, user("S", "s@example.com"))
		select {
		case <-wake:
		case <-time.After(10 * time.Second):
			t.Fatal("no value on EventsWritten within 10s of a create that recorded an event")
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		s, ob := outbox(t)
		const writers = 40
		var mu sync.Mutex
		created := map[int64]resourceapi.Record{}
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range writers {
			in := mustValid(t, user("C", fmt.Sprintf("c%d@example.com", i)), resourceapi.ModeCreate)
			wg.Go(func() {
				<-gate
				rec, err := s.Create(timeout(t), users, in)
				if err != nil {
					t.Errorf("concurrent Create: %v", err)
					return
				}
				mu.Lock()
				created[rec.ID()] = rec
				mu.Unlock()
			})
		}
		// Relays publish while the writes commit.
		var published []resourceapi.Event
		stop := make(chan struct{})
		relays := sync.WaitGroup{}
		relays.Go(func() {
			for {
				_, err := ob.PublishEvents(timeout(t), 7, func(_ context.Context, evs []resourceapi.Event) error {
					published = append(published, evs...)
					return nil
				})
				if err != nil {
					t.Errorf("PublishEvents during concurrent creates: %v", err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
		close(gate)
		wg.Wait()
		close(stop)
		relays.Wait()
		published = append(published, mustPublish(t, ob, 100)...)
		seen := map[int64]bool{}
		for _, ev := range published {
			rec, ok := created[ev.Record.ID()]
			if !ok || seen[ev.ID] || !reflect.DeepEqual(ev.Record, Shown(users, rec)) {
				t.Fatalf("event %d (%v): not one of the created records, or published twice", ev.ID, ev.Record)
			}
			seen[ev.ID] = true
			delete(created, ev.Record.ID())
		}
		if len(created) != 0 {
			t.Fatalf("%d committed creates have no event", len(created))
		}
	})
}

// mustValidOf returns a validated copy of rec for a create of res.
func mustValidOf(tb testing.TB, res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Record {
	tb.Helper()
	rec = clone(rec)
	if err := resourceapi.Validate(res, rec, resourceapi.ModeCreate); err != nil {
		tb.Fatalf("Validate(%s, %v) = %v; the suite's own record is invalid", res.Name, rec, err)
	}
	return rec
}

// want is an expected event, without the id the store assigns.
func want(name, alias string, res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Event {
	at, _ := rec["updated_at"].(time.Time)
	return resourceapi.Event{Name: name, Alias: alias, Resource: res.Name, Record: Shown(res, rec), At: at}
}

// Shown returns rec as an event carries it: without the internal fields
// that only the rule layer reads.
func Shown(res *resourceapi.Resource, rec resourceapi.Record) resourceapi.Record {
	out := rec.Clone()
	for _, f := range res.Fields {
		if f.Internal {
			delete(out, f.Name)
		}
	}
	return out
}

// mustPublish publishes at most limit events into a slice.
func mustPublish(tb testing.TB, ob resourceapi.Outbox, limit int) []resourceapi.Event {
	tb.Helper()
	var got []resourceapi.Event
	n, err := ob.PublishEvents(timeout(tb), limit, func(_ context.Context, evs []resourceapi.Event) error {
		got = append(got, evs...)
		return nil
	})
	if err != nil {
		tb.Fatalf("PublishEvents: %v", err)
	}
	if n != len(got) || n > limit {
		tb.Fatalf("PublishEvents = %d, handed out %d (limit %d)", n, len(got), limit)
	}
	return got
}

// mustEvents publishes every pending event and checks they are wants, in
// order (ids ignored, but increasing).
func mustEvents(tb testing.TB, ob resourceapi.Outbox, wants ...resourceapi.Event) {
	tb.Helper()
	got := mustPublish(tb, ob, 100)
	if len(got) != len(wants) {
		tb.Fatalf("pending events %v, want %d", got, len(wants))
	}
	for i, ev := range got {
		w := wants[i]
		w.ID = ev.ID
		if w.At.IsZero() && !ev.At.IsZero() {
			w.At = ev.At // a delete's own time
		}
		if ev.ID <= 0 || !reflect.DeepEqual(ev, w) {
			tb.Fatalf("event %d =\n%#v\nwant\n%#v", i, ev, w)
		}
	}
	if again := mustPublish(tb, ob, 100); len(again) != 0 {
		tb.Fatalf("events %v handed out again after they were published", eventIDs(again))
	}
}

func eventIDs(evs []resourceapi.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}
