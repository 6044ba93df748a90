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
// not statements the store reports), so that a change cannot add a round
// trip unseen: every statement is a round trip to a server that may be on
// another machine. Each shape is sent once to fill the caches (the caller's
// account), then counted. See docs/performance.md (Round trips and
// statements).
func TestStatementsPerRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	counting := false
	db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t), postgres.Options{MaxConns: 4, OnStatement: func(q string) {
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
		want                     int
	}{
		{"GET one user", "GET", "/api/users/5", "", http.StatusOK, 1},
		{"list page 1 with total", "GET", "/api/users?limit=20", "", http.StatusOK, 1},
		{"list page 3 with total", "GET", "/api/users?page=3&limit=20", "", http.StatusOK, 1},
		{"search sorted", "GET", "/api/users?q=user0&sort=name&order=desc&limit=20", "", http.StatusOK, 1},
		{"search, page 2", "GET", "/api/users?q=user0&sort=name&order=desc&limit=20&page=2", "", http.StatusOK, 1},
		{"search matching nothing", "GET", "/api/users?q=qzx", "", http.StatusOK, 2},
		{"POST a user", "POST", "/api/users", `{"name":"New %d","email":"new%d@example.com"}`, http.StatusCreated, 4},
		{"PATCH a user's age", "PATCH", "/api/users/5", `{"age":%d}`, http.StatusOK, 4},
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
			c.do(shape.method, shape.path, body).mustStatus(t, shape.status)
			mu.Lock()
			got := seen
			counting = false
			mu.Unlock()
			if round == 1 && len(got) != shape.want {
				t.Errorf("%s (%s %s) ran %d statements, want %d:\n%s", shape.name, shape.method, shape.path, len(got), shape.want, strings.Join(got, "\n"))
			}
		}
	}
}
