package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/relay"
)

// mustKey creates an API key of user and returns its id and secret.
func (s *server) mustKey(user int64) (int64, string) {
	s.tb.Helper()
	k, err := s.service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.APIKeys, 0,
		resourceapi.Record{"user_id": user})
	if err != nil {
		s.tb.Fatalf("create API key of user %d: %v", user, err)
	}
	return k.ID(), k["key"].(string)
}

// mustChange applies fn, a change made through the rule layer as the
// command line makes it, and fails on an error.
func mustChange(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// mustCloseWith reads until the connection ends, failing on any result
// delivered meanwhile, and checks its close code.
func (c *wsClient) mustCloseWith(code websocket.StatusCode) {
	c.tb.Helper()
	for {
		m, err := c.read()
		if err != nil {
			if got := websocket.CloseStatus(err); got != code {
				c.tb.Fatalf("connection ended with %d (%v), want %d", got, err, code)
			}
			return
		}
		if m.Type == "next" || m.Type == "data" {
			c.tb.Fatalf("received %s %s after the caller lost access", m.Type, m.Payload)
		}
	}
}

// A subscribe that fails validation, the complexity limit included, is
// answered with an error message carrying the GraphQL errors, in both
// protocols: no next, no complete.
func TestSubscriptionValidationError(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
				o.ComplexityLimit = 50
			})
			c := s.dial(t, proto, nil)
			c.init(map[string]any{"X-API-Key": s.admin})
			for _, tc := range []struct{ name, query, want string }{
				{"unknown field", "subscription { userCreated { nope } }", "nope"},
				{"complexity", "subscription { userCreated { posts(limit: 100) { title } } }", "complexity"},
			} {
				c.subscribe(tc.name, tc.query)
				m := c.mustRead("error")
				if m.ID != tc.name {
					t.Fatalf("%s: error for id %q, want %q", tc.name, m.ID, tc.name)
				}
				var errs []gqlError
				if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) == 0 {
					t.Fatalf("%s: payload %s: want a list of GraphQL errors (%v)", tc.name, m.Payload, err)
				}
				if !strings.Contains(strings.ToLower(string(m.Payload)), tc.want) {
					t.Fatalf("%s: errors %s, want them to mention %q", tc.name, m.Payload, tc.want)
				}
			}
			// Nothing more came for those ids: the next message is the
			// answer to a valid subscription's event.
			c.subscribe("ok", "subscription { userCreated { name } }")
			waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
			s.hub.Deliver(userEvent(1, "One"))
			if m := c.next(); m.ID != "ok" {
				t.Fatalf("message %+v, want the result of ok", m)
			}
		})
	}
}

// Connections are capped per caller and per client address; a connection
// that ends frees its place, and nothing stays counted.
func TestSubscriptionConnectionCaps(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil), func(o *graph.Options, _ *rhttp.Config) {
				o.WebSocket.MaxPerCaller = 2
				o.WebSocket.MaxPerAddr = 4
			})
			other := s.mustAccount("Other", "other@test.example", resourceapi.RoleUser)

			// Per caller: the third connection of the admin is closed with
			// 4429; another caller is not affected.
			a1, a2 := s.dial(t, proto, nil), s.dial(t, proto, nil)
			a1.init(map[string]any{"X-API-Key": s.admin})
			a2.init(map[string]any{"X-API-Key": s.admin})
			a3 := s.dial(t, proto, http.Header{"X-Api-Key": {s.admin}})
			a3.send(wsMessage{Type: "connection_init"})
			a3.mustCloseWith(4429)
			// The refused connection leaves the count once the server has
			// closed it, not when the client read the close.
			waitFor(t, "the refused connection gone", func() bool { open, _, _ := s.gql.Connections(); return open == 2 })
			b := s.dial(t, proto, nil)
			b.init(map[string]any{"X-API-Key": other})

			// Per address: four are open (a1, a2, b, and one waiting for
			// its connection_init); a fifth upgrade is refused with 429.
			pending := s.dial(t, proto, nil)
			waitFor(t, "four connections", func() bool { open, _, _ := s.gql.Connections(); return open == 4 })
			mustRefuseUpgrade(t, s, proto, http.StatusTooManyRequests)

			// Closing frees both places.
			a1.conn.Close(websocket.StatusNormalClosure, "")
			waitFor(t, "three connections", func() bool { open, _, _ := s.gql.Connections(); return open == 3 })
			a4 := s.dial(t, proto, nil)
			a4.init(map[string]any{"X-API-Key": s.admin})

			for _, c := range []*wsClient{a2, a4, b, pending} {
				c.conn.Close(websocket.StatusNormalClosure, "")
			}
			waitFor(t, "no connection counted", func() bool {
				open, addrs, users := s.gql.Connections()
				return open == 0 && addrs == 0 && users == 0
			})
		})
	}
}

