package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// protocols are the two subprotocols every subscription test runs with.
var protocols = []string{"graphql-transport-ws", "graphql-ws"}

// wsClient is a subscription client of either protocol.
type wsClient struct {
	tb    testing.TB
	proto string
	conn  *websocket.Conn
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dial opens a connection; header, when not nil, goes with the upgrade.
func (s *server) dial(tb testing.TB, proto string, header http.Header) *wsClient {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{proto}, HTTPHeader: header})
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	if got := res.Header.Get("Sec-WebSocket-Protocol"); got != proto {
		tb.Fatalf("subprotocol = %q, want %q", got, proto)
	}
	conn.SetReadLimit(4 << 20)
	c := &wsClient{tb: tb, proto: proto, conn: conn}
	tb.Cleanup(func() { conn.CloseNow() })
	return c
}

func (c *wsClient) send(m wsMessage) {
	c.tb.Helper()
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		c.tb.Fatalf("write: %v", err)
	}
}

// read returns the next message that is not a keep-alive, or the error
// that ended the connection.
func (c *wsClient) read() (wsMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			return wsMessage{}, err
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			c.tb.Fatalf("message %s: %v", b, err)
		}
		if m.Type == "ka" || m.Type == "ping" || m.Type == "pong" {
			continue
		}
		return m, nil
	}
}

func (c *wsClient) mustRead(typ string) wsMessage {
	c.tb.Helper()
	m, err := c.read()
	if err != nil {
		c.tb.Fatalf("read, want %s: %v", typ, err)
	}
	if m.Type != typ {
		c.tb.Fatalf("message %+v, want type %s", m, typ)
	}
	return m
}

// init sends connection_init with payload and expects the ack.
func (c *wsClient) init(payload map[string]any) {
	c.tb.Helper()
	b, _ := json.Marshal(payload)
	c.send(wsMessage{Type: "connection_init", Payload: b})
	c.mustRead("connection_ack")
}

// subscribe starts a subscription with id.
func (c *wsClient) subscribe(id, query string) {
	c.tb.Helper()
	typ := "subscribe"
	if c.proto == "graphql-ws" {
		typ = "start"
	}
	b, _ := json.Marshal(map[string]any{"query": query})
	c.send(wsMessage{ID: id, Type: typ, Payload: b})
}

// next reads the next result of a subscription.
func (c *wsClient) next() wsMessage {
	c.tb.Helper()
	typ := "next"
	if c.proto == "graphql-ws" {
		typ = "data"
	}
	return c.mustRead(typ)
}

// closeStatus reads until the connection ends and returns its close code.
func (c *wsClient) closeStatus() websocket.StatusCode {
	c.tb.Helper()
	for {
		_, err := c.read()
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// userEvent is an event fed to the hub by a test: its id is far above the
// outbox's, so that the hub's deduplication never mistakes one for another.
func userEvent(id int64, name string) resourceapi.Event {
	return resourceapi.Event{ID: 1<<40 + id, Name: "userCreated", Resource: "users", At: time.Now(),
		Record: resourceapi.Record{"id": id, "name": name, "email": strings.ToLower(name) + "@test.example", "created_at": time.Now()}}
}

func TestSubscriptions(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil))
			// One subscriber authenticates in connection_init, the other on
			// the upgrade request.
			a := s.dial(t, proto, nil)
			a.init(map[string]any{"X-API-Key": s.admin})
			b := s.dial(t, proto, http.Header{"X-Api-Key": {s.admin}})
			b.init(nil)
			a.subscribe("1", "subscription { userCreated { id name } }")
			b.subscribe("s", "subscription { userCreated { name posts { id } } }")
			waitFor(t, "two subscribers", func() bool { return s.hub.Subscribers("userCreated") == 2 })
			s.hub.Deliver(userEvent(7, "Seven"))
			s.hub.Deliver(userEvent(7, "Seven")) // a redelivery: once only
			s.hub.Deliver(userEvent(8, "Eight"))
			for _, c := range []*wsClient{a, b} {
				for _, want := range []string{"Seven", "Eight"} {
					m := c.next()
					if !strings.Contains(string(m.Payload), `"name":"`+want+`"`) {
						t.Fatalf("event %s, want %s", m.Payload, want)
					}
				}
			}
			// Stopping one subscription leaves the other.
			stop := "complete"
			if proto == "graphql-ws" {
				stop = "stop"
			}
			a.send(wsMessage{ID: "1", Type: stop})
			waitFor(t, "one subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
		})
	}
}

