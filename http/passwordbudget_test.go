package http_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/resourceapi/resourceapi"
	rauth "github.com/resourceapi/resourceapi/auth"
	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/token"
)

// budgetServer is a server with GraphQL and subscriptions, whose
// authentication counts the passwords it verifies, and whose every caller
// (address or user) has a budget of budgetLimit requests an hour.
type budgetServer struct {
	*client
	hasher *countingHasher
	url    string
}

const budgetLimit = 3

func mustBudgetServer(t *testing.T) *budgetServer {
	t.Helper()
	store := mustSQLite(t, nil)
	hasher := &countingHasher{PasswordHasher: testHasher()}
	tokens, err := token.New(testSecret, token.Options{})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := rauth.New(rauth.Config{
		Store: store.(resourceapi.IdentityStore), Hasher: hasher, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	lim := inmem.NewRateLimiter(budgetLimit, time.Hour, inmem.Options{})
	t.Cleanup(func() { lim.Close() })
	svc := resourceapi.NewService(store, testHasher())
	svc.SetAuthenticator(auth)
	hub := inmem.NewHub()
	t.Cleanup(hub.Close)
	gql := graph.New(graph.Options{Service: svc, ParseCredential: rhttp.ParseCredential, Events: hub, Logger: testLogger(t),
		RequestID: rhttp.RequestID, Version: "test"})
	t.Cleanup(gql.Shutdown)
	api := rhttp.NewServer(rhttp.Config{Service: svc, RateLimiter: lim, GraphQL: gql, Logger: testLogger(t)})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	c := &client{tb: t, base: srv.URL, service: svc, contract: &contractRef{doc: api.OpenAPIDocument()},
		hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	return &budgetServer{client: c, hasher: hasher, url: srv.URL}
}

// guess is an HTTP Basic credential with an email no one has.
func guess() string {
	return basicAuth(strings.ToLower(rand.Text())+"@example.com", "a wrong password")
}

// attempt sends one request (send) that carries a password and returns
// whether the address's budget refused it. It fails the test if a refused
// request verified a password, or an admitted one did not.
func (s *budgetServer) attempt(t *testing.T, what string, send func() (refused bool)) bool {
	t.Helper()
	before := s.hasher.verifies.Load()
	refused := send()
	n := s.hasher.verifies.Load() - before
	switch {
	case refused && n != 0:
		t.Errorf("%s refused by the address's budget verified %d passwords, want none", what, n)
	case !refused && n != 1:
		t.Errorf("%s admitted verified %d passwords, want 1", what, n)
	}
	return refused
}

// mustRefuseAfterBudget makes 2*budgetLimit attempts: the first budgetLimit
// are admitted (each verifies its password), every later one is refused
// before its password is verified.
func (s *budgetServer) mustRefuseAfterBudget(t *testing.T, what string, send func() (refused bool)) {
	t.Helper()
	for i := range 2 * budgetLimit {
		refused := s.attempt(t, what, send)
		if want := i >= budgetLimit; refused != want {
			t.Fatalf("%s %d: refused = %v, want %v", what, i+1, refused, want)
		}
	}
	if got := s.hasher.verifies.Load(); got != budgetLimit {
		t.Errorf("passwords verified = %d, want %d (the address's budget)", got, budgetLimit)
	}
}

// dial opens a graphql-transport-ws connection to the server, or returns
// the status of the refused upgrade.
func (s *budgetServer) dial(t *testing.T, header http.Header) (*websocket.Conn, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err != nil {
		if res == nil {
			t.Fatalf("dial: %v", err)
		}
		return nil, res.StatusCode
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn, http.StatusSwitchingProtocols
}

// initClose sends connection_init with payload and returns the status the
// server closes the connection with.
func initClose(t *testing.T, conn *websocket.Conn, payload map[string]string) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": payload})
	if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
		t.Fatalf("write connection_init: %v", err)
	}
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// TestPasswordAfterAddressBudget: a flood of passwords from one address
// (random emails, every one refused) spends the address's budget, and once
// it is spent no password is verified: not for REST, GraphQL over HTTP, a
// WebSocket upgrade, nor a WebSocket's connection_init.
func TestPasswordAfterAddressBudget(t *testing.T) {
	t.Run("REST", func(t *testing.T) {
		s := mustBudgetServer(t)
		anon := s.anonymous()
		s.mustRefuseAfterBudget(t, "GET /api/users with Basic", func() bool {
			r := anon.get("/api/users", "Authorization", guess())
			if r.StatusCode == http.StatusTooManyRequests {
				r.mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
				if mustRateHeaders(t, r, budgetLimit) != 0 || r.Header.Get("Retry-After") == "" {
					t.Errorf("429 without Remaining 0 and Retry-After: %v", r.Header)
				}
				return true
			}
			r.mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
			return false
		})
	})
	t.Run("GraphQL", func(t *testing.T) {
		s := mustBudgetServer(t)
		anon := s.anonymous()
		s.mustRefuseAfterBudget(t, "POST /graphql with Basic", func() bool {
			r := anon.post("/graphql", `{"query":"{ users { id } }"}`, "Authorization", guess())
			if r.StatusCode == http.StatusTooManyRequests {
				return true
			}
			if !strings.Contains(string(r.body), "INVALID_TOKEN") {
				t.Errorf("POST /graphql with a wrong password = %d %s, want INVALID_TOKEN", r.StatusCode, r.body)
			}
			return false
		})
	})
	t.Run("WebSocket upgrade", func(t *testing.T) {
		s := mustBudgetServer(t)
		s.mustRefuseAfterBudget(t, "WebSocket upgrade with Basic", func() bool {
			conn, status := s.dial(t, http.Header{"Authorization": {guess()}})
			if status == http.StatusTooManyRequests {
				return true
			}
			if conn == nil {
				t.Fatalf("upgrade = %d, want 101 or 429", status)
			}
			if got := initClose(t, conn, nil); got != 4403 {
				t.Errorf("connection_init after an upgrade with a wrong password: close %d, want 4403", got)
			}
			return false
		})
	})
	t.Run("connection_init", func(t *testing.T) {
		s := mustBudgetServer(t)
		key := s.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser)
		// An upgrade without a credential counts against the address, and
		// covers the password of its connection_init.
		s.mustRefuseAfterBudget(t, "connection_init with Basic", func() bool {
			conn, status := s.dial(t, nil)
			if status == http.StatusTooManyRequests {
				return true
			}
			if got := initClose(t, conn, map[string]string{"Authorization": guess()}); got != 4403 {
				t.Errorf("connection_init with a wrong password: close %d, want 4403", got)
			}
			return false
		})
		// The address's budget is spent. An upgrade with a valid API key
		// counts against its user; a password in its connection_init is
		// still the address's to pay for, and is refused unverified.
		conn, status := s.dial(t, http.Header{"X-API-Key": {key}})
		if conn == nil {
			t.Fatalf("upgrade with an API key = %d, want 101", status)
		}
		s.attempt(t, "connection_init with Basic after an upgrade with an API key", func() bool {
			if got := initClose(t, conn, map[string]string{"Authorization": guess()}); got != 4403 {
				t.Errorf("connection_init with a password over the address's budget: close %d, want 4403", got)
			}
			return true
		})
	})
}

// TestPasswordBudgetHeaders: a valid password costs its address one
// request of its budget, and the response reports its user's budget.
func TestPasswordBudgetHeaders(t *testing.T) {
	s := mustBudgetServer(t)
	s.mustAccount("Ann", "ann@example.com", resourceapi.RoleUser)
	anon := s.anonymous()
	anon.get("/api/users").mustStatus(t, http.StatusUnauthorized)
	r := anon.get("/api/users", "Authorization", basicAuth("ann@example.com", "correct horse battery"))
	r.mustStatus(t, http.StatusOK)
	if got, want := mustRateHeaders(t, r, budgetLimit), budgetLimit-1; got != want {
		t.Errorf("X-RateLimit-Remaining = %d, want %d (the user's budget)", got, want)
	}
	// The address paid for the verification: one request is left of its
	// three. A remembered credential verifies nothing and costs the
	// address nothing.
	before := s.hasher.verifies.Load()
	r = anon.get("/api/users", "Authorization", basicAuth("ann@example.com", "correct horse battery"))
	r.mustStatus(t, http.StatusOK)
	if got := s.hasher.verifies.Load() - before; got != 0 {
		t.Errorf("a remembered credential verified %d passwords, want none", got)
	}
	r = anon.get("/api/users")
	r.mustStatus(t, http.StatusUnauthorized)
	if got := mustRateHeaders(t, r, budgetLimit); got != 0 {
		t.Errorf("address's X-RateLimit-Remaining = %d, want 0 (one request and one verification spent)", got)
	}
	anon.get("/api/users").mustError(t, http.StatusTooManyRequests, resourceapi.CodeRateLimited)
	if got := strconv.Itoa(int(s.hasher.verifies.Load())); got != "1" {
		t.Errorf("passwords verified = %s, want 1", got)
	}
}
