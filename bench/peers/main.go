// Command peers is the helper of bench/peers.sh, which measures resourceapi
// against a bare net/http handler, PocketBase and PostGraphile in one run. It
// defines the data set once and loads it into each server, makes the
// credentials the peers need, and turns the run's raw figures into the table
// of the targets.
//
//	peers seed -url http://127.0.0.1:8080 -header 'X-API-Key:k' -users 10000 -posts 2
//	peers pocketbase -url http://127.0.0.1:8090 -email a@b.c -password p -users 10000
//	peers jwt -secret S
//	peers table results.txt
//	peers statements -requests 10 -explain explain.sql <log-lines
//
// The data set: users 1..N, user 1 being the service's first admin (it
// exists before the seed), user i named "User 00042" with email
// user00042@example.com and age 18 + i%70, and every eighth user (i%8 == 0)
// named with " Abc" after the number, so that q=abc matches N/8 users (1,250
// of 10,000), q=example every user, and q=qzx none. Each user i has posts
// 2(i-1)+1 .. 2(i-1)+P, titled "Post k of user 00042".
//
// The service is seeded with PUT, which creates a record under the id its
// client chooses, so that user i and its posts have the same ids on every
// store and every run. PocketBase gets the same users, with ids
// u00000000000042 (its ids are 15 characters of [a-z0-9]).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "peers:", err)
		}
		os.Exit(2)
	}
}

const usage = "usage: peers seed|pocketbase|jwt|table|statements [flags]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "seed":
		return seedCommand(ctx, args[1:], stderr)
	case "pocketbase":
		return pocketbaseCommand(ctx, args[1:], stdout, stderr)
	case "jwt":
		return jwtCommand(args[1:], stdout, stderr)
	case "table":
		return tableCommand(args[1:], stdout, stderr)
	case "statements":
		return statementsCommand(args[1:], os.Stdin, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q: %s", args[0], usage)
}

// The data set.

func userName(i int) string {
	if i%8 == 0 {
		return fmt.Sprintf("User %05d Abc", i)
	}
	return fmt.Sprintf("User %05d", i)
}

func userEmail(i int) string { return fmt.Sprintf("user%05d@example.com", i) }

func userAge(i int) int { return 18 + i%70 }

// pocketbaseID is user i's id on PocketBase.
func pocketbaseID(i int) string { return fmt.Sprintf("u%014d", i) }

func userJSON(i int, id string) []byte {
	m := map[string]any{"name": userName(i), "email": userEmail(i), "age": userAge(i)}
	if id != "" {
		m["id"] = id
	}
	b, _ := json.Marshal(m)
	return b
}

// postID is the id of user i's k-th post (k from 1) when each has perUser.
func postID(i, k, perUser int) int { return (i-1)*perUser + k }

func postJSON(i, k int) []byte {
	b, _ := json.Marshal(map[string]any{
		"title":     fmt.Sprintf("Post %d of user %05d", k, i),
		"content":   fmt.Sprintf("Seeded post %d of user %d.", k, i),
		"author_id": i,
	})
	return b
}

// HTTP.

type client struct {
	base   string
	header http.Header
	hc     *http.Client
}

func newClient(base string, conns int) *client {
	return &client{
		base:   strings.TrimSuffix(base, "/"),
		header: make(http.Header),
		hc: &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				Proxy:               nil, // loopback only
				MaxIdleConnsPerHost: conns,
				MaxConnsPerHost:     conns,
			},
		},
	}
}

// do sends a request with a JSON body (nil for none) and returns the status
// and the body of the answer.
func (c *client) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// parallel runs fn(i) for i in from..to with conns workers, and returns the
// first error, after which it starts no more.
func parallel(ctx context.Context, conns, from, to int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
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
	return context.Cause(ctx)
}

// want fails unless status is one of ok, with the start of the body.
func want(what string, status int, body []byte, err error, ok ...int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, s := range ok {
		if status == s {
			return nil
		}
	}
	return fmt.Errorf("%s: status %d: %.300s", what, status, bytes.TrimSpace(body))
}

