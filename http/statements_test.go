package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// TestStatementsPerRequest pins how many statements each request shape of
// the PostgreSQL workloads runs (BEGIN and COMMIT, which a write adds, are
// not statements the store reports) and how many round trips to the server
// they take (counted on the wire, through pgtest's proxy), so that a change
// cannot add one unseen: every round trip waits for a server that may be on
// another machine. A write sends its BEGIN with its first statement and its
// event with its COMMIT; a PATCH, its UPDATE with its read FOR UPDATE. Each shape is sent once to fill the caches (the
// caller's account and the connections' prepared statements), then
// counted. See docs/performance.md (Round trips and statements).
func TestStatementsPerRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	counting := false
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	db, err := postgres.Open(t.Context(), url, postgres.Options{MaxConns: 4, OnStatement: func(q string) {
		mu.Lock()
		defer mu.Unlock()
		if counting {
			seen = append(seen, q)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := mustServer(t, db)
	for i := range 80 {
		c.post("/api/users", fmt.Sprintf(`{"name":"User %03d","email":"user%03d@example.com","age":30}`, i, i)).mustStatus(t, http.StatusCreated)
	}
	age := 20
	for _, shape := range []struct {
		name, method, path, body string
		status                   int
		want, trips              int
	}{
		{"GET one user", "GET", "/api/users/5", "", http.StatusOK, 1, 1},
		{"list page 1 with total", "GET", "/api/users?limit=20", "", http.StatusOK, 1, 1},
		{"list page 3 with total", "GET", "/api/users?page=3&limit=20", "", http.StatusOK, 1, 1},
		{"search sorted", "GET", "/api/users?q=user0&sort=name&order=desc&limit=20", "", http.StatusOK, 1, 1},
		{"search, page 2", "GET", "/api/users?q=user0&sort=name&order=desc&limit=20&page=2", "", http.StatusOK, 1, 1},
		{"search matching nothing", "GET", "/api/users?q=qzx", "", http.StatusOK, 2, 2},
		// BEGIN with the INSERT (which takes its id), then the check
		// of the cached account's identity version (identity_confirm)
		// and the event with COMMIT: the account is not read again
		// before the write.
		{"POST a user", "POST", "/api/users", `{"name":"New %d","email":"new%d@example.com"}`, http.StatusCreated, 3, 2},
		// BEGIN with the read FOR UPDATE and the UPDATE, then the check
		// and the event with COMMIT.
		{"PATCH a user's age", "PATCH", "/api/users/5", `{"age":%d}`, http.StatusOK, 4, 2},
	} {
		for round := range 2 {
			body := shape.body
			if strings.Contains(body, "%d") {
				age++
				body = strings.ReplaceAll(body, "%d", fmt.Sprint(age))
			}
			mu.Lock()
			counting, seen = round == 1, nil
			mu.Unlock()
			trips := proxy.RoundTrips()
			c.do(shape.method, shape.path, body).mustStatus(t, shape.status)
			trips = proxy.RoundTrips() - trips
			mu.Lock()
			got := seen
			counting = false
			mu.Unlock()
			if round == 1 && len(got) != shape.want {
				t.Errorf("%s (%s %s) ran %d statements, want %d:\n%s", shape.name, shape.method, shape.path, len(got), shape.want, strings.Join(got, "\n"))
			}
			if round == 1 && trips != shape.trips {
				t.Errorf("%s (%s %s) took %d round trips, want %d", shape.name, shape.method, shape.path, trips, shape.trips)
			}
		}
	}
}
