// Command subscribers measures GraphQL subscription fan-out on a running
// resourceapi: it opens -n WebSocket connections (graphql-transport-ws or
// graphql-ws), each subscribing to userCreated with an API key in
// connection_init, reads the server's memory (VmRSS of -pid) before and
// after, then creates one user over REST and reports how long the event
// took to reach every subscriber (from just before the POST to each
// arrival: the write, its commit, the relay and the fan-out).
//
// Subscriptions register asynchronously, so it first creates warm-up users
// until every subscriber has received one; the memory is read after that,
// with every subscriber idle. See bench/README.md.
//
//	go run ./bench/subscribers -url http://127.0.0.1:8080 -key rk_... -pid 1234 -n 10000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "subscribers:", err)
		os.Exit(1)
	}
}

type subscriber struct {
	conn *websocket.Conn
	// got holds the names of the users whose events arrived, with when;
	// timed is when the measured event arrived.
	mu    sync.Mutex
	got   map[string]time.Time
	timed time.Time
}

// measured is the event being measured: every subscriber counts its
// arrival, and done is closed once all have, so that nothing scans the
// subscribers while the event is delivered (the tool shares the cores with
// the server: what it spends is taken from the server).
type measured struct {
	name  string
	n     int64
	count atomic.Int64
	done  chan struct{}
}

