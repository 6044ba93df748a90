package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeServer is just enough of resourceapi's users API for load to drive:
// ids from 1, unique emails, the list envelope's pagination.total, and an API
// key on every request.
type fakeServer struct {
	mu      sync.Mutex
	emails  map[string]bool
	n       int
	queries []string
}

func newFakeServer(tb testing.TB) (*fakeServer, *httptest.Server) {
	f := &fakeServer{emails: make(map[string]bool)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/users", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if q := r.URL.Query().Get("q"); q != "" {
			f.queries = append(f.queries, r.URL.RawQuery)
		}
		fmt.Fprintf(w, `{"data":[],"pagination":{"page":1,"limit":1,"total":%d,"pages":%d}}`, f.n, f.n)
	})
	mux.HandleFunc("POST /api/users", func(w http.ResponseWriter, r *http.Request) {
		var u struct{ Name, Email string }
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&u) != nil || u.Email == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.emails[u.Email] {
			w.WriteHeader(http.StatusConflict)
			return
		}
		f.emails[u.Email] = true
		f.n++
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		f.mu.Lock()
		defer f.mu.Unlock()
		if id < 1 || id > f.n {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"id":%d}`, id)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	return f, srv
}

func mustRun(tb testing.TB, args ...string) []result {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		tb.Fatalf("run(%q): %v\n%s", args, err, stderr.String())
	}
	var results []result
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var res result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			tb.Fatalf("output line %q: %v", sc.Text(), err)
		}
		results = append(results, res)
	}
	return results
}

func TestScenarios(t *testing.T) {
	f, srv := newFakeServer(t)
	args := []string{"-url", srv.URL, "-c", "4", "-d", "100ms", "-seed", "30", "-header", "X-API-Key: secret", "-json",
		"-scenario", "get,list,search,create"}
	results := mustRun(t, args...)
	if got, want := len(results), 4; got != want {
		t.Fatalf("%d results, want %d", got, want)
	}
	for i, name := range []string{"get", "list", "search", "create"} {
		res := results[i]
		if res.Scenario != name || res.Requests == 0 || res.Errors != 0 || res.P50MS <= 0 || res.MaxMS < res.P99MS {
			t.Errorf("result %d = %+v, want scenario %s with requests, no errors and ordered latencies", i, res, name)
		}
	}
	f.mu.Lock()
	for i := 1; i <= 30; i++ {
		if !f.emails[seedEmail(i)] {
			t.Errorf("seed email %s not created", seedEmail(i))
		}
	}
	creates := f.n - 30
	query := f.queries[0]
	f.mu.Unlock()
	if got, want := uint64(creates), results[3].Requests; got != want {
		t.Errorf("server created %d users, create scenario reported %d requests", got, want)
	}
	if !regexp.MustCompile(`^q=user000[0-3]&sort=name&order=desc$`).MatchString(query) {
		t.Errorf("search query = %q, want q=user000N, sorted by name descending", query)
	}

	// The server has enough users now: no second seed.
	mustRun(t, append(args[:len(args)-2], "-scenario", "get")...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if got, want := f.n, 30+creates; got != want {
		t.Errorf("after a second run the server has %d users, want %d (no reseeding)", got, want)
	}
}

// TestDistinct checks that the distinct scenario sends the number of
// requests it is given, however short -d is, each with a q never sent
// before.
func TestDistinct(t *testing.T) {
	f, srv := newFakeServer(t)
	run := func() result {
		t.Helper()
		res := mustRun(t, "-url", srv.URL, "-c", "4", "-d", "1ns", "-requests", "250", "-header", "X-API-Key: secret",
			"-json", "-scenario", "distinct")
		if len(res) != 1 || res[0].Scenario != "distinct" {
			t.Fatalf("results = %+v, want one for distinct", res)
		}
		return res[0]
	}
	for range 2 { // a second run sends none of the first run's queries
		if res := run(); res.Requests != 250 || res.Errors != 0 {
			t.Errorf("distinct: %d requests, %d errors; want 250 and none", res.Requests, res.Errors)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := make(map[string]bool)
	for _, q := range f.queries {
		v, err := url.ParseQuery(q)
		if err != nil || len(v) != 1 || !strings.HasPrefix(v.Get("q"), "distinct-") || seen[q] {
			t.Fatalf("query %q: want only q=distinct-..., never repeated", q)
		}
		seen[q] = true
	}
	if len(seen) != 500 {
		t.Errorf("server saw %d distinct queries, want 500", len(seen))
	}

	// Without -requests, distinct alone is bounded by count; the others
	// run for -d.
	c, err := parseFlags([]string{"-scenario", "distinct,get"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := requestsOf(&c, "distinct"), 200_000; got != want {
		t.Errorf("distinct sends %d requests by default, want %d", got, want)
	}
	if got := requestsOf(&c, "get"); got != 0 {
		t.Errorf("get sends %d requests by default, want 0 (runs for -d)", got)
	}
}

func TestErrorsByStatus(t *testing.T) {
	_, srv := newFakeServer(t)
	// No seed and no key: every request is a 401.
	res := mustRun(t, "-url", srv.URL, "-c", "2", "-d", "50ms", "-json")[0]
	if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsBy["401"] != int64(res.Requests) {
		t.Errorf("result = %+v, want every request counted as a 401 error", res)
	}
}

func TestSeedFailsWithoutCredentials(t *testing.T) {
	_, srv := newFakeServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-url", srv.URL, "-seed", "10", "-d", "50ms"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("run = %v, want an error naming the 401", err)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-scenario", "bogus"},
		{"-c", "0"},
		{"-requests", "-1"},
		{"-url", "127.0.0.1:8080"},
		{"-header", "novalue"},
		{"extra"},
	} {
		var stderr bytes.Buffer
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}