// mustRefuseUpgrade checks that a WebSocket upgrade is refused with status.
func mustRefuseUpgrade(tb testing.TB, s *server, proto string, status int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{proto}})
	if err == nil {
		conn.CloseNow()
		tb.Fatalf("upgrade accepted, want %d", status)
	}
	if res == nil || res.StatusCode != status {
		tb.Fatalf("upgrade: %v (%v), want %d", err, res, status)
	}
}

// A subscription stops receiving as soon as the request that opened it
// would be refused: a revoked key, a deleted user or an expired token close
// the connection with 4403; a withdrawn permission ends the subscription
// with an error and leaves the connection.
func TestSubscriptionEndsWithItsCredential(t *testing.T) {
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			s := mustServer(t, backends()[0].open(t, nil))
			ctx, system := context.Background(), resourceapi.SystemCaller()
			n := int64(0)
			// subscriber opens a subscription of userCreated with init's
			// credential and checks that it receives an event.
			subscriber := func(t *testing.T, init map[string]any) *wsClient {
				t.Helper()
				// The previous case's subscriber must be gone first, or
				// its listener could pass for this one's.
				waitFor(t, "no subscriber", func() bool { return s.hub.Subscribers("userCreated") == 0 })
				c := s.dial(t, proto, nil)
				c.init(init)
				c.subscribe("1", "subscription { userCreated { email } }")
				waitFor(t, "the subscriber", func() bool { return s.hub.Subscribers("userCreated") == 1 })
				n++
				s.hub.Deliver(userEvent(n, fmt.Sprint("Before", n)))
				c.next()
				return c
			}
			deliver := func() {
				n++
				s.hub.Deliver(userEvent(n, fmt.Sprint("After", n)))
			}

			t.Run("key revoked", func(t *testing.T) {
				u := s.mustUser("Revoked", "revoked-"+proto+"@test.example")
				mustChange(t, "grant", updateRoles(s, u, resourceapi.RoleUser))
				id, key := s.mustKey(u)
				c := subscriber(t, map[string]any{"X-API-Key": key})
				mustChange(t, "revoke", s.service.Delete(ctx, system, resourceapi.APIKeys, resourceapi.Address{ID: id}, nil))
				deliver()
				c.mustCloseWith(4403)
			})
			t.Run("user soft-deleted", func(t *testing.T) {
				u := s.mustUser("Deleted", "deleted-"+proto+"@test.example")
				mustChange(t, "grant", updateRoles(s, u, resourceapi.RoleUser))
				_, key := s.mustKey(u)
				c := subscriber(t, map[string]any{"X-API-Key": key})
				mustChange(t, "delete", s.service.Delete(ctx, system, resourceapi.Users, resourceapi.Address{ID: u}, nil))
				deliver()
				c.mustCloseWith(4403)
			})
			t.Run("password changed (Basic)", func(t *testing.T) {
				email := "basic-" + proto + "@test.example"
				s.mustAccount("Basic", email, resourceapi.RoleUser)
				c := subscriber(t, map[string]any{"Authorization": basic(email, "correct horse battery")})
				_, err := s.service.Update(ctx, system, resourceapi.Users, resourceapi.Address{ID: s.ids[email]},
					resourceapi.Record{"password": "another horse battery"}, nil)
				mustChange(t, "change the password", err)
				deliver()
				c.mustCloseWith(4403)
			})
			t.Run("permission withdrawn", func(t *testing.T) {
				u := s.mustUser("Demoted", "demoted-"+proto+"@test.example")
				mustChange(t, "grant", updateRoles(s, u, resourceapi.RoleUser))
				_, key := s.mustKey(u)
				c := subscriber(t, map[string]any{"X-API-Key": key})
				mustChange(t, "demote", updateRoles(s, u))
				deliver()
				m := c.mustRead("error")
				if m.ID != "1" || !strings.Contains(string(m.Payload), "FORBIDDEN") {
					t.Fatalf("error %+v %s, want FORBIDDEN for subscription 1", m, m.Payload)
				}
				waitFor(t, "no subscriber", func() bool { return s.hub.Subscribers("userCreated") == 0 })
				// The connection stays: a new subscription is answered.
				c.subscribe("2", "subscription { userCreated { email } }")
				if m, err := c.read(); err != nil || m.ID != "2" {
					t.Fatalf("after the error: %+v %v, want an answer to subscription 2", m, err)
				}
			})
			t.Run("token expired", func(t *testing.T) {
				exp := time.Now().Add(2 * time.Second)
				acct, err := s.service.Store().(resourceapi.IdentityStore).AccountByID(t.Context(), 1)
				if err != nil {
					t.Fatal(err)
				}
				tok, err := s.tokens.Issue(resourceapi.Claims{Subject: "1", Name: "Test Admin", ExpiresAt: exp, Stamp: acct.Stamp})
				if err != nil {
					t.Fatal(err)
				}
				c := subscriber(t, map[string]any{"Authorization": "Bearer " + tok})
				// No event comes: the token's expiry alone ends it.
				c.mustCloseWith(4403)
				if time.Now().Before(exp.Truncate(time.Second)) {
					t.Fatal("closed before the token expired")
				}
			})
		})
	}
}

