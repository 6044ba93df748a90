package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// TestSubscriberHearsABurst is the reproduction of a burst on PostgreSQL and
// Redis: two instances with their relays off, 60 creates through one while a
// GraphQL subscriber listens on the other over a real WebSocket; then a
// third instance, its relay on, starts and publishes the 60 together. The
// subscriber receives every one of them, once, in order, and stays
// connected.
func TestSubscriberHearsABurst(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three instances")
	}
	pg := pgtest.NewDatabase(t)
	rds := redistest.StartServer(t)
	common := []string{"RESOURCEAPI_DATABASE_URL=" + pg, "RESOURCEAPI_REDIS_URL=" + rds.URL, "RESOURCEAPI_EVENTS_POLL=100ms"}
	relayOff := append(common[:len(common):len(common)], "RESOURCEAPI_EVENTS_RELAY=off")
	writer := startInProcess(t, relayOff...)
	key := printedKey.FindStringSubmatch(writer.log.String())
	if key == nil {
		t.Fatalf("the first start printed no API key:\n%s", writer.log)
	}
	subscriber := startInProcess(t, relayOff...)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(subscriber.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.CloseNow()
	send := func(m string) {
		t.Helper()
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	read := func() (typ string, payload json.RawMessage) {
		t.Helper()
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v (close status %d)", err, websocket.CloseStatus(err))
			}
			var m struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("message %s: %v", b, err)
			}
			if m.Type != "ping" {
				return m.Type, m.Payload
			}
		}
	}
	send(fmt.Sprintf(`{"type":"connection_init","payload":{"X-API-Key":%q}}`, key[1]))
	if typ, _ := read(); typ != "connection_ack" {
		t.Fatalf("message %s, want connection_ack", typ)
	}
	send(`{"id":"1","type":"subscribe","payload":{"query":"subscription { userCreated { email } }"}}`)
	// Nothing answers a subscribe until an event comes: wait until the
	// instance's hub counts it.
	waitSubscribers(t, subscriber, 1)

	const n = 60
	for i := range n {
		mustCreate(t, writer.URL, key[1], "/api/users", userBody(fmt.Sprintf("burst%02d@example.com", i)))
	}
	startInProcess(t, common...) // its relay publishes the 60 at once
	for i := 0; i < n; i++ {
		typ, payload := read()
		if typ == "next" && strings.Contains(string(payload), "admin@localhost") {
			i-- // the first start's admin, also in the outbox
			continue
		}
		if want := fmt.Sprintf("burst%02d@example.com", i); typ != "next" || !strings.Contains(string(payload), want) {
			t.Fatalf("message %d: %s %s, want next with %s", i, typ, payload, want)
		}
	}
	// Still connected, nothing repeated: a ping is answered next.
	send(`{"type":"ping"}`)
	if typ, payload := read(); typ != "pong" {
		t.Fatalf("after the burst: %s %s, want pong", typ, payload)
	}
}

// waitSubscribers waits, at most 10 s, until inst's hub has n subscribers
// of userCreated.
func waitSubscribers(t testing.TB, inst *instance, n int) {
	t.Helper()
	counter, ok := inst.Events.(interface{ Subscribers(string) int })
	if !ok {
		t.Fatalf("the instance's events (%T) do not count subscribers", inst.Events)
	}
	deadline := time.Now().Add(10 * time.Second)
	for counter.Subscribers("userCreated") != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", counter.Subscribers("userCreated"), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