// Shutdown closes every subscription connection, and refuses new ones.
func TestSubscriptionsEndOnShutdown(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	c := s.dial(t, "graphql-transport-ws", nil)
	c.init(map[string]any{"X-API-Key": s.admin})
	c.subscribe("1", "subscription { userCreated { id } }")
	waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
	s.gql.Shutdown()
	if got := c.closeStatus(); got != websocket.StatusNormalClosure {
		t.Fatalf("close status = %d, want 1000", got)
	}
	waitFor(t, "no subscriber", func() bool { return s.hub.Subscribers("userCreated") == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/graphql", nil); err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: %v, %v; want 503", err, res)
	}
}

func TestSubscriptionCredentials(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil))
			for _, tc := range []struct {
				name    string
				header  http.Header
				payload map[string]any
			}{
				{"none", nil, nil},
				{"invalid key", nil, map[string]any{"X-API-Key": "rk_nope"}},
				{"invalid bearer", nil, map[string]any{"Authorization": "Bearer x.y.z"}},
				{"wrong password", nil, map[string]any{"Authorization": basic("admin@test.example", "wrong password")}},
				{"invalid key on the upgrade", http.Header{"X-Api-Key": {"rk_nope"}}, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c := s.dial(t, proto, tc.header)
					b, _ := json.Marshal(tc.payload)
					c.send(wsMessage{Type: "connection_init", Payload: b})
					if got := c.closeStatus(); got != 4403 {
						t.Fatalf("close status = %d, want 4403", got)
					}
				})
			}
			// Bearer and Basic in the payload, in any case.
			// A token carries its user's security stamp.
			acct, err := s.service.Store().(resourceapi.IdentityStore).AccountByID(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := s.tokens.Issue(resourceapi.Claims{Subject: "1", Name: "Test Admin", Stamp: acct.Stamp})
			if err != nil {
				t.Fatal(err)
			}
			s.dial(t, proto, nil).init(map[string]any{"authorization": "Bearer " + tok})
			s.dial(t, proto, nil).init(map[string]any{"Authorization": basic("admin@test.example", "correct horse battery")})

			// The permission to read the resource is required.
			none := s.mustAccount("Nobody", "nobody@test.example")
			c := s.dial(t, proto, nil)
			c.init(map[string]any{"X-API-Key": none})
			c.subscribe("1", "subscription { postCreated { id } }")
			m, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(m.Payload), "Permission denied: posts:read") {
				t.Fatalf("subscription without posts:read: %+v %s", m, m.Payload)
			}
		})
	}
}

