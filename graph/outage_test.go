package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestDatabaseOutage serves REST and GraphQL over a PostgreSQL database
// reached through a proxy, and takes the database away under load twice
// (connections cut and refused, then answered "the database system is
// starting up", 57P03, as during a restart): every request meanwhile is 503
// UNAVAILABLE with Retry-After (GraphQL: extensions.code UNAVAILABLE with
// retryAfter), never a 500; the log has one warning per outage and no
// error; and once the database is back, requests succeed again, the first
// read on a dead pooled connection retried on a fresh one. It used to be
// one 500 INTERNAL and one ERROR line per request.
func TestDatabaseOutage(t *testing.T) {
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	var logs syncLog
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := mustServerWith(t, st, func(o *graph.Options, c *rhttp.Config) { o.Logger, c.Logger = log, log })
	s.admin = s.mustAccount("Test Admin", "admin@test.example", "admin")

	const workers, each = 4, 10
	load := func(want func(what string, status int, header http.Header, body []byte)) {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					var r *response
					what := "GET /api/users"
					if (w+i)%2 == 0 {
						r = s.send(http.MethodGet, "/api/users", s.admin, nil)
					} else {
						what = "POST /graphql users"
						r = s.post(s.admin, `{ users { id email } }`, nil)
					}
					want(what, r.status, r.header, r.raw)
				}
			})
		}
		wg.Wait()
	}
	ok := func(what string, status int, _ http.Header, body []byte) {
		if status != http.StatusOK || bytes.Contains(body, []byte(`"errors"`)) {
			t.Errorf("%s with the database up: %d %s", what, status, body)
		}
	}
	unavailable := func(what string, status int, h http.Header, body []byte) {
		switch {
		case status == http.StatusServiceUnavailable:
			var e struct{ Error struct{ Code string } }
			if json.Unmarshal(body, &e) != nil || e.Error.Code != "UNAVAILABLE" || h.Get("Retry-After") == "" {
				t.Errorf("%s with the database away: 503 with Retry-After %q, body %s; want UNAVAILABLE and Retry-After", what, h.Get("Retry-After"), body)
			}
		case status == http.StatusOK && strings.HasPrefix(what, "POST /graphql"):
			var r struct {
				Errors []struct{ Extensions map[string]any }
			}
			if json.Unmarshal(body, &r) != nil || len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "UNAVAILABLE" || r.Errors[0].Extensions["retryAfter"] == nil {
				t.Errorf("%s with the database away: %s, want an UNAVAILABLE error with retryAfter", what, body)
			}
		default:
			t.Errorf("%s with the database away: %d %s, want 503 UNAVAILABLE", what, status, body)
		}
	}

	load(ok)
	for round := 1; round <= 2; round++ {
		proxy.Refuse()
		load(unavailable)
		if r := s.send(http.MethodGet, "/readyz", "", nil); r.status != http.StatusServiceUnavailable {
			t.Errorf("/readyz with the database away: %d, want 503", r.status)
		}
		proxy.StartingUp()
		load(unavailable)
		proxy.Restore()
		load(ok)
		if got := strings.Count(logs.String(), "level=WARN"); got != round {
			t.Errorf("after %d outages the log has %d warnings, want %d:\n%s", round, got, round, logs.String())
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the log has errors:\n%s", logs.String())
	}
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