func run() error {
	urls := flag.String("url", "http://127.0.0.1:8080", "the server's base URL; several, comma-separated, spread the subscribers over "+
		"instances (the events are created on the first)")
	key := flag.String("key", "", "an admin API key")
	pid := flag.Int("pid", 0, "the server's process id, to read its memory (0: do not)")
	n := flag.Int("n", 10000, "subscribers, one connection each")
	proto := flag.String("proto", "graphql-transport-ws", "subprotocol: graphql-transport-ws or graphql-ws")
	conc := flag.Int("c", 64, "connections opened at once")
	timeout := flag.Duration("timeout", 60*time.Second, "how long to wait for the events to arrive")
	settle := flag.Duration("settle", 0, "how long to leave the subscribers idle before reading the memory again: "+
		"2m10s lets the Go runtime's periodic collection (every 2 minutes) shrink stacks and free what connecting left behind")
	flag.Parse()
	if *key == "" {
		return errors.New("-key is required")
	}
	bases := strings.Split(*urls, ",")
	base := &bases[0]
	raiseFileLimit()
	ctx := context.Background()
	before := rss(*pid)
	subs := make([]*subscriber, *n)
	start := time.Now()
	var failed atomic.Int64
	var firstErr atomic.Value
	var watch atomic.Pointer[measured]
	sem := make(chan struct{}, *conc)
	var wg sync.WaitGroup
	for i := range subs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s, err := subscribe(ctx, bases[i%len(bases)], *key, *proto, &watch)
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			subs[i] = s
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d connections failed; first: %v", f, *n, firstErr.Load())
	}
	fmt.Printf("connected and subscribed %d to %d instance(s) in %.1fs\n", *n, len(bases), time.Since(start).Seconds())
	if *pid != 0 {
		now := rss(*pid)
		fmt.Printf("server VmRSS: %d KiB before, %d KiB once subscribed: %.1f KiB per subscriber\n",
			before, now, float64(now-before)/float64(*n))
		if *settle > 0 {
			time.Sleep(*settle)
			now = rss(*pid)
			fmt.Printf("server VmRSS: %d KiB after %s idle: %.1f KiB per subscriber\n",
				now, *settle, float64(now-before)/float64(*n))
		}
	}

	// Warm up until every subscription is registered.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	deadline := time.Now().Add(*timeout)
	var warm []string
	for w := 0; ; w++ {
		name := "warm-" + run + "-" + strconv.Itoa(w)
		warm = append(warm, name)
		if err := createUser(*base, *key, name); err != nil {
			return err
		}
		ok := waitAll(subs, warm, time.Now().Add(2*time.Second))
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not every subscriber received a warm-up event within %s", *timeout)
		}
	}
	after := rss(*pid)
	if *pid != 0 {
		fmt.Printf("server VmRSS: %d KiB before, %d KiB with %d idle subscribers after an event: %.1f KiB per subscriber\n",
			before, after, *n, float64(after-before)/float64(*n))
	}

	// The measured event.
	m := &measured{name: "timed-" + run, n: int64(len(subs)), done: make(chan struct{})}
	watch.Store(m)
	t0 := time.Now()
	if err := createUser(*base, *key, m.name); err != nil {
		return err
	}
	select {
	case <-m.done:
	case <-time.After(*timeout):
		return fmt.Errorf("not every subscriber received the event within %s", *timeout)
	}
	lat := make([]time.Duration, 0, len(subs))
	for _, s := range subs {
		s.mu.Lock()
		lat = append(lat, s.timed.Sub(t0))
		s.mu.Unlock()
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	fmt.Printf("delivery to %d subscribers: p50=%s p90=%s p99=%s max=%s\n", len(lat),
		pct(0.5).Round(time.Microsecond), pct(0.9).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	for _, s := range subs {
		s.conn.Close(websocket.StatusNormalClosure, "")
	}
	return nil
}

// waitAll reports whether every subscriber has received an event of one of
// names (the last for the measured event) by deadline.
func waitAll(subs []*subscriber, names []string, deadline time.Time) bool {
	for {
		all := true
		for _, s := range subs {
			s.mu.Lock()
			have := false
			for _, n := range names {
				if _, ok := s.got[n]; ok {
					have = true
					break
				}
			}
			s.mu.Unlock()
			if !have {
				all = false
				break
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func subscribe(ctx context.Context, base, key, proto string, watch *atomic.Pointer[measured]) (*subscriber, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{proto}})
	if err != nil {
		return nil, err
	}
	write := func(m message) error {
		b, _ := json.Marshal(m)
		return conn.Write(dctx, websocket.MessageText, b)
	}
	init, _ := json.Marshal(map[string]string{"X-API-Key": key})
	if err := write(message{Type: "connection_init", Payload: init}); err != nil {
		return nil, err
	}
	for {
		_, b, err := conn.Read(dctx)
		if err != nil {
			return nil, fmt.Errorf("connection_init: %w", err)
		}
		var m message
		json.Unmarshal(b, &m)
		if m.Type == "connection_ack" {
			break
		}
	}
	typ := "subscribe"
	if proto == "graphql-ws" {
		typ = "start"
	}
	q, _ := json.Marshal(map[string]string{"query": "subscription { userCreated { name } }"})
	if err := write(message{ID: "1", Type: typ, Payload: q}); err != nil {
		return nil, err
	}
	s := &subscriber{conn: conn, got: map[string]time.Time{}}
	go func() {
		// One buffer for every message, and only the user's name looked
		// at: the tool shares the cores with the server.
		var buf bytes.Buffer
		for {
			_, r, err := conn.Reader(context.Background())
			if err != nil {
				return
			}
			buf.Reset()
			if _, err := buf.ReadFrom(r); err != nil {
				return
			}
			at := time.Now()
			name, ok := userCreatedName(buf.Bytes())
			if !ok {
				continue
			}
			if m := watch.Load(); m != nil && string(name) == m.name {
				s.mu.Lock()
				first := s.timed.IsZero()
				if first {
					s.timed = at
				}
				s.mu.Unlock()
				if first && m.count.Add(1) == m.n {
					close(m.done)
				}
				continue
			}
			s.mu.Lock()
			s.got[string(name)] = at
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// userCreatedName returns the user's name in a message of the userCreated
// subscription (next, or data in graphql-ws), found where the server puts
// it, or else by decoding the whole message.
func userCreatedName(b []byte) ([]byte, bool) {
	const field = `"payload":{"data":{"userCreated":{"name":"`
	if i := bytes.Index(b, []byte(field)); i >= 0 &&
		(bytes.Contains(b[:i], []byte(`"type":"next"`)) || bytes.Contains(b[:i], []byte(`"type":"data"`))) {
		rest := b[i+len(field):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
			return rest[:j], true
		}
	}
	var m struct {
		Type    string
		Payload struct {
			Data struct {
				UserCreated struct{ Name string }
			}
		}
	}
	if json.Unmarshal(b, &m) != nil || (m.Type != "next" && m.Type != "data") {
		return nil, false
	}
	return []byte(m.Payload.Data.UserCreated.Name), true
}

func createUser(base, key, name string) error {
	body, _ := json.Marshal(map[string]string{"name": name, "email": name + "@subscribers.example"})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/users", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("create user: status %d", res.StatusCode)
	}
	return nil
}

// rss returns the resident memory of process pid in KiB (0 for pid 0).
func rss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return 0
}

// raiseFileLimit lifts the soft limit on open files to the hard one: every
// subscriber is a socket.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