func TestSubscriptionLimits(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
				o.WebSocket.InitTimeout = 300 * time.Millisecond
				o.WebSocket.MaxSubscriptions = 2
				o.WebSocket.MaxQueueBytes = 1 << 20
				o.WebSocket.MaxMessageBytes = 4096
			})
			t.Run("init timeout", func(t *testing.T) {
				c := s.dial(t, proto, nil)
				if got := c.closeStatus(); got != 4408 {
					t.Fatalf("close status = %d, want 4408", got)
				}
			})
			t.Run("subscriptions per connection", func(t *testing.T) {
				c := s.dial(t, proto, nil)
				c.init(map[string]any{"X-API-Key": s.admin})
				c.subscribe("1", "subscription { userCreated { id } }")
				c.subscribe("2", "subscription { postCreated { id } }")
				waitFor(t, "two subscriptions", func() bool {
					return s.hub.Subscribers("userCreated")+s.hub.Subscribers("postCreated") >= 2
				})
				c.subscribe("3", "subscription { userCreated { id } }")
				m, err := c.read()
				if err != nil || !strings.Contains(string(m.Payload), "Too many subscriptions") {
					t.Fatalf("third subscription: %+v %s %v", m, m.Payload, err)
				}
			})
			t.Run("message size", func(t *testing.T) {
				c := s.dial(t, proto, nil)
				c.init(map[string]any{"X-API-Key": s.admin})
				c.subscribe("1", "subscription { userCreated { id "+strings.Repeat("name ", 2000)+"} }")
				if got := c.closeStatus(); got != websocket.StatusMessageTooBig {
					t.Fatalf("close status = %d, want %d", got, websocket.StatusMessageTooBig)
				}
			})
			t.Run("slow consumer", func(t *testing.T) {
				// The connections of the subtests above are closed by their
				// clients, which the server learns of afterwards: until it
				// does, the postCreated subscription of "subscriptions per
				// connection" is still in the hub, where it would pass for
				// this one (Subscribers) and could be the one dropped
				// (Dropped), leaving this client waiting for a close that
				// never comes.
				waitFor(t, "the earlier connections ended", func() bool {
					open, _, _ := s.gql.Connections()
					return open == 0 && s.hub.Subscribers("postCreated") == 0
				})
				c := s.dial(t, proto, nil)
				c.init(map[string]any{"X-API-Key": s.admin})
				c.subscribe("1", "subscription { postCreated { id content } }")
				waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("postCreated") == 1 })
				// An event read first: the subscription is in place, not only
				// registered with the hub (until its operation is, events wait
				// in it unbounded, and MaxQueueBytes is not checked).
				s.hub.Deliver(resourceapi.Event{ID: 1 << 41, Name: "postCreated", Resource: "posts",
					Record: resourceapi.Record{"id": int64(0), "title": "T", "content": "c", "author_id": int64(1), "created_at": time.Now()}})
				c.next()
				// The client reads nothing: the socket's buffers fill, then
				// the subscriber's buffer in the hub, which drops it.
				big := strings.Repeat("x", 64<<10)
				dropped := s.hub.Dropped()
				for i := int64(1); s.hub.Dropped() == dropped; i++ {
					if i > 100_000 {
						t.Fatal("the hub never dropped the slow subscriber")
					}
					s.hub.Deliver(resourceapi.Event{ID: 1<<41 + i, Name: "postCreated", Resource: "posts",
						Record: resourceapi.Record{"id": i, "title": "T", "content": big, "author_id": int64(1), "created_at": time.Now()}})
				}
				if got := c.closeStatus(); got != 1008 {
					t.Fatalf("close status = %d, want 1008", got)
				}
				if n := s.hub.Subscribers("postCreated"); n != 0 {
					t.Fatalf("%d subscribers left", n)
				}
			})
		})
	}
}

// Writes over REST and GraphQL reach GraphQL subscribers once committed,
// through the store's outbox and the relay, on both stores and with both
// subprotocols.
func TestSubscriptionsHearCommittedWrites(t *testing.T) {
	for _, b := range backends() {
		for _, proto := range protocols {
			t.Run(b.name+"/"+proto, func(t *testing.T) {
				t.Parallel()
				s := mustServer(t, b.open(t, nil), withRelay)
				c := s.dial(t, proto, nil)
				c.init(map[string]any{"X-API-Key": s.admin})
				c.subscribe("u", "subscription { userCreated { id name } }")
				c.subscribe("p", "subscription { postCreated { title author { name } } }")
				waitFor(t, "the subscriptions", func() bool {
					return s.hub.Subscribers("userCreated") == 1 && s.hub.Subscribers("postCreated") == 1
				})
				// The admin's own creation, committed before the subscription,
				// may still be on its way (the relay publishes it when it
				// can): it is the one event that may come first.
				next := func() wsMessage {
					t.Helper()
					for {
						m := c.next()
						if m.ID == "u" && strings.Contains(string(m.Payload), `"name":"Test Admin"`) {
							continue
						}
						return m
					}
				}
				s.restCreate(t, "Over REST", "over-rest@test.example")
				m := next()
				if m.ID != "u" || !strings.Contains(string(m.Payload), `"name":"Over REST"`) {
					t.Fatalf("event %s %s, want userCreated of Over REST", m.ID, m.Payload)
				}
				s.mustData(s.admin, `mutation { createPost(title: "Hello", content: "Text", authorId: "1") { id } }`, nil, nil)
				m = next()
				if m.ID != "p" || !strings.Contains(string(m.Payload), `"title":"Hello"`) ||
					!strings.Contains(string(m.Payload), `"author":{"name":"Test Admin"}`) {
					t.Fatalf("event %s %s, want postCreated of Hello by Test Admin", m.ID, m.Payload)
				}
			})
		}
	}
}

// A page of another origin may not open a subscription connection; the
// server's own origin may.
func TestSubscriptionOrigins(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(s.url, "http") + "/graphql"
	_, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("dial from another origin: %v, %v; want 403", err, res)
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {s.url}}})
	if err != nil {
		t.Fatalf("dial from the server's origin: %v", err)
	}
	conn.CloseNow()
}

