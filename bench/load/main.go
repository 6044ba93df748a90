// Command load drives a running resourceapi server over HTTP and reports
// throughput and latency per scenario, so that the project can measure itself
// with nothing but its own Go code.
//
// It is a closed-loop generator: each of -c workers holds one keep-alive
// connection and sends its next request when the previous answer has been
// read. Under overload that hides queueing delay ("coordinated omission"), so
// treat its latencies as service times at the throughput shown, and use a
// constant-rate tool (vegeta) to measure latency at a fixed offered load.
//
//	load -url http://127.0.0.1:8080 -c 64 -d 10s -seed 10000 -scenario get,list,search,create,distinct
//	load -url http://127.0.0.1:8080 -seed 10000 -seed-orders 100000 -scenario order,orders,create-order
//
// Seeded users are named "User 00042" with email "user00042@example.com"
// (five digits, wider past 99999), so the search scenario's q=user0004
// matches the ten users user00040 to user00049 by email. Users made by the
// create scenario are "Load <worker>-<n>" with email
// load-<run>-<worker>-<n>@example.com, which no search substring matches.
//
// Orders are of seeded products (-products, "Product 00042", created first
// when an order scenario runs or orders are seeded) and belong to users
// 1..-order-users: seeded order i to user 1+(i-1)%N, with 1 to 3 items.
//
// Scenarios run for -d each, except that distinct, which measures what a
// server keeps per query it has seen, sends a fixed number of requests
// (200,000 unless -requests says otherwise), so that the server's memory
// after it can be compared between runs and machines.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "load:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	base      string // URL without a trailing slash
	conns     int
	duration  time.Duration
	timeout   time.Duration
	scenarios []string
	seed      int
	posts     int // posts to create for each of users 1..20
	users     int
	requests  int // per scenario; 0: run for duration
	// Orders: how many to seed, how many the order scenario draws ids
	// from, the products they are made of, and the users they belong to.
	seedOrders int
	orders     int
	products   int
	orderUsers int
	header     http.Header
	host       string
	// OAuth: the client (id and secret) of the token scenarios, and the
	// account (email and password) of token-password.
	clientID, clientSecret string
	login, password        string
	json                   bool
	gzip                   bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rawURL := fs.String("url", "http://127.0.0.1:8080", "base `URL` of the server")
	fs.IntVar(&c.conns, "c", 64, "concurrent workers, each with its own keep-alive connection")
	fs.DurationVar(&c.duration, "d", 10*time.Second, "how long to run each scenario")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "limit on one request; a request that exceeds it counts as an error")
	scenarios := fs.String("scenario", "get", "comma-separated `list` of scenarios: "+strings.Join(scenarioNames(), ", "))
	fs.IntVar(&c.seed, "seed", 0, "create `N` users first, unless the server already has at least N; 0 seeds nothing")
	fs.IntVar(&c.posts, "posts", 0, "create `N` posts for each of users 1..20 first (for gql-list)")
	fs.IntVar(&c.users, "users", 0, "how many users the scenarios draw ids and pages from (`N`); default the -seed value, or 10000")
	fs.IntVar(&c.seedOrders, "seed-orders", 0, "create orders until the server has `N`, spread over the -order-users users; 0 seeds none")
	fs.IntVar(&c.orders, "orders", 0, "how many orders the order scenario draws ids from (`N`); default the -seed-orders value, or 100000")
	fs.IntVar(&c.products, "products", 1000, "create products until the server has `N` before orders are seeded or created, and make orders of products 1..N")
	fs.IntVar(&c.orderUsers, "order-users", 1000, "orders belong to users 1..`N` (which must exist): seeded and created ones, and the user pages of orders")
	fs.IntVar(&c.requests, "requests", 0, "send `N` requests per scenario, however long they take, instead of running for -d; by default distinct sends "+strconv.Itoa(distinctRequests)+" and the others run for -d")
	fs.Func("client", "the OAuth client `ID:SECRET` of the token scenarios (client create --grant password --grant client_credentials)", func(s string) error {
		var ok bool
		c.clientID, c.clientSecret, ok = strings.Cut(s, ":")
		if !ok || c.clientID == "" {
			return errors.New("want ID:SECRET")
		}
		return nil
	})
	fs.Func("login", "the account `EMAIL:PASSWORD` of token-password", func(s string) error {
		var ok bool
		c.login, c.password, ok = strings.Cut(s, ":")
		if !ok || c.login == "" {
			return errors.New("want EMAIL:PASSWORD")
		}
		return nil
	})
	c.header = make(http.Header)
	fs.Func("header", "add header `K:V` to every request (repeatable), for example X-API-Key:secret", func(s string) error {
		k, v, ok := strings.Cut(s, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return errors.New("want K:V")
		}
		if strings.EqualFold(k, "Host") {
			c.host = v // net/http takes the Host header from Request.Host only.
		} else {
			c.header.Add(k, v)
		}
		return nil
	})
	fs.BoolVar(&c.json, "json", false, "print one JSON object per scenario instead of a text line")
	fs.BoolVar(&c.gzip, "gzip", false, "send Accept-Encoding: gzip and decompress, as browsers do; off by default like wrk, so both measure the same work")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	u, err := url.Parse(*rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("-url %q: want http://host:port", *rawURL)
	}
	c.base = strings.TrimSuffix(u.String(), "/")
	if c.conns < 1 || c.duration <= 0 || c.timeout <= 0 || c.seed < 0 || c.users < 0 || c.requests < 0 {
		return c, errors.New("-c, -d and -timeout must be positive, -seed, -users and -requests not negative")
	}
	if c.seedOrders < 0 || c.orders < 0 || c.products < 1 || c.orderUsers < 1 {
		return c, errors.New("-products and -order-users must be positive, -seed-orders and -orders not negative")
	}
	for name := range strings.SplitSeq(*scenarios, ",") {
		if _, ok := scenarioByName[name]; !ok {
			return c, fmt.Errorf("unknown scenario %q: want one of %s", name, strings.Join(scenarioNames(), ", "))
		}
		c.scenarios = append(c.scenarios, name)
	}
	if c.users == 0 {
		c.users = c.seed
	}
	if c.users == 0 {
		c.users = 10000
	}
	if c.orders == 0 {
		c.orders = c.seedOrders
	}
	if c.orders == 0 {
		c.orders = 100000
	}
	for _, name := range c.scenarios {
		if strings.HasPrefix(name, "token-") && c.clientID == "" {
			return c, fmt.Errorf("scenario %s needs -client", name)
		}
		if name == "token-password" && c.login == "" {
			return c, errors.New("scenario token-password needs -login")
		}
	}
	return c, nil
}