func headerFlag(h http.Header) func(string) error {
	return func(s string) error {
		k, v, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return errors.New("want K:V")
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		return nil
	}
}

// seed: the service.

func seedCommand(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "base `URL` of resourceapi")
	users := fs.Int("users", 10000, "users 1..`N` (1, the first admin, exists already)")
	posts := fs.Int("posts", 2, "posts of each user")
	conns := fs.Int("c", 32, "concurrent requests")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit on the whole seed")
	header := make(http.Header)
	fs.Func("header", "add header `K:V` to every request (repeatable)", headerFlag(header))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *users < 1 || *posts < 0 || *conns < 1 {
		return errors.New("-users and -c must be positive, -posts not negative")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c := newClient(*url, *conns)
	c.header = header
	start := time.Now()
	// 200: the record was there (an earlier, interrupted seed), 201: created.
	err := parallel(ctx, *conns, 2, *users, func(ctx context.Context, i int) error {
		status, body, err := c.do(ctx, "PUT", "/api/users/"+strconv.Itoa(i), userJSON(i, ""))
		return want("PUT user "+strconv.Itoa(i), status, body, err, 200, 201)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "seed: %d users in %.1fs\n", *users-1, time.Since(start).Seconds())
	start = time.Now()
	err = parallel(ctx, *conns, 1, *users**posts, func(ctx context.Context, n int) error {
		i, k := (n-1) / *posts + 1, (n-1)%*posts+1
		status, body, err := c.do(ctx, "PUT", "/api/posts/"+strconv.Itoa(postID(i, k, *posts)), postJSON(i, k))
		return want("PUT post "+strconv.Itoa(n), status, body, err, 200, 201)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "seed: %d posts in %.1fs\n", *users**posts, time.Since(start).Seconds())
	return nil
}

// pocketbase: set up PocketBase.

// pocketbaseCollection is the collection of the users on PocketBase: the
// fields of a user that the workloads read and write, and, like the
// service's users, an email that is unique. Its rules are left unset, which
// makes every record operation for superusers only: every request must carry
// the superuser's token, which PocketBase verifies (and whose account it
// reads) on each, as the service checks an API key.
const pocketbaseCollection = `{
	"name": "people",
	"type": "base",
	"fields": [
		{"name": "name", "type": "text", "required": true},
		{"name": "email", "type": "email", "required": true},
		{"name": "age", "type": "number"}
	],
	"indexes": ["CREATE UNIQUE INDEX idx_people_email ON people (email)"]
}`

func pocketbaseCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pocketbase", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8090", "base `URL` of PocketBase")
	email := fs.String("email", "", "the superuser's email")
	password := fs.String("password", "", "the superuser's password")
	users := fs.Int("users", 10000, "records 1..`N` to create")
	conns := fs.Int("c", 32, "concurrent requests")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit on the whole setup")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *email == "" || *password == "" || *users < 1 || *conns < 1 {
		return errors.New("-email and -password are required, -users and -c must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c := newClient(*url, *conns)
	auth, _ := json.Marshal(map[string]string{"identity": *email, "password": *password})
	status, body, err := c.do(ctx, "POST", "/api/collections/_superusers/auth-with-password", auth)
	if err := want("sign in", status, body, err, 200); err != nil {
		return err
	}
	var signedIn struct{ Token string }
	if err := json.Unmarshal(body, &signedIn); err != nil || signedIn.Token == "" {
		return fmt.Errorf("sign in: no token in %.200s", body)
	}
	c.header.Set("Authorization", signedIn.Token)
	// Request logs off: PocketBase otherwise writes each request into its
	// logs database.
	status, body, err = c.do(ctx, "PATCH", "/api/settings", []byte(`{"logs":{"maxDays":0}}`))
	if err := want("settings", status, body, err, 200); err != nil {
		return err
	}
	status, body, err = c.do(ctx, "POST", "/api/collections", []byte(pocketbaseCollection))
	if err := want("create collection", status, body, err, 200); err != nil {
		return err
	}
	start := time.Now()
	err = parallel(ctx, *conns, 1, *users, func(ctx context.Context, i int) error {
		status, body, err := c.do(ctx, "POST", "/api/collections/people/records", userJSON(i, pocketbaseID(i)))
		return want("create record "+strconv.Itoa(i), status, body, err, 200)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "pocketbase: %d records in %.1fs\n", *users, time.Since(start).Seconds())
	fmt.Fprintln(stdout, signedIn.Token)
	return nil
}

// jwt: PostGraphile's token.

func jwtCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("jwt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	secret := fs.String("secret", "", "PostGraphile's --jwt-secret")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("-secret is required")
	}
	fmt.Fprintln(stdout, signJWT(*secret, time.Now().Add(*ttl)))
	return nil
}

// signJWT returns an HS256 token that PostGraphile accepts with
// --jwt-secret: its audience is "postgraphile", and it has no role claim, so
// requests run as the connection's role with the claims in jwt.claims.*.
func signJWT(secret string, exp time.Time) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"aud": "postgraphile", "sub": "1", "exp": exp.Unix()})
	unsigned := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

