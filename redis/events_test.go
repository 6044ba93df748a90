package redis_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// userEvent returns event id with a user record.
func userEvent(id int64) resourceapi.Event {
	at := time.Date(2026, 11, 22, 12, 0, 0, int(id%1000)*int(time.Millisecond), time.UTC)
	return resourceapi.Event{ID: id, Name: "users.created", Alias: "userCreated", Actor: id % 7, Resource: "users", At: at, Record: resourceapi.Record{
		"id": id, "name": "Ann", "email": fmt.Sprintf("ann%d@example.com", id), "age": nil,
		"roles": []string{"user"}, "permissions": []string{}, "created_at": at, "updated_at": at, "deleted": false,
	}}
}

// follow follows s into a channel until the test ends.
func follow(t *testing.T, s *redis.Stream) (*redis.Follower, <-chan resourceapi.Event) {
	t.Helper()
	ch := make(chan resourceapi.Event, 10000)
	f, err := s.Follow(context.Background(), publisherFunc(func(_ context.Context, evs []resourceapi.Event) error {
		for _, ev := range evs {
			ch <- ev
		}
		return nil
	}))
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	t.Cleanup(f.Close)
	return f, ch
}

// publisherFunc is a resourceapi.Publisher of a function.
type publisherFunc func(context.Context, []resourceapi.Event) error

func (f publisherFunc) Publish(ctx context.Context, evs []resourceapi.Event) error {
	return f(ctx, evs)
}

// mustReceive waits at most 10 s for each of the events with the given ids,
// in order, and checks that nothing else came first.
func mustReceive(t *testing.T, ch <-chan resourceapi.Event, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		select {
		case ev := <-ch:
			if want := userEvent(id); !reflect.DeepEqual(ev, want) {
				t.Fatalf("received\n%#v\nwant\n%#v", ev, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not received within 10s", id)
		}
	}
}

func mustPublish(t *testing.T, s *redis.Stream, ids ...int64) {
	t.Helper()
	var evs []resourceapi.Event
	for _, id := range ids {
		evs = append(evs, userEvent(id))
	}
	if err := s.Publish(context.Background(), evs); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

// TestStream has one instance publish and two follow: both read every
// event, whole and in order, from the stream's end when they started.
func TestStream(t *testing.T) {
	c := redistest.NewClient(t)
	key := redistest.Prefix(t, c) + "events"
	pub := redis.NewStream(c, redis.StreamOptions{Key: key})
	mustPublish(t, pub, 1, 2) // before anyone follows: not delivered
	_, a := follow(t, redis.NewStream(redistest.NewClient(t), redis.StreamOptions{Key: key}))
	_, b := follow(t, redis.NewStream(redistest.NewClient(t), redis.StreamOptions{Key: key}))
	mustPublish(t, pub, 3, 4, 5)
	mustPublish(t, pub, 6)
	mustReceive(t, a, 3, 4, 5, 6)
	mustReceive(t, b, 3, 4, 5, 6)

	// An entry that is not an event (written by something else) is
	// skipped; what follows it still arrives.
	if err := c.XAdd(context.Background(), &goredis.XAddArgs{Stream: key, Values: []any{"junk", "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, pub, 7)
	mustReceive(t, a, 7)
}

// TestStreamIsCapped publishes far more events than MaxLen: the stream
// keeps about MaxLen (trimming is approximate, by whole nodes of 100).
func TestStreamIsCapped(t *testing.T) {
	c := redistest.NewClient(t)
	key := redistest.Prefix(t, c) + "events"
	s := redis.NewStream(c, redis.StreamOptions{Key: key, MaxLen: 200})
	for i := range 20 {
		var ids []int64
		for j := range 100 {
			ids = append(ids, int64(i*100+j+1))
		}
		mustPublish(t, s, ids...)
	}
	n, err := c.XLen(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 || n > 400 {
		t.Fatalf("stream holds %d entries after 2000 events with MaxLen 200, want 200 to 400", n)
	}
}

// TestStreamReset replaces the stream under a follower by one whose entry
// ids come before the follower's position (what a Redis whose clock went
// back, or a replica with older data, would hand out): within a Block the
// follower reads the new stream from its start.
func TestStreamReset(t *testing.T) {
	c := redistest.NewClient(t)
	key := redistest.Prefix(t, c) + "events"
	s := redis.NewStream(c, redis.StreamOptions{Key: key, Block: 50 * time.Millisecond})
	f, ch := follow(t, s)
	mustPublish(t, s, 1)
	mustReceive(t, ch, 1)
	ctx := context.Background()
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	ev := userEvent(2)
	if err := c.XAdd(ctx, &goredis.XAddArgs{Stream: key, ID: "1-1", Values: []any{
		"id", ev.ID, "name", ev.Name, "alias", ev.Alias, "actor", ev.Actor, "resource", ev.Resource, "at", ev.At.UnixMilli(), "record", mustMarshal(t, ev),
	}}).Err(); err != nil {
		t.Fatal(err)
	}
	mustReceive(t, ch, 2)
	if got := f.Resets(); got != 1 {
		t.Fatalf("Resets() = %d, want 1", got)
	}
}

func mustMarshal(t *testing.T, ev resourceapi.Event) string {
	t.Helper()
	b, err := resourceapi.MarshalRecord(resourceapi.Users, ev.Record)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStreamRedisRestarts kills a private Redis under a follower and a
// publisher and starts it again, empty: publishing fails while it is down,
// and once it is back, what is published reaches the follower.
func TestStreamRedisRestarts(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := context.Background()
	mustOpen := func() *goredis.Client {
		c, err := redis.Open(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	opts := redis.StreamOptions{Timeout: 500 * time.Millisecond, Block: 100 * time.Millisecond}
	pub := redis.NewStream(mustOpen(), opts)
	_, ch := follow(t, redis.NewStream(mustOpen(), opts))
	mustPublish(t, pub, 1)
	mustReceive(t, ch, 1)

	srv.Stop()
	if err := pub.Publish(ctx, []resourceapi.Event{userEvent(2)}); err == nil {
		t.Fatal("Publish while Redis is down = nil, want an error")
	}
	srv.Start()
	// The publisher's and the follower's clients reconnect by themselves;
	// a publish may fail until the publisher's has.
	deadline := time.Now().Add(10 * time.Second)
	for pub.Publish(ctx, []resourceapi.Event{userEvent(3)}) != nil {
		if time.Now().After(deadline) {
			t.Fatal("Publish still fails 10s after Redis restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustReceive(t, ch, 3)
}
