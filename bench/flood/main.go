// Command flood measures what abusive requests cost the other clients of a
// running resourceapi: legitimate clients (GET /api/users/{id} with an API
// key, each one request at a time) measure their latency alone, then while a
// flood of -requests requests of each abusive shape runs against the same
// server, one shape after the other, then alone again. Every phase lasts
// -phase (the flood's requests spread evenly over it, sent no faster), so
// that a flood the rate limit refuses in a second is still measured for as
// long as it keeps coming. It reports each phase's p99 against the first's,
// and the server's resident memory (VmRSS and its peak VmHWM, from
// /proc/<pid>/status).
//
// With -rate-limit, each legitimate client paces itself within its budget
// (1.2 x window / limit between requests), and there are -legit-callers of
// them, each its own user with its own API key, so that a phase gathers
// enough samples for a p99 (about 2,100 in 20 s at 600 a minute with 13).
//
// The shapes:
//
//	introspection  the alias bomb of introspection (a fragment on __Type with
//	               120 aliased fields { type { ...F1 } } and ofType { ...F1 },
//	               F1 with 120 aliased names): 4.5 KB, no credential
//	lists          { posts { content author { posts { content } } } } as a user
//	               who planted -planted posts of -post-bytes each (cost 131)
//	basic          GET /api/users/1 with HTTP Basic of a random email and
//	               password
//	control        { hello } with no credential: not abusive, the cheapest
//	               request, to tell what any flood of that many connections
//	               costs the legitimate client on this machine from what the
//	               abusive shapes cost
//
// It seeds what it needs first, over HTTP with the admin's API key: users
// 1..-users for the legitimate client, and the planter with its posts and
// an API key. Every loop is bounded (requests, and -max-phase per phase);
// all traffic goes to -url, which should be on loopback. See
// bench/README.md.
//
//	go run ./bench/flood -url http://127.0.0.1:8080 -key rk_... -pid 1234
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

type config struct {
	url       string
	key       string // the admin's API key
	pid       int
	requests  int
	conns     int
	users     int
	planted   int
	postBytes int
	phase     time.Duration // how long each phase lasts
	shapes    []string
	seedOnly  bool          // seed, print the keys, and stop
	seeded    string        // the keys from an earlier -seed-only run: no seeding
	interval  time.Duration // each legitimate client's pause between requests (to stay in its rate budget)
	callers   int           // legitimate clients, each its own user (1: the admin's key)
	limit     int           // the server's rate limit per window per caller (0: off)
	window    time.Duration
}

// keys are the API keys a run uses besides the admin's.
type keys struct {
	planter string
	legit   []string // one per legitimate client; empty: the admin's key
}

// String is the line -seed-only prints and -seeded reads.
func (k keys) String() string { return strings.Join(append([]string{k.planter}, k.legit...), " ") }

func parseKeys(line string) keys {
	f := strings.Fields(line)
	if len(f) == 0 {
		return keys{}
	}
	return keys{planter: f[0], legit: f[1:]}
}