// table: the results.

func tableCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: peers table RESULTS")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	runs, err := parseResults(f)
	if err != nil {
		return err
	}
	printTable(stdout, runs)
	return nil
}

// result is one measured run of a workload: a line of the results file,
// written by peers.sh, of key=value fields.
type result struct {
	Round, Name, Desc string
	Requests          float64
	Seconds           float64
	P50MS, P99MS      float64
	// Errors: responses other than 2xx and 3xx, and failed connects,
	// reads, writes and timeouts.
	Status, Socket float64
	// CPU seconds used during the run by the server measured, by
	// PostgreSQL (all its processes) and by wrk; busy is the machine's
	// non-idle CPU time over all cores during BusySeconds (the run and its
	// start and end), and cores how many it has.
	ServerCPU, PGCPU, WrkCPU, BusyCPU, BusySeconds, Cores float64
	// Sessions PostgreSQL started for the database measured during the run
	// (-1 unknown), and transactions it committed there.
	Sessions, Xacts float64
	// Heap allocations of the server (objects and bytes, -1 unknown).
	Allocs, AllocBytes float64
	Load               string
}

func (r result) rps() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return r.Requests / r.Seconds
}

// perRequest returns x divided by the requests, or -1.
func (r result) perRequest(x float64) float64 {
	if r.Requests <= 0 || x < 0 {
		return -1
	}
	return x / r.Requests
}

func (r result) errors() float64 { return r.Status + r.Socket }