// The protocol's own errors: each is answered as its subprotocol says, and
// never with a 500 or a hang.
func TestSubscriptionProtocol(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	send := func(c *wsClient, raw string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.conn.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("graphql-transport-ws closes", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			init bool
			msgs []string
			want websocket.StatusCode
		}{
			{"not json", true, []string{`{nope`}, 4400},
			{"unknown type", true, []string{`{"type":"start","id":"1","payload":{"query":"{ hello }"}}`}, 4400},
			{"subscribe before init", false, []string{`{"type":"subscribe","id":"1","payload":{"query":"{ hello }"}}`}, 4401},
			{"second init", true, []string{`{"type":"connection_init"}`}, 4429},
			{"duplicate id", true, []string{
				`{"type":"subscribe","id":"a","payload":{"query":"subscription { userCreated { id } }"}}`,
				`{"type":"subscribe","id":"a","payload":{"query":"subscription { userCreated { id } }"}}`}, 4409},
			{"init payload not an object", false, []string{`{"type":"connection_init","payload":[1]}`}, 4400},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := s.dial(t, "graphql-transport-ws", nil)
				if tc.init {
					c.init(map[string]any{"X-API-Key": s.admin})
				}
				for _, m := range tc.msgs {
					send(c, m)
				}
				if got := c.closeStatus(); got != tc.want {
					t.Fatalf("close status = %d, want %d", got, tc.want)
				}
			})
		}
	})
	t.Run("graphql-ws answers with errors", func(t *testing.T) {
		c := s.dial(t, "graphql-ws", nil)
		send(c, `{nope`)
		if m := c.mustRead("connection_error"); !strings.Contains(string(m.Payload), "Invalid message") {
			t.Fatalf("connection_error %s", m.Payload)
		}
		send(c, `{"type":"start","id":"1","payload":{"query":"subscription { userCreated { id } }"}}`)
		if m := c.mustRead("error"); m.ID != "1" || !strings.Contains(string(m.Payload), "connection_init") {
			t.Fatalf("start before init: %+v %s", m, m.Payload)
		}
		c.init(map[string]any{"X-API-Key": s.admin})
		c.subscribe("1", "subscription { userCreated { id } }")
		c.subscribe("1", "subscription { userCreated { id } }")
		if m := c.mustRead("error"); m.ID != "1" || !strings.Contains(string(m.Payload), "already exists") {
			t.Fatalf("duplicate id: %+v %s", m, m.Payload)
		}
		send(c, `{"type":"connection_terminate"}`)
		if got := c.closeStatus(); got != websocket.StatusNormalClosure {
			t.Fatalf("close status after connection_terminate = %d, want 1000", got)
		}
	})
	for i, proto := range protocols {
		t.Run(proto+" operations", func(t *testing.T) {
			c := s.dial(t, proto, nil)
			c.init(map[string]any{"X-API-Key": s.admin})
			if proto == "graphql-transport-ws" {
				send(c, `{"type":"ping","payload":{"n":1}}`)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, b, err := c.conn.Read(ctx)
				if err != nil || string(b) != `{"type":"pong","payload":{"n":1}}` {
					t.Fatalf("ping answered %s, %v; want pong with its payload", b, err)
				}
			}
			// Queries and mutations go over HTTP, where the rate limit
			// counts them.
			c.subscribe("q", "{ hello }")
			if m := c.mustRead("error"); m.ID != "q" || !strings.Contains(string(m.Payload), "POST /graphql") {
				t.Fatalf("query over the socket: %+v %s", m, m.Payload)
			}
			// A document that does not validate is an error of the operation.
			c.subscribe("v", "subscription { nope }")
			if m := c.mustRead("error"); m.ID != "v" || !strings.Contains(string(m.Payload), "nope") {
				t.Fatalf("invalid subscription: %+v %s", m, m.Payload)
			}
			// The connection still serves subscriptions. (Connections of the
			// subtests before end asynchronously: wait for their
			// subscriptions to go, so that the count below is this one's.)
			waitFor(t, "no subscriber", func() bool { return s.hub.Subscribers("userCreated") == 0 })
			c.subscribe("s", "subscription { userCreated { name } }")
			waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
			s.hub.Deliver(userEvent(70+int64(i), "Seventy")) // a new event id for each
			if m := c.next(); m.ID != "s" || !strings.Contains(string(m.Payload), `"name":"Seventy"`) {
				t.Fatalf("event %+v %s", m, m.Payload)
			}
			c.conn.Close(websocket.StatusNormalClosure, "")
			waitFor(t, "no subscriber", func() bool { return s.hub.Subscribers("userCreated") == 0 })
		})
	}
}