func run() error {
	var c config
	var shapes string
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the server's base URL (loopback)")
	flag.StringVar(&c.key, "key", "", "an admin API key (required): seeds, and is the legitimate client's credential")
	flag.IntVar(&c.pid, "pid", 0, "the server's process id, to read its memory (0: do not)")
	flag.IntVar(&c.requests, "requests", 10000, "requests of each abusive shape")
	flag.IntVar(&c.conns, "c", 4, "concurrent connections of the flood")
	flag.IntVar(&c.users, "users", 1000, "users 1..N the legitimate client reads (created first when missing)")
	flag.IntVar(&c.planted, "planted", 60, "posts of the planter")
	flag.IntVar(&c.postBytes, "post-bytes", 100_000, "content of each planted post, in bytes")
	flag.DurationVar(&c.phase, "phase", 20*time.Second, "how long each phase lasts; a flood's requests are spread over it, and those not sent by its end are not sent")
	flag.StringVar(&shapes, "shapes", "control,introspection,lists,basic", "the shapes, comma-separated, in order")
	flag.BoolVar(&c.seedOnly, "seed-only", false, "seed, print the keys on the last line, and stop (seed with rate limiting off, then measure with it on)")
	flag.StringVar(&c.seeded, "seeded", "", "the keys line printed by an earlier -seed-only run; nothing is seeded")
	flag.IntVar(&c.callers, "legit-callers", 0, "legitimate clients, each its own user with an API key (default: 1, the admin's key, without -rate-limit; enough for 2,000 samples a phase with it)")
	flag.DurationVar(&c.interval, "legit-interval", 0, "each legitimate client's pause between its requests (default: 1.2 x window / rate-limit when -rate-limit is set)")
	flag.IntVar(&c.limit, "rate-limit", 0, "the server's RESOURCEAPI_RATE_LIMIT, so that the legitimate client stays within its budget (0: off)")
	flag.DurationVar(&c.window, "rate-window", time.Minute, "the server's RESOURCEAPI_RATE_WINDOW")
	flag.Parse()
	if c.key == "" {
		return errors.New("-key is required")
	}
	c.url = strings.TrimRight(c.url, "/")
	if c.limit > 0 && c.interval == 0 {
		c.interval = c.window * 12 / 10 / time.Duration(c.limit)
	}
	if c.callers == 0 {
		c.callers = 1
		if c.interval > 0 {
			c.callers = min(64, int(2000*c.interval/c.phase)+1)
		}
	}
	if c.phase <= 0 || c.requests < 0 || c.conns < 1 || c.callers < 1 {
		return errors.New("-phase, -c and -legit-callers must be positive")
	}
	c.shapes = strings.Split(shapes, ",")
	for _, s := range c.shapes {
		if _, ok := shapeRequests[s]; !ok {
			return fmt.Errorf("unknown shape %q", s)
		}
	}

	client := &http.Client{Timeout: 60 * time.Second}
	ks := parseKeys(c.seeded)
	if ks.planter == "" {
		var err error
		if ks, err = seed(client, c); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	if c.seedOnly {
		fmt.Println(ks)
		return nil
	}
	if len(ks.legit) == 0 {
		ks.legit = []string{c.key}
	}
	if len(ks.legit) != c.callers {
		return fmt.Errorf("%d legitimate keys for %d callers: seed again with the same -legit-callers", len(ks.legit), c.callers)
	}
	fmt.Printf("seeded: users 1..%d, a planter with %d posts of %d bytes; %d legitimate clients, %s apart; phases of %s; %d cores load %s\n",
		c.users, c.planted, c.postBytes, c.callers, c.interval, c.phase, runtime.NumCPU(), loadavg())

	var first time.Duration
	report := func(name string, r phase) {
		p99 := r.legit.percentile(99)
		if first == 0 {
			first = p99
		}
		line := fmt.Sprintf("%-13s legit n=%-5d p50=%-9s p99=%-9s ratio=%.2f", name, len(r.legit),
			r.legit.percentile(50).Round(time.Microsecond), p99.Round(time.Microsecond), float64(p99)/float64(first))
		if r.sent > 0 {
			line += fmt.Sprintf("  flood %d in %s (%.0f/s) %s", r.sent, r.took.Round(time.Millisecond),
				float64(r.sent)/r.took.Seconds(), r.codes)
		}
		if r.legitErrors > 0 {
			line += fmt.Sprintf("  legit errors %d", r.legitErrors)
		}
		if c.pid != 0 {
			rss, hwm := memory(c.pid)
			line += fmt.Sprintf("  server VmRSS %d MiB VmHWM %d MiB", rss>>20, hwm>>20)
		}
		fmt.Println(line)
	}
	report("alone", flood(c, "", ks))
	worst := 1.0
	for _, s := range c.shapes {
		r := flood(c, s, ks)
		report(s, r)
		worst = max(worst, float64(r.legit.percentile(99))/float64(first))
	}
	report("alone-again", flood(c, "", ks))
	summary := fmt.Sprintf("== worst p99 ratio %.2f (target: within 2)", worst)
	if c.pid != 0 {
		_, hwm := memory(c.pid)
		summary += fmt.Sprintf("; server peak VmHWM %d MiB (target: under 256)", hwm>>20)
	}
	fmt.Println(summary)
	return nil
}

// phase is what one phase measured.
type phase struct {
	legit       latencies
	legitErrors int
	sent        int
	took        time.Duration
	codes       counts
}

// flood runs the legitimate clients for c.phase while, with a shape,
// c.requests requests of it are sent on c.conns connections, spread evenly
// over the phase (a connection waits for its next turn; one that falls
// behind sends at once), the rest unsent when the phase ends.
func flood(c config, shape string, ks keys) phase {
	var p phase
	start := time.Now()
	end := start.Add(c.phase)
	var wg sync.WaitGroup
	codes := make([]counts, c.conns)
	var sent atomic.Int64
	if shape != "" && c.requests > 0 {
		gap := c.phase / time.Duration(c.requests)
		next := atomic.Int64{}
		for w := range c.conns {
			codes[w] = counts{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				fc := &http.Client{Timeout: time.Until(end) + 5*time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
				defer fc.CloseIdleConnections()
				for {
					i := next.Add(1) - 1
					at := start.Add(time.Duration(i) * gap)
					if i >= int64(c.requests) || !at.Before(end) {
						return
					}
					time.Sleep(time.Until(at))
					req := shapeRequests[shape](c, ks.planter)
					codes[w][send(fc, req)]++
					sent.Add(1)
				}
			}()
		}
	}
	var mu sync.Mutex
	var lwg sync.WaitGroup
	for _, key := range ks.legit {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			lc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer lc.CloseIdleConnections()
			if c.interval > 0 { // start the clients apart, not in step
				time.Sleep(mrand.N(c.interval))
			}
			var mine latencies
			errs := 0
			for time.Now().Before(end) {
				req, _ := http.NewRequest(http.MethodGet, c.url+"/api/users/"+strconv.Itoa(1+mrand.IntN(c.users)), nil)
				req.Header.Set("X-API-Key", key)
				t := time.Now()
				code := send(lc, req)
				mine = append(mine, time.Since(t))
				if code != "200" {
					errs++
				}
				if c.interval > 0 {
					time.Sleep(c.interval)
				}
			}
			mu.Lock()
			p.legit = append(p.legit, mine...)
			p.legitErrors += errs
			mu.Unlock()
		}()
	}
	lwg.Wait()
	wg.Wait()
	p.took = time.Since(start)
	p.sent = int(sent.Load())
	p.codes = counts{}
	for _, cs := range codes {
		for k, v := range cs {
			p.codes[k] += v
		}
	}
	return p
}

// shapeRequests make a request of each abusive shape.
var shapeRequests = map[string]func(c config, planterKey string) *http.Request{
	"control": func(c config, _ string) *http.Request {
		return graphql(c, "", "{ hello }")
	},
	"introspection": func(c config, _ string) *http.Request {
		return graphql(c, "", introspectionBomb)
	},
	"lists": func(c config, planterKey string) *http.Request {
		return graphql(c, planterKey, "{ posts { content author { posts { content } } } }")
	},
	"basic": func(c config, _ string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, c.url+"/api/users/1", nil)
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(
			[]byte(rand.Text()+"@flood.example:"+rand.Text())))
		return req
	},
}