func parseResults(rd io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(rd)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		kv := make(map[string]string)
		for _, f := range strings.Fields(text) {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not key=value", line, f)
			}
			kv[k] = strings.ReplaceAll(v, "_", " ")
		}
		num := func(k string, def float64) float64 {
			v, ok := kv[k]
			if !ok || v == "" {
				return def
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return def
			}
			return x
		}
		r := result{
			Round: kv["round"], Name: kv["name"], Desc: kv["desc"], Load: kv["load"],
			Requests: num("requests", 0), Seconds: num("duration_us", 0) / 1e6,
			P50MS: num("p50_us", 0) / 1e3, P99MS: num("p99_us", 0) / 1e3,
			Status:   num("status", 0),
			Socket:   num("connect", 0) + num("read", 0) + num("write", 0) + num("timeout", 0),
			Sessions: num("sessions", -1), Xacts: num("xacts", -1),
			Allocs: num("allocs", -1), AllocBytes: num("alloc_bytes", -1),
			Cores: num("cores", 1),
		}
		hz := num("clk_tck", 100)
		r.ServerCPU = num("server_ticks", -hz) / hz
		r.PGCPU = num("pg_ticks", -hz) / hz
		r.BusyCPU = num("busy_ticks", -hz) / hz
		r.WrkCPU = num("wrk_ms", -1000) / 1000
		r.BusySeconds = num("busy_ms", -1000) / 1000
		if r.Name == "" || r.Round == "" {
			return nil, fmt.Errorf("line %d: no name or round", line)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// target is one requirement on a workload: a ratio to another workload of
// the same round (of), a throughput (minRPS), a latency (maxP99MS) or a CPU
// time per request of the server (maxCPUus).
type target struct {
	name     string
	of       string
	min      float64
	minRPS   float64
	maxP99MS float64
	maxCPUus float64
}

func (t target) String() string {
	var parts []string
	if t.of != "" {
		parts = append(parts, fmt.Sprintf(">= %gx %s", t.min, t.of))
	}
	if t.minRPS > 0 {
		parts = append(parts, fmt.Sprintf(">= %g req/s", t.minRPS))
	}
	if t.maxP99MS > 0 {
		parts = append(parts, fmt.Sprintf("p99 < %g ms", t.maxP99MS))
	}
	if t.maxCPUus > 0 {
		parts = append(parts, fmt.Sprintf("CPU <= %g µs/req", t.maxCPUus))
	}
	return t.name + " " + strings.Join(parts, ", ")
}

// targets are what the performance work must reach. Comparisons without a
// target (min 0) are printed for information.
var targets = []target{
	{name: "pg-get", of: "bare", min: 0.3},
	{name: "pg-get", maxCPUus: 60},
	{name: "pg-gql-get", of: "pg-get", min: 0.8},
	{name: "pg-gql-get", of: "pgl-get", min: 4},
	{name: "pg-gql-list", of: "pgl-list", min: 3},
	{name: "pg-page3", of: "pg-get", min: 0.5},
	{name: "pg-page-rand", of: "pg-get", min: 0.3},
	{name: "pg-search", minRPS: 1500, maxP99MS: 100},
	{name: "pg-post", minRPS: 3000},
	{name: "pg-patch", minRPS: 3000},
	{name: "sqlite-get", of: "bare", min: 0.6},
	{name: "sqlite-get", maxCPUus: 45},
	{name: "sqlite-gql-get", of: "sqlite-get", min: 0.8},
	{name: "sqlite-post", of: "pb-post", min: 1.5},
	{name: "sqlite-get", of: "pb-get"},
	{name: "pg-search-none", of: "pg-search"},
	{name: "pg-search-all", of: "pg-search"},
	// PostgreSQL alone on the same machine (bench/pgfloor): what a POST
	// gets of what the machine's PostgreSQL does with its statements, and
	// what resourceapi's schema costs against plain tables.
	{name: "pg-post", of: "pg-floor-schema"},
	{name: "pg-floor-schema", of: "pg-floor"},
	{name: "pg-patch", of: "pg-floor-patch"},
}

// verdict is a target's outcome in one round.
type verdict struct {
	value string // what was measured, as the target states it
	ok    bool
	known bool // false: a workload is missing from the round
}

func (t target) check(round map[string]result) verdict {
	r, ok := round[t.name]
	if !ok {
		return verdict{value: "not run"}
	}
	var vals []string
	pass := r.errors() == 0
	if t.of != "" {
		b, ok := round[t.of]
		if !ok || b.rps() == 0 {
			return verdict{value: t.of + " not run"}
		}
		ratio := r.rps() / b.rps()
		vals = append(vals, fmt.Sprintf("%.2fx", ratio))
		pass = pass && ratio >= t.min && b.errors() == 0
	}
	if t.minRPS > 0 {
		vals = append(vals, fmt.Sprintf("%.0f req/s", r.rps()))
		pass = pass && r.rps() >= t.minRPS
	}
	if t.maxP99MS > 0 {
		vals = append(vals, fmt.Sprintf("p99 %.1f ms", r.P99MS))
		pass = pass && r.P99MS < t.maxP99MS
	}
	if t.maxCPUus > 0 {
		cpu := r.perRequest(r.ServerCPU) * 1e6
		if cpu < 0 {
			return verdict{value: "CPU unknown"}
		}
		vals = append(vals, fmt.Sprintf("%.0f µs", cpu))
		pass = pass && cpu <= t.maxCPUus
	}
	return verdict{value: strings.Join(vals, ", "), ok: pass, known: true}
}

func printTable(w io.Writer, runs []result) {
	var rounds []string
	byRound := make(map[string]map[string]result)
	var names []string
	seen := make(map[string]bool)
	for _, r := range runs {
		if byRound[r.Round] == nil {
			byRound[r.Round] = make(map[string]result)
			rounds = append(rounds, r.Round)
		}
		byRound[r.Round][r.Name] = r
		if !seen[r.Name] {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	}
	tw := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	tw("%-15s %-5s %9s %8s %8s %7s %9s %9s %7s %6s %9s %8s %6s  %s\n",
		"workload", "round", "req/s", "p50 ms", "p99 ms", "errors", "svc µs/r", "pg µs/r", "xact/r", "conns", "allocs/r", "KiB/r", "other", "load")
	for _, name := range names {
		for _, round := range rounds {
			r, ok := byRound[round][name]
			if !ok {
				continue
			}
			tw("%-15s %-5s %9.0f %8.2f %8.2f %7.0f %9s %9s %7s %6s %9s %8s %6s  %s\n",
				name, round, r.rps(), r.P50MS, r.P99MS, r.errors(),
				fixed(r.perRequest(r.ServerCPU)*1e6, 0), fixed(r.perRequest(r.PGCPU)*1e6, 0),
				fixed(r.perRequest(r.Xacts), 2), fixed(r.Sessions, 0),
				fixed(r.perRequest(r.Allocs), 0), fixed(r.perRequest(r.AllocBytes)/1024, 1),
				others(r), r.Load)
		}
	}
	tw("\n%-45s", "target")
	for _, round := range rounds {
		tw(" %-30s", "round "+round)
	}
	tw(" %s\n", "verdict")
	for _, t := range targets {
		var oks, known int
		cells := make([]string, 0, len(rounds))
		for _, round := range rounds {
			v := t.check(byRound[round])
			cell := v.value
			if v.known && t.isTarget() {
				known++
				if v.ok {
					oks++
					cell += " ok"
				} else {
					cell += " FAIL"
				}
			}
			cells = append(cells, cell)
		}
		if !t.isTarget() && allNotRun(cells) {
			continue
		}
		tw("%-45s", t.String())
		for _, c := range cells {
			tw(" %-30s", c)
		}
		switch {
		case !t.isTarget():
			tw(" (no target)\n")
		case known == 0:
			tw(" not measured\n")
		case oks == known:
			tw(" pass\n")
		case oks == 0:
			tw(" fail\n")
		default:
			tw(" mixed\n")
		}
	}
}

// allNotRun reports whether no cell has a measure: a comparison without a
// target is left out of the table when either side never ran.
func allNotRun(cells []string) bool {
	for _, c := range cells {
		if !strings.HasSuffix(c, "not run") {
			return false
		}
	}
	return true
}

func (t target) isTarget() bool { return t.min > 0 || t.minRPS > 0 || t.maxP99MS > 0 || t.maxCPUus > 0 }

// fixed formats x with prec decimals, or "-" when x is negative (unknown).
func fixed(x float64, prec int) string {
	if x < 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// others is the share of the machine's CPU that neither the server, nor
// PostgreSQL, nor wrk used during the run: other work on a shared machine
// (and the peers idling), which makes the figures noisy when it is high.
func others(r result) string {
	if r.BusyCPU < 0 || r.BusySeconds <= 0 || r.ServerCPU < 0 || r.WrkCPU < 0 {
		return "-"
	}
	pg := max(r.PGCPU, 0)
	o := (r.BusyCPU - r.ServerCPU - pg - r.WrkCPU) / (r.BusySeconds * r.Cores)
	return strconv.FormatFloat(max(o, 0)*100, 'f', 0, 64) + "%"
}