// updateRoles sets the roles of user id.
func updateRoles(s *server, id int64, roles ...string) error {
	if roles == nil {
		roles = []string{}
	}
	_, err := s.service.Update(context.Background(), resourceapi.SystemCaller(), resourceapi.Users,
		resourceapi.Address{ID: id}, resourceapi.Record{"roles": roles}, nil)
	return err
}

// On PostgreSQL, a key revoked on one instance ends the subscription on
// another at its next event: the identity version moved in the database.
func TestSubscriptionEndsWithItsCredentialAcrossInstances(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) == "" {
		t.Skip("set " + pgtest.EnvURL + " to run against PostgreSQL")
	}
	url := pgtest.NewDatabase(t)
	a := mustServer(t, mustPostgres(t, url, nil))
	b := mustServerSharing(t, mustPostgres(t, url, nil), a)
	for i, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			u := a.mustUser("Revoked", fmt.Sprintf("revoked%d@test.example", i))
			mustChange(t, "grant", updateRoles(a, u, resourceapi.RoleUser))
			id, key := a.mustKey(u)
			c := b.dial(t, proto, nil)
			c.init(map[string]any{"X-API-Key": key})
			c.subscribe("1", "subscription { userCreated { email } }")
			waitFor(t, "the subscriber", func() bool { return b.hub.Subscribers("userCreated") == 1 })
			b.hub.Deliver(userEvent(int64(10*i+1), "Before"))
			c.next()
			mustChange(t, "revoke", a.service.Delete(context.Background(), resourceapi.SystemCaller(), resourceapi.APIKeys,
				resourceapi.Address{ID: id}, nil))
			b.hub.Deliver(userEvent(int64(10*i+2), "After"))
			c.mustCloseWith(4403)
			waitFor(t, "no subscriber", func() bool { return b.hub.Subscribers("userCreated") == 0 })
		})
	}
}

// A burst of events, far more than any count a subscriber used to be
// allowed to fall behind, reaches a subscriber that keeps reading, every
// event once and in order: here 500 committed writes, published by the
// relay in batches of 100 handed over in a tight loop.
func TestSubscriptionBurst(t *testing.T) {
	st := backends()[0].open(t, nil)
	s := mustServer(t, st)
	var clients []*wsClient
	for _, proto := range protocols {
		c := s.dial(t, proto, nil)
		c.init(map[string]any{"X-API-Key": s.admin})
		c.subscribe("1", "subscription { userCreated { name } }")
		clients = append(clients, c)
	}
	waitFor(t, "the subscribers", func() bool { return s.hub.Subscribers("userCreated") == len(clients) })
	const n = 500
	for i := range n {
		s.mustUser(fmt.Sprint("Burst", i), fmt.Sprintf("burst%d@test.example", i))
	}
	// Only now does a relay run: it finds the 500 events in the outbox.
	relay := relay.New(st.(resourceapi.Outbox), s.hub, relay.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, c := range clients {
		for i := 0; i < n; {
			m := c.next()
			if !strings.Contains(string(m.Payload), "Burst") {
				continue // the admin's creation, also in the outbox
			}
			if want := fmt.Sprintf(`"name":"Burst%d"`, i); !strings.Contains(string(m.Payload), want) {
				t.Fatalf("%s: event %d is %s, want %s", c.proto, i, m.Payload, want)
			}
			i++
		}
	}
	if got := s.hub.Subscribers("userCreated"); got != len(clients) {
		t.Fatalf("%d subscribers after the burst, want %d", got, len(clients))
	}
}