var introspectionBomb = func() string {
	var b strings.Builder
	b.WriteString("{ __schema { types { ...F0 } } }\nfragment F0 on __Type {")
	for i := range 120 {
		if i%2 == 0 {
			fmt.Fprintf(&b, " a%d: fields { type { ...F1 } }", i)
		} else {
			fmt.Fprintf(&b, " a%d: ofType { ...F1 }", i)
		}
	}
	b.WriteString(" }\nfragment F1 on __Type {")
	for i := range 120 {
		fmt.Fprintf(&b, " n%d: name", i)
	}
	return b.String() + " }"
}()

func graphql(c config, key, query string) *http.Request {
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest(http.MethodPost, c.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	return req
}

// maxBody bounds what is read of a response (the rest is discarded, and
// the connection closed).
const maxBody = 16 << 20

// send sends req and returns what it got: the status, with the GraphQL
// error code when there is one ("200 RESPONSE_TOO_LARGE"), or "error".
func send(client *http.Client, req *http.Request) string {
	res, err := client.Do(req)
	if err != nil {
		return "error"
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxBody))
	out := strconv.Itoa(res.StatusCode)
	if res.Header.Get("Content-Type") != "" && strings.Contains(res.Header.Get("Content-Type"), "json") {
		var r struct {
			Errors []struct {
				Extensions struct{ Code string }
			}
			Error struct{ Code string }
		}
		if json.Unmarshal(b, &r) == nil {
			switch {
			case len(r.Errors) > 0 && r.Errors[0].Extensions.Code != "":
				out += " " + r.Errors[0].Extensions.Code
			case r.Error.Code != "":
				out += " " + r.Error.Code
			}
		}
	}
	if len(b) == maxBody {
		out += fmt.Sprintf(" (over %d MiB)", maxBody>>20)
	}
	return out
}

