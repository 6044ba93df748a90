package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestServeShutdownWithSubscribers stops serve while a WebSocket subscriber
// is connected: the subscriber's stream completes and its connection is
// closed with 1000, and no goroutine of the connection outlives serve.
func TestServeShutdownWithSubscribers(t *testing.T) {
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": filepath.Join(t.TempDir(), "s.db"), "RESOURCEAPI_ADDR": "127.0.0.1:0"}
	before := runtime.NumGoroutine()
	stop, output := mustServeOutput(t, kv)
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`).FindStringSubmatch(output())
	key := regexp.MustCompile(`API key:\s+(\S+)`).FindStringSubmatch(output())
	if addr == nil || key == nil {
		t.Fatalf("no address or admin API key in serve's output:\n%s", output())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+addr[1]+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	send := func(m string) {
		if err := conn.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (map[string]any, error) {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(b, &m)
	}
	payload, _ := json.Marshal(map[string]string{"X-API-Key": key[1]})
	send(`{"type":"connection_init","payload":` + string(payload) + `}`)
	if m, err := read(); err != nil || m["type"] != "connection_ack" {
		t.Fatalf("connection_init answered %v, %v", m, err)
	}
	send(`{"type":"subscribe","id":"1","payload":{"query":"subscription { userCreated { id } }"}}`)
	// A query on the same connection is refused (queries go over HTTP)
	// after the subscribe message has been handled: the reader takes
	// messages in order.
	send(`{"type":"subscribe","id":"2","payload":{"query":"{ hello }"}}`)
	for {
		m, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if m["type"] == "error" && m["id"] == "2" {
			break
		}
	}

	stop()
	for {
		_, err := read()
		if err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusNormalClosure {
				t.Fatalf("after serve returned, the subscriber's connection ended with %v, want 1000", err)
			}
			break
		}
	}
	conn.CloseNow()
	mustNoGoroutinesOver(t, before)
}