// When the event hub closes (the service stops), each stream completes.
func TestSubscriptionsCompleteWhenEventsEnd(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	c := s.dial(t, "graphql-transport-ws", nil)
	c.init(map[string]any{"X-API-Key": s.admin})
	c.subscribe("1", "subscription { userCreated { id } }")
	waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
	s.hub.Close()
	if m := c.mustRead("complete"); m.ID != "1" {
		t.Fatalf("complete of %q, want 1", m.ID)
	}
}

// Keep-alive: the server pings every PingInterval; a client that answers
// (coder/websocket answers while it reads) stays connected, graphql-ws
// clients also get "ka" messages, and a client that never answers is
// closed with 1001.
func TestSubscriptionKeepAlive(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
		o.WebSocket.PingInterval = 300 * time.Millisecond
	})
	t.Run("answered", func(t *testing.T) {
		c := s.dial(t, "graphql-transport-ws", nil)
		c.init(map[string]any{"X-API-Key": s.admin})
		// The answer comes after several intervals, while the client
		// reads (and so answers the pings).
		go func() {
			time.Sleep(time.Second)
			b, _ := json.Marshal(map[string]any{"query": "subscription { nope }"})
			c.conn.Write(context.Background(), websocket.MessageText, mustJSON(wsMessage{ID: "q", Type: "subscribe", Payload: b}))
		}()
		if m := c.mustRead("error"); m.ID != "q" {
			t.Fatalf("message %+v, want the answer to q", m)
		}
	})
	t.Run("graphql-ws ka", func(t *testing.T) {
		c := s.dial(t, "graphql-ws", nil)
		c.init(map[string]any{"X-API-Key": s.admin})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ka := 0; ka < 3; {
			_, b, err := c.conn.Read(ctx)
			if err != nil {
				t.Fatalf("after %d ka messages: %v", ka, err)
			}
			if string(b) == `{"type":"ka"}` {
				ka++
			}
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		// A raw connection that never reads after the handshake cannot
		// answer a ping, whatever the timing.
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /graphql HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
			"Sec-WebSocket-Protocol: graphql-transport-ws\r\nX-Api-Key: %s\r\n\r\n", s.admin)
		conn.Write(clientFrame([]byte(`{"type":"connection_init"}`)))
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		all, _ := io.ReadAll(conn) // until the server gives up and closes
		_, frames, ok := strings.Cut(string(all), "\r\n\r\n")
		if !ok || !strings.HasPrefix(string(all), "HTTP/1.1 101") {
			t.Fatalf("handshake answered %q", all)
		}
		var closeCode int
		for b := []byte(frames); len(b) >= 2; {
			op, n := b[0]&0x0f, int(b[1]&0x7f)
			b = b[2:]
			if n == 126 {
				n, b = int(b[0])<<8|int(b[1]), b[2:]
			}
			if op == 0x8 && n >= 2 {
				closeCode = int(b[0])<<8 | int(b[1])
			}
			b = b[min(n, len(b)):]
		}
		if closeCode != int(websocket.StatusGoingAway) {
			t.Fatalf("close code %d, want 1001; frames %q", closeCode, frames)
		}
	})
}

// A client that stops reading is disconnected once a write to it has
// waited WriteTimeout: the hub never drops it, however many events wait.
func TestSubscriptionWriteTimeout(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
				o.WebSocket.WriteTimeout = 100 * time.Millisecond
				o.WebSocket.MaxQueueBytes = 1 << 30  // not what ends it
				o.WebSocket.PingInterval = time.Hour // no ping ends it
			})
			s.stuckSubscriber(t, proto)
			waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("postCreated") == 1 })
			dropped := s.hub.Dropped()
			s.deliverBigPosts(1<<42, 100)
			waitFor(t, "the stuck subscriber to be disconnected", func() bool { return s.hub.Subscribers("postCreated") == 0 })
			if got := s.hub.Dropped(); got != dropped {
				t.Fatalf("the hub dropped %d subscribers, want none: the write timeout, not the buffer, ends it", got-dropped)
			}
		})
	}
}