// seed creates users 1..c.users unless the server has them, the planter: a
// user with an API key and c.planted posts, and, with more than one
// legitimate client, a user with an API key for each. It returns the keys.
func seed(client *http.Client, c config) (keys, error) {
	do := func(method, path, key string, body any, out any) error {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, c.url+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		rb, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if res.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, rb)
		}
		if out != nil {
			return json.Unmarshal(rb, out)
		}
		return nil
	}
	var page struct {
		Pagination struct{ Total int }
	}
	if err := do(http.MethodGet, "/api/users?limit=1", c.key, nil, &page); err != nil {
		return keys{}, err
	}
	for i := page.Pagination.Total + 1; i <= c.users; i++ {
		if err := do(http.MethodPost, "/api/users", c.key, map[string]any{
			"name": fmt.Sprintf("Flood %05d", i), "email": fmt.Sprintf("flood%05d@bench.example", i)}, nil); err != nil {
			return keys{}, err
		}
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	userWithKey := func(name string) (int64, string, error) {
		var u struct{ ID int64 }
		email := strings.ToLower(name) + "-" + stamp + "@bench.example"
		if err := do(http.MethodPost, "/api/users", c.key, map[string]any{"name": name, "email": email}, &u); err != nil {
			return 0, "", err
		}
		var key struct{ Key string }
		if err := do(http.MethodPost, fmt.Sprintf("/api/users/%d/api-keys", u.ID), c.key, map[string]any{}, &key); err != nil {
			return 0, "", err
		}
		if key.Key == "" {
			return 0, "", fmt.Errorf("%s's API key was not returned", name)
		}
		return u.ID, key.Key, nil
	}
	var ks keys
	planter, key, err := userWithKey("Planter")
	if err != nil {
		return keys{}, err
	}
	ks.planter = key
	content := strings.Repeat("Planted. ", c.postBytes/9+1)[:c.postBytes]
	for i := range c.planted {
		if err := do(http.MethodPost, "/api/posts", key, map[string]any{
			"title": fmt.Sprintf("Planted %d", i), "content": content, "author_id": planter}, nil); err != nil {
			return keys{}, err
		}
	}
	if c.callers > 1 {
		for i := range c.callers {
			_, key, err := userWithKey(fmt.Sprintf("Legit%02d", i))
			if err != nil {
				return keys{}, err
			}
			ks.legit = append(ks.legit, key)
		}
	}
	return ks, nil
}

type latencies []time.Duration

// percentile returns the p-th percentile: the smallest latency at least
// p% of them do not exceed.
func (l latencies) percentile(p int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(i, 0)]
}

// counts are how many responses of each kind a flood got.
type counts map[string]int

func (c counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, c[k])
	}
	return "{" + b.String() + "}"
}

// memory returns the process's resident set and its peak, in bytes.
func memory(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
