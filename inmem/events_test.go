package inmem_test

import (
	"context"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
)

func TestHub(t *testing.T) {
	h := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := h.Subscribe(ctx, "userCreated", 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Subscribe(context.Background(), "userCreated", 4)
	posts, _ := h.Subscribe(context.Background(), "postCreated", 4)

	h.Deliver(resourceapi.Event{ID: 1, Name: "userCreated"})
	h.Deliver(resourceapi.Event{ID: 1, Name: "userCreated"}) // a redelivery
	h.Deliver(resourceapi.Event{ID: 2, Name: "postCreated"})
	for _, ch := range []<-chan resourceapi.Event{a, b} {
		if ev := <-ch; ev.ID != 1 {
			t.Fatalf("got event %d, want 1", ev.ID)
		}
		if len(ch) != 0 {
			t.Fatalf("a redelivered event arrived twice")
		}
	}
	if ev := <-posts; ev.ID != 2 {
		t.Fatalf("posts got %d", ev.ID)
	}

	// Ending the subscriber's context closes its channel.
	cancel()
	if _, open := <-a; open {
		t.Fatal("channel still open after its context ended")
	}
	if n := h.Subscribers("userCreated"); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}

	// A subscriber that falls behind is dropped; the others are not held up.
	fast, _ := h.Subscribe(context.Background(), "userCreated", 100)
	for id := int64(10); id < 20; id++ {
		h.Deliver(resourceapi.Event{ID: id, Name: "userCreated"})
	}
	n := 0
	for range b { // b had room for 4: it gets those, then is closed
		n++
	}
	if n != 4 || h.Dropped() != 1 {
		t.Fatalf("slow subscriber got %d events before it was dropped (%d dropped), want 4 and 1", n, h.Dropped())
	}
	if len(fast) != 10 {
		t.Fatalf("fast subscriber has %d events, want 10", len(fast))
	}

	// Close ends everything and refuses new subscriptions.
	h.Close()
	if _, open := <-posts; open {
		t.Fatal("subscription open after Close")
	}
	if _, err := h.Subscribe(context.Background(), "userCreated", 1); err == nil {
		t.Fatal("Subscribe after Close succeeded")
	}
}

func TestHubDedupeWindow(t *testing.T) {
	h := inmem.NewHub()
	ch, _ := h.Subscribe(context.Background(), "e", 1<<17)
	for id := int64(1); id <= 70000; id++ {
		h.Deliver(resourceapi.Event{ID: id, Name: "e"})
	}
	h.Deliver(resourceapi.Event{ID: 70000, Name: "e"}) // recent: a duplicate
	h.Deliver(resourceapi.Event{ID: 2, Name: "e"})     // long forgotten: delivered again
	if len(ch) != 70001 {
		t.Fatalf("%d events delivered, want 70001", len(ch))
	}
}

// TestHubPublish checks the hub as the publisher of a single instance: a
// batch reaches subscribers in order, a republished batch does not, and a
// closed hub refuses, so that the relay leaves the events unpublished.
func TestHubPublish(t *testing.T) {
	h := inmem.NewHub()
	ch, err := h.Subscribe(context.Background(), "userCreated", 8)
	if err != nil {
		t.Fatal(err)
	}
	batch := []resourceapi.Event{{ID: 1, Name: "userCreated"}, {ID: 2, Name: "postCreated"}, {ID: 3, Name: "userCreated"}}
	for range 2 {
		if err := h.Publish(context.Background(), batch); err != nil {
			t.Fatalf("Publish = %v, want nil", err)
		}
	}
	for _, want := range []int64{1, 3} {
		if ev := <-ch; ev.ID != want {
			t.Fatalf("got event %d, want %d", ev.ID, want)
		}
	}
	if len(ch) != 0 {
		t.Fatalf("%d events more than published once", len(ch))
	}
	h.Close()
	if err := h.Publish(context.Background(), batch); err == nil {
		t.Fatal("Publish on a closed hub = nil, want an error")
	}
}

// TestHubAliasAndAll: an event reaches the listeners of its type, of its
// alias (GraphQL's first subscriptions) and of every event, each once.
func TestHubAliasAndAll(t *testing.T) {
	h := inmem.NewHub()
	defer h.Close()
	ctx := t.Context()
	byType, err := h.Subscribe(ctx, "users.created", 4)
	if err != nil {
		t.Fatal(err)
	}
	byAlias, _ := h.Subscribe(ctx, "userCreated", 4)
	all, _ := h.Subscribe(ctx, resourceapi.AllEvents, 4)
	other, _ := h.Subscribe(ctx, "users.deleted", 4)
	h.Deliver(resourceapi.Event{ID: 1, Name: "users.created", Alias: "userCreated", Resource: "users"})
	h.Deliver(resourceapi.Event{ID: 2, Name: "posts.updated", Resource: "posts"})
	for name, c := range map[string]struct {
		ch   <-chan resourceapi.Event
		want []int64
	}{"type": {byType, []int64{1}}, "alias": {byAlias, []int64{1}}, "all": {all, []int64{1, 2}}, "other": {other, nil}} {
		var got []int64
		for len(c.ch) > 0 {
			got = append(got, (<-c.ch).ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("listener of the %s got %v, want %v", name, got, c.want)
		}
	}
}
