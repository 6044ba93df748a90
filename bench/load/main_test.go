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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeServer is just enough of resourceapi's API for load to drive: users
// with ids from 1 and unique emails, products, orders of products for users
// (nested under them too), the list envelope's pagination.total, an API
// key on every request but those of the OAuth token endpoint.
type fakeServer struct {
	mu       sync.Mutex
	emails   map[string]bool
	n        int
	queries  []string
	products int
	orders   []fakeOrder
	pages    []string // the paths of nested order lists
	read     []int    // the ids of orders read
	tokens   []url.Values
}

type fakeOrder struct {
	User  int
	Items []struct{ ProductID, Quantity int }
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
	mux.HandleFunc("GET /api/products", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		fmt.Fprintf(w, `{"data":[],"pagination":{"page":1,"limit":1,"total":%d,"pages":%d}}`, f.products, f.products)
	})
	mux.HandleFunc("POST /api/products", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Name       string
			PriceCents *int `json:"price_cents"`
		}
		if json.NewDecoder(r.Body).Decode(&p) != nil || p.Name == "" || p.PriceCents == nil || *p.PriceCents < 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.products++
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/orders", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		fmt.Fprintf(w, `{"data":[],"pagination":{"page":1,"limit":1,"total":%d,"pages":%d}}`, len(f.orders), len(f.orders))
	})
	mux.HandleFunc("POST /api/orders", func(w http.ResponseWriter, r *http.Request) {
		var o struct {
			UserID int `json:"user_id"`
			Items  []struct {
				ProductID int `json:"product_id"`
				Quantity  int
			}
		}
		if json.NewDecoder(r.Body).Decode(&o) != nil || len(o.Items) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		order := fakeOrder{User: o.UserID}
		for _, it := range o.Items {
			if it.ProductID < 1 || it.ProductID > f.products || it.Quantity < 1 {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
			order.Items = append(order.Items, struct{ ProductID, Quantity int }{it.ProductID, it.Quantity})
		}
		if o.UserID < 1 || o.UserID > f.n {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		f.orders = append(f.orders, order)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		f.mu.Lock()
		defer f.mu.Unlock()
		if id < 1 || id > len(f.orders) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		f.read = append(f.read, id)
		fmt.Fprintf(w, `{"id":%d}`, id)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokens = append(f.tokens, r.PostForm)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"x","token_type":"Bearer","expires_in":900}`)
	})
	mux.HandleFunc("GET /api/users/{id}/orders", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pages = append(f.pages, r.URL.RequestURI())
		if id < 1 || id > f.n {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprint(w, `{"data":[],"pagination":{"page":1,"limit":20,"total":0,"pages":0}}`)
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
		// The token endpoint authenticates by what its form holds.
		if r.Header.Get("X-API-Key") != "secret" && r.URL.Path != "/oauth/token" {
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

// TestOrderScenarios seeds products and orders, runs the order scenarios,
// and checks what the server got: orders of seeded products for users
// 1..-order-users, each of 1 to 3 items, and pages of those users' orders.
func TestOrderScenarios(t *testing.T) {
	f, srv := newFakeServer(t)
	args := []string{"-url", srv.URL, "-c", "4", "-d", "100ms", "-seed", "12", "-seed-orders", "60", "-products", "7",
		"-order-users", "5", "-header", "X-API-Key: secret", "-json", "-scenario", "order,orders,create-order"}
	results := mustRun(t, args...)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	for i, name := range []string{"order", "orders", "create-order"} {
		if res := results[i]; res.Scenario != name || res.Requests == 0 || res.Errors != 0 {
			t.Errorf("result %d = %+v, want scenario %s with requests and no errors", i, res, name)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.products != 7 {
		t.Errorf("server has %d products, want the 7 seeded", f.products)
	}
	if got, want := uint64(len(f.orders)), 60+results[2].Requests; got != want {
		t.Errorf("server has %d orders, want 60 seeded and %d created", got, results[2].Requests)
	}
	users := map[int]bool{}
	for i, o := range f.orders {
		users[o.User] = true
		if o.User < 1 || o.User > 5 || len(o.Items) < 1 || len(o.Items) > 3 {
			t.Fatalf("order %d = %+v, want a user of 1..5 and 1 to 3 items", i+1, o)
		}
	}
	if len(users) != 5 {
		t.Errorf("orders belong to %d users, want all 5", len(users))
	}
	for _, p := range f.pages {
		if !regexp.MustCompile(`^/api/users/[1-5]/orders\?limit=20$`).MatchString(p) {
			t.Fatalf("orders page %q, want /api/users/<1..5>/orders?limit=20", p)
		}
	}

	// A second run seeds nothing more; too few users for -order-users is
	// refused before any order is sent.
	n := len(f.orders)
	f.mu.Unlock()
	mustRun(t, append(args[:len(args)-2], "-scenario", "order")...)
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-url", srv.URL, "-order-users", "500", "-header", "X-API-Key: secret",
		"-d", "10ms", "-scenario", "orders"}, io.Discard, &stderr)
	f.mu.Lock()
	if len(f.orders) != n {
		t.Errorf("a second run made %d more orders, want none", len(f.orders)-n)
	}
	if err == nil || !strings.Contains(err.Error(), "-order-users") {
		t.Errorf("run with -order-users above the users = %v, want an error naming it", err)
	}
}

// TestOrderWorkingSets: order reads ids of 1..-users only, the working set
// of get, and order-all reads any of the -orders.
func TestOrderWorkingSets(t *testing.T) {
	f, srv := newFakeServer(t)
	args := []string{"-url", srv.URL, "-c", "4", "-d", "100ms", "-seed", "10", "-seed-orders", "200", "-products", "3",
		"-order-users", "5", "-header", "X-API-Key: secret", "-json"}
	mustRun(t, append(args, "-scenario", "order")...)
	f.mu.Lock()
	if len(f.read) == 0 || slices.Max(f.read) > 10 {
		t.Errorf("order read %d orders, ids up to %d, want some and all of 1..10", len(f.read), slices.Max(append(f.read, 0)))
	}
	f.read = nil
	f.mu.Unlock()
	mustRun(t, append(args, "-scenario", "order-all")...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.read) < 100 || slices.Max(f.read) <= 10 {
		t.Errorf("order-all read %d orders, ids up to %d, want ids beyond 10", len(f.read), slices.Max(append(f.read, 0)))
	}
}

// TestTokenScenarios: the token scenarios post the grant's form, the client
// by form fields, and refuse to run without the client or the account.
func TestTokenScenarios(t *testing.T) {
	f, srv := newFakeServer(t)
	results := mustRun(t, "-url", srv.URL, "-c", "2", "-d", "50ms", "-json", "-client", "cid:csecret",
		"-login", "ann@example.com:pa:ss", "-scenario", "token-password,token-client")
	for i, res := range results {
		if res.Requests == 0 || res.Errors != 0 {
			t.Errorf("result %d = %+v, want requests and no errors", i, res)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var password, client int
	for _, form := range f.tokens {
		if form.Get("client_id") != "cid" || form.Get("client_secret") != "csecret" {
			t.Fatalf("token form %v, want client cid by form fields", form)
		}
		switch form.Get("grant_type") {
		case "password":
			password++
			if form.Get("username") != "ann@example.com" || form.Get("password") != "pa:ss" {
				t.Fatalf("password grant form %v, want ann@example.com and pa:ss", form)
			}
		case "client_credentials":
			client++
		default:
			t.Fatalf("token form %v, want a password or client_credentials grant", form)
		}
	}
	if password == 0 || client == 0 {
		t.Errorf("%d password and %d client grants, want some of each", password, client)
	}
	for _, args := range [][]string{
		{"-scenario", "token-client"},
		{"-scenario", "token-password", "-client", "a:b"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
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
		{"-products", "0"},
		{"-order-users", "0"},
		{"-seed-orders", "-1"},
		{"-url", "127.0.0.1:8080"},
		{"-header", "novalue"},
		{"-client", "nocolon"},
		{"-login", ":pw"},
		{"extra"},
	} {
		var stderr bytes.Buffer
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}