// ordersNeeded reports whether the run makes orders (seeds them, or runs an
// order scenario), which needs products.
func ordersNeeded(c *config) bool {
	return c.seedOrders > 0 || slices.ContainsFunc(c.scenarios, func(name string) bool { return strings.Contains(name, "order") })
}

// request is what a scenario asks a worker to send.
type request struct {
	method, path string
	body         []byte
	contentType  string // of body; application/json when empty
}

// scenario returns the next request of worker w, whose n-th request this is.
type scenario func(c *config, run string, w, n int) request

// scenarioByName lists the scenarios that -scenario accepts.
var scenarioByName = map[string]scenario{
	// One user by a random id. Ids start at 1 (the first admin) and the seeded
	// users follow, so all of 1..users exist on a freshly seeded server.
	"get": func(c *config, _ string, _, _ int) request {
		return request{method: "GET", path: "/api/users/" + strconv.Itoa(1+rand.IntN(c.users))}
	},
	// A random page of 20 in id order: offset paging cost grows with the page.
	"list": func(c *config, _ string, _, _ int) request {
		pages := max(1, c.users/20)
		return request{method: "GET", path: "/api/users?page=" + strconv.Itoa(1+rand.IntN(pages)) + "&limit=20"}
	},
	// A substring search that matches about ten users, sorted by a non-id
	// field: the store cannot answer it from the primary key.
	"search": func(c *config, _ string, _, _ int) request {
		q := seedEmail(1 + rand.IntN(c.users))
		q = q[:strings.IndexByte(q, '@')-1] // user00042 -> user0004
		return request{method: "GET", path: "/api/users?q=" + url.QueryEscape(q) + "&sort=name&order=desc"}
	},
	// GraphQL's counterpart of get: one user's name and email by a random
	// id, the document the same every time (the id is a variable), so the
	// server parses and validates it once.
	"gql-get": func(c *config, _ string, _, _ int) request {
		return request{method: "POST", path: "/graphql", body: []byte(`{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"` +
			strconv.Itoa(1+rand.IntN(c.users)) + `"}}`)}
	},
	// The first 20 users with their posts' titles: a list, and a batched
	// read of the posts of all of them (see -posts).
	"gql-list": func(_ *config, _ string, _, _ int) request {
		return request{method: "POST", path: "/graphql", body: []byte(`{"query":"{ users(limit: 20) { id name posts { title } } }"}`)}
	},
	// A new user with an email no run has used: every request is one write
	// transaction with a uniqueness check.
	"create": func(_ *config, run string, w, n int) request {
		id := strconv.Itoa(w) + "-" + strconv.Itoa(n)
		return request{method: "POST", path: "/api/users", body: userJSON("Load "+id, "load-"+run+"-"+id+"@example.com", 30)}
	},
	// A change of a random user's age: one write transaction that locks
	// the row, checks it and updates it; on PostgreSQL its commit also moves
	// the identity version (one row every user change updates).
	"update": func(c *config, _ string, _, _ int) request {
		return request{method: "PATCH", path: "/api/users/" + strconv.Itoa(1+rand.IntN(c.users)),
			body: []byte(`{"age":` + strconv.Itoa(18+rand.IntN(60)) + `}`)}
	},
	// One order, with its items, by a random id among the first -users
	// (seeded orders have ids 1..N on a fresh server): the same number of
	// distinct records as get reads, so that the two compare what it costs to
	// read and represent one record of each, with equal chances of a cache
	// hit.
	"order": func(c *config, _ string, _, _ int) request {
		return request{method: "GET", path: "/api/orders/" + strconv.Itoa(1+rand.IntN(min(c.users, c.orders)))}
	},
	// One order by a random id among all -orders: ten times get's working
	// set with the defaults, so that most reads miss the server's cache.
	"order-all": func(c *config, _ string, _, _ int) request {
		return request{method: "GET", path: "/api/orders/" + strconv.Itoa(1+rand.IntN(c.orders))}
	},
	// A random order-holding user's first page of 20 orders: the nested
	// collection, narrowed by owner, with its total.
	"orders": func(c *config, _ string, _, _ int) request {
		return request{method: "GET", path: "/api/users/" + strconv.Itoa(1+rand.IntN(c.orderUsers)) + "/orders?limit=20"}
	},
	// A new order of 1 to 3 random products for a random order-holding
	// user: one write transaction that looks up each price and writes the
	// order and its items.
	"create-order": func(c *config, _ string, _, _ int) request {
		items := make([]orderItem, 1+rand.IntN(3))
		for i := range items {
			items[i] = orderItem{ProductID: 1 + rand.IntN(c.products), Quantity: 1 + rand.IntN(5)}
		}
		return request{method: "POST", path: "/api/orders", body: orderJSON(1+rand.IntN(c.orderUsers), items)}
	},
	// An access token for -login through the password grant, the client
	// authenticated by form fields: a password verification per request.
	"token-password": func(c *config, _ string, _, _ int) request {
		return tokenRequest(url.Values{"grant_type": {"password"}, "username": {c.login}, "password": {c.password},
			"client_id": {c.clientID}, "client_secret": {c.clientSecret}})
	},
	// An access token for the -client itself (client credentials grant).
	"token-client": func(c *config, _ string, _, _ int) request {
		return tokenRequest(url.Values{"grant_type": {"client_credentials"}, "client_id": {c.clientID}, "client_secret": {c.clientSecret}})
	},
	// A search no request of any run has sent before, which matches nobody:
	// whatever the server keeps per distinct query (cached empty pages)
	// grows with every request, so the server's memory after a fixed number
	// of them shows whether that is bounded.
	"distinct": func(_ *config, run string, w, n int) request {
		return request{method: "GET", path: "/api/users?q=distinct-" + run + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(n)}
	},
}