// Clients stuck in a write, more than the writers that send the
// connections' messages, do not hold back one that reads: the writers'
// watchdog starts more.
func TestSubscriptionStuckClientsHoldNoOneBack(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
		o.WebSocket.WriteTimeout = time.Hour // only the watchdog frees the others
		o.WebSocket.MaxQueueBytes = 1 << 30
		o.WebSocket.PingInterval = time.Hour
	})
	stuck := 2*graph.MaxWriters() + 2
	for range stuck {
		s.stuckSubscriber(t, "graphql-transport-ws")
	}
	c := s.dial(t, "graphql-transport-ws", nil)
	c.init(map[string]any{"X-API-Key": s.admin})
	c.subscribe("1", "subscription { postCreated { content } }")
	waitFor(t, "the subscribers", func() bool { return s.hub.Subscribers("postCreated") == stuck+1 })
	const n = 100
	s.deliverBigPosts(1<<43, n)
	for i := range n {
		if m := c.next(); !strings.Contains(string(m.Payload), "xxxx") {
			t.Fatalf("event %d: %s", i, m.Payload)
		}
	}
}

// stuckSubscriber opens a raw connection that subscribes to postCreated
// and never reads after the handshake; it is closed when the test ends.
func (s *server) stuckSubscriber(tb testing.TB, proto string) net.Conn {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /graphql HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: %s\r\nX-Api-Key: %s\r\n\r\n", proto, s.admin)
	start := "subscribe"
	if proto == "graphql-ws" {
		start = "start"
	}
	conn.Write(clientFrame([]byte(`{"type":"connection_init"}`)))
	conn.Write(clientFrame(mustJSON(wsMessage{ID: "1", Type: start,
		Payload: mustJSON(map[string]string{"query": "subscription { postCreated { content } }"})})))
	return conn
}

// deliverBigPosts hands the hub n postCreated events of 256 KiB each, with
// ids from first+1: more than the sockets' buffers of a client that does
// not read hold.
func (s *server) deliverBigPosts(first int64, n int) {
	big := strings.Repeat("x", 256<<10)
	for i := int64(1); i <= int64(n); i++ {
		s.hub.Deliver(resourceapi.Event{ID: first + i, Name: "postCreated", Resource: "posts",
			Record: resourceapi.Record{"id": i, "title": "T", "content": big, "author_id": int64(1), "created_at": time.Now()}})
	}
}

// clientFrame is a masked text frame of a short payload, as a client sends.
func clientFrame(payload []byte) []byte {
	mask := []byte{1, 2, 3, 4}
	f := append([]byte{0x81, 0x80 | byte(len(payload))}, mask...)
	for i, c := range payload {
		f = append(f, c^mask[i%4])
	}
	return f
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Subscriptions of one operation by one caller share each event's
// rendering; another caller's, which the rules decide otherwise, is
// rendered for that caller.
func TestSubscriptionRenderingsPerCaller(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil))
	ctx := context.Background()
	u, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
		"name": "Reader", "email": "reader@test.example", "roles": []string{}, "permissions": []string{"users:read"}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.service.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": u.ID()})
	if err != nil {
		t.Fatal(err)
	}
	const doc = "subscription { userCreated { name posts { id } } }"
	var clients []*wsClient
	for _, key := range []string{s.admin, s.admin, k["key"].(string)} {
		c := s.dial(t, "graphql-transport-ws", nil)
		c.init(map[string]any{"X-API-Key": key})
		c.subscribe("1", doc)
		clients = append(clients, c)
	}
	waitFor(t, "three subscribers", func() bool { return s.hub.Subscribers("userCreated") == 3 })
	s.hub.Deliver(userEvent(90, "Ninety"))
	a, b, r := clients[0].next(), clients[1].next(), clients[2].next()
	if string(a.Payload) != string(b.Payload) || !strings.Contains(string(a.Payload), `"name":"Ninety","posts":[]`) {
		t.Fatalf("the admin's subscribers got %s and %s, want the same event with its posts", a.Payload, b.Payload)
	}
	if !strings.Contains(string(r.Payload), "posts:read") || strings.Contains(string(r.Payload), `"posts":[]`) {
		t.Fatalf("a subscriber without posts:read got %s, want the posts refused", r.Payload)
	}
}