// tokenRequest is a POST of form to the OAuth token endpoint.
func tokenRequest(form url.Values) request {
	return request{method: "POST", path: "/oauth/token", body: []byte(form.Encode()), contentType: "application/x-www-form-urlencoded"}
}

// distinctRequests is how many requests the distinct scenario sends unless
// -requests is given: the figure the project tracks (server memory after
// 200,000 distinct queries).
const distinctRequests = 200_000

// requestsOf returns how many requests scenario name sends, 0 when it runs
// for c.duration instead.
func requestsOf(c *config, name string) int {
	switch {
	case c.requests > 0:
		return c.requests
	case name == "distinct":
		return distinctRequests
	}
	return 0
}

func scenarioNames() []string {
	names := make([]string, 0, len(scenarioByName))
	for name := range scenarioByName {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func seedName(i int) string  { return fmt.Sprintf("User %05d", i) }
func seedEmail(i int) string { return fmt.Sprintf("user%05d@example.com", i) }

func productName(i int) string { return fmt.Sprintf("Product %05d", i) }

func productJSON(i int) []byte {
	b, _ := json.Marshal(map[string]any{"name": productName(i), "price_cents": 100 + (i*7919)%100000})
	return b
}

type orderItem struct {
	ProductID int `json:"product_id"`
	Quantity  int `json:"quantity"`
}

func orderJSON(user int, items []orderItem) []byte {
	b, _ := json.Marshal(map[string]any{"user_id": user, "items": items})
	return b
}

// seedOrder returns the body of seeded order i (1-based): user 1+(i-1)%N,
// 1 to 3 items of products spread over all of them.
func seedOrder(c *config, i int) []byte {
	items := make([]orderItem, 1+i%3)
	for k := range items {
		items[k] = orderItem{ProductID: 1 + (i*7919+k*104729)%c.products, Quantity: 1 + (i+k)%4}
	}
	return orderJSON(1+(i-1)%c.orderUsers, items)
}

func userJSON(name, email string, age int) []byte {
	b, _ := json.Marshal(map[string]any{"name": name, "email": email, "age": age})
	return b
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	client := newClient(&c)
	defer client.CloseIdleConnections()
	if c.seed > 0 {
		if err := seed(ctx, &c, client, stderr); err != nil {
			return err
		}
	}
	if c.posts > 0 {
		if err := seedPosts(ctx, &c, client, stderr); err != nil {
			return err
		}
	}
	if ordersNeeded(&c) {
		if err := seedOrders(ctx, &c, client, stderr); err != nil {
			return err
		}
	}
	// Distinguishes this run's created users from an earlier run's.
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, name := range c.scenarios {
		res := load(ctx, &c, client, name, runID)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := report(stdout, &c, res); err != nil {
			return err
		}
	}
	return nil
}

// newClient returns a client whose pool holds exactly one connection per
// worker, so that the server sees -c keep-alive connections and no worker
// waits for, or opens, another.
func newClient(c *config) *http.Client {
	return &http.Client{
		Timeout: c.timeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback; never through $HTTP_PROXY
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        c.conns,
			MaxIdleConnsPerHost: c.conns,
			MaxConnsPerHost:     c.conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  !c.gzip,
		},
		// A redirect would be a second request the figures do not show.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// do sends one request and reads the whole body, which the transport needs
// before it can reuse the connection.
func do(ctx context.Context, c *config, client *http.Client, r request) (status int, err error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, body)
	if err != nil {
		return 0, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Host = c.host
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

// seedPosts creates c.posts posts for each of users 1..20, for gql-list.
func seedPosts(ctx context.Context, c *config, client *http.Client, stderr io.Writer) error {
	n := 0
	for u := 1; u <= 20; u++ {
		for i := range c.posts {
			body := fmt.Appendf(nil, `{"title":"Post %d of user %d","content":"Seeded for gql-list.","author_id":%d}`, i, u, u)
			status, err := do(ctx, c, client, request{method: "POST", path: "/api/posts", body: body})
			if err == nil && status != http.StatusCreated {
				err = fmt.Errorf("status %d", status)
			}
			if err != nil {
				return fmt.Errorf("seed posts: %w", err)
			}
			n++
		}
	}
	fmt.Fprintf(stderr, "seed: created %d posts\n", n)
	return nil
}

// seed creates users 1..c.seed unless the server already has as many. An
// existing email (409) counts as created, so an interrupted seed can be
// resumed.
func seed(ctx context.Context, c *config, client *http.Client, stderr io.Writer) error {
	total, err := count(ctx, c, client, "/api/users")
	if err != nil {
		return err
	}
	if total >= c.seed {
		fmt.Fprintf(stderr, "seed: server has %d users, not seeding\n", total)
		return nil
	}
	return create(ctx, c, client, stderr, "users", 1, c.seed, func(i int) request {
		return request{method: "POST", path: "/api/users", body: userJSON(seedName(i), seedEmail(i), 18+i%70)}
	})
}

// seedOrders creates the products orders are made of, and then orders,
// until the server has c.products and c.seedOrders of them. Neither is
// unique, so an interrupted seed resumes from the count the server reports.
// It first checks that the users orders belong to exist.
func seedOrders(ctx context.Context, c *config, client *http.Client, stderr io.Writer) error {
	users, err := count(ctx, c, client, "/api/users")
	if err != nil {
		return err
	}
	if users < c.orderUsers {
		return fmt.Errorf("seed orders: the server has %d users, fewer than -order-users %d (seed more with -seed)", users, c.orderUsers)
	}
	for _, s := range []struct {
		name, path string
		want       int
		body       func(i int) []byte
	}{
		{"products", "/api/products", c.products, productJSON},
		{"orders", "/api/orders", c.seedOrders, func(i int) []byte { return seedOrder(c, i) }},
	} {
		have, err := count(ctx, c, client, s.path)
		if err != nil {
			return err
		}
		if have >= s.want {
			// Said only when seeding was asked for: an order scenario
			// alone makes sure of the products on every run.
			if s.want > 0 && c.seedOrders > 0 {
				fmt.Fprintf(stderr, "seed: server has %d %s, not seeding\n", have, s.name)
			}
			continue
		}
		err = create(ctx, c, client, stderr, s.name, have+1, s.want, func(i int) request {
			return request{method: "POST", path: s.path, body: s.body(i)}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// create sends the requests req(from)..req(to) with c.conns workers and
// reports how long they took. Each must be answered 201, or 409 (a unique
// value that an earlier, interrupted seed created).
func create(ctx context.Context, c *config, client *http.Client, stderr io.Writer, what string, from, to int, req func(i int) request) error {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range c.conns {
		wg.Go(func() {
			for i := range next {
				r := req(i)
				status, err := do(ctx, c, client, r)
				if err == nil && status != http.StatusCreated && status != http.StatusConflict {
					err = fmt.Errorf("status %d", status)
				}
				if err != nil {
					cancel(fmt.Errorf("seed: %s %s %d: %w", r.method, r.path, i, err))
					return
				}
			}
		})
	}
feed:
	for i := from; i <= to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	elapsed := time.Since(start)
	n := to - from + 1
	fmt.Fprintf(stderr, "seed: created %d %s in %.1fs (%.0f/s)\n", n, what, elapsed.Seconds(), float64(n)/elapsed.Seconds())
	return nil
}

// count returns pagination.total of the collection at path, which is also
// the check that the URL and credentials work before any load is sent.
func count(ctx context.Context, c *config, client *http.Client, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path+"?limit=1", nil)
	if err != nil {
		return 0, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Host = c.host
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("count %s: GET %s?limit=1: %s: %s", path, path, resp.Status, bytes.TrimSpace(body))
	}
	var page struct {
		Pagination struct {
			Total *int `json:"total"`
		} `json:"pagination"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || page.Pagination.Total == nil {
		return 0, fmt.Errorf("count %s: no pagination.total in the response (%v)", path, err)
	}
	return *page.Pagination.Total, nil
}

// result is what one scenario measured. Latencies cover every request that
// got a response, whatever its status; requests that got none (refused,
// reset, timed out) count only as errors.
type result struct {
	Scenario    string           `json:"scenario"`
	Connections int              `json:"connections"`
	Seconds     float64          `json:"seconds"`
	Requests    uint64           `json:"requests"`
	RPS         float64          `json:"rps"`
	MeanMS      float64          `json:"mean_ms"`
	P50MS       float64          `json:"p50_ms"`
	P90MS       float64          `json:"p90_ms"`
	P99MS       float64          `json:"p99_ms"`
	MaxMS       float64          `json:"max_ms"`
	Errors      uint64           `json:"errors"`
	ErrorsBy    map[string]int64 `json:"errors_by,omitempty"` // by status, or "transport"
}

// worker is one closed loop. Each keeps its own histogram and counts so that
// recording takes no lock; they are merged at the end.
type worker struct {
	hist     histogram
	requests uint64
	errors   map[string]int64
}

// load runs scenario name with c.conns workers, for c.duration or until they
// have sent the scenario's number of requests (requestsOf).
func load(ctx context.Context, c *config, client *http.Client, name, runID string) result {
	next := scenarioByName[name]
	workers := make([]*worker, c.conns)
	start := time.Now()
	deadline := start.Add(c.duration)
	total := int64(requestsOf(c, name))
	var issued atomic.Int64
	more := func() bool {
		if total > 0 {
			return issued.Add(1) <= total
		}
		return time.Now().Before(deadline)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wk := &worker{errors: make(map[string]int64)}
		workers[w] = wk
		wg.Go(func() {
			// A request under way at the deadline is allowed to finish (within
			// -timeout) rather than cancelled, so the end of a run does not
			// manufacture errors; elapsed time includes it.
			for n := 0; ctx.Err() == nil && more(); n++ {
				r := next(c, runID, w, n)
				t0 := time.Now()
				status, err := do(ctx, c, client, r)
				d := time.Since(t0)
				if ctx.Err() != nil {
					return // interrupted: the request says nothing about the server
				}
				wk.requests++
				switch {
				case err != nil && status == 0:
					wk.errors["transport"]++
					continue
				case err != nil:
					wk.errors["transport"]++
				case status < 200 || status > 299:
					wk.errors[strconv.Itoa(status)]++
				}
				wk.hist.record(d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	var h histogram
	res := result{Scenario: name, Connections: c.conns, Seconds: elapsed.Seconds(), ErrorsBy: make(map[string]int64)}
	for _, wk := range workers {
		h.merge(&wk.hist)
		res.Requests += wk.requests
		for k, n := range wk.errors {
			res.ErrorsBy[k] += n
			res.Errors += uint64(n)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	res.RPS = float64(res.Requests) / elapsed.Seconds()
	res.MeanMS, res.MaxMS = ms(h.mean()), ms(h.max)
	res.P50MS, res.P90MS, res.P99MS = ms(h.quantile(0.50)), ms(h.quantile(0.90)), ms(h.quantile(0.99))
	if len(res.ErrorsBy) == 0 {
		res.ErrorsBy = nil
	}
	return res
}

func report(w io.Writer, c *config, res result) error {
	if c.json {
		return json.NewEncoder(w).Encode(res)
	}
	line := fmt.Sprintf("%-7s c=%d requests=%d rps=%.1f p50=%.3fms p90=%.3fms p99=%.3fms max=%.3fms errors=%d",
		res.Scenario, res.Connections, res.Requests, res.RPS, res.P50MS, res.P90MS, res.P99MS, res.MaxMS, res.Errors)
	if len(res.ErrorsBy) > 0 {
		kinds := make([]string, 0, len(res.ErrorsBy))
		for k, n := range res.ErrorsBy {
			kinds = append(kinds, k+"="+strconv.FormatInt(n, 10))
		}
		slices.Sort(kinds)
		line += " (" + strings.Join(kinds, " ") + ")"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
