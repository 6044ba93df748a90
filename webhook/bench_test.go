package webhook_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/relay"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/sqlstore"
	"github.com/resourceapi/resourceapi/webhook"
)

// writeCounter counts the worker's write transactions: its rounds that
// wrote.
type writeCounter struct {
	resourceapi.WebhookStore
	n atomic.Int64
}

func (c *writeCounter) RunWebhookRound(ctx context.Context, r resourceapi.WebhookRound) (resourceapi.WebhookRoundResult, error) {
	res, err := c.WebhookStore.RunWebhookRound(ctx, r)
	if res.Wrote {
		c.n.Add(1)
	}
	return res, err
}

// benchService is a store ("sqlite", or "postgres": a new database on the
// server of RESOURCEAPI_TEST_POSTGRES_URL) served as serve wires it: the
// relay publishing the outbox into a hub, and a webhook worker woken by
// the hub, whose write transactions the returned counter counts. With
// receiver set, an endpoint on it receives every products event.
func benchService(b *testing.B, store string, receiver *outOfProcessReceiver) (*resourceapi.Service, *writeCounter, func() int64) {
	service, counter, commits, _ := benchServiceMode(b, store, receiver, deliverSend)
	return service, counter, commits
}

// deliverMode is how benchServiceMode's worker delivers.
type deliverMode int

const (
	deliverSend    deliverMode = iota // over the network to the receiver
	deliverDiscard                    // to a transport that answers 204 at once: rounds, no HTTP or TLS
	deliverPaused                     // not until start is called
)

// benchServiceMode is benchService with the worker delivering as mode says;
// start starts a paused worker (and does nothing otherwise).
func benchServiceMode(b *testing.B, store string, receiver *outOfProcessReceiver, mode deliverMode) (*resourceapi.Service, *writeCounter, func() int64, func()) {
	b.Helper()
	var db interface {
		resourceapi.Store
		resourceapi.WebhookStore
		resourceapi.Outbox
		Close() error
	}
	var err error
	switch store {
	case "postgres":
		db, err = postgres.Open(context.Background(), pgtest.NewDatabase(b), postgres.Options{})
	default:
		db, err = sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Trace: roundStatements.trace})
	}
	if err != nil {
		b.Fatal(err)
	}
	service := resourceapi.NewService(db, nil)
	opts := webhook.Options{AllowPrivate: true}
	if receiver != nil {
		opts.TLS = receiver.TLS
	}
	service.SetWebhookPolicy(resourceapi.WebhookPolicy{CheckURL: func(u string) error { return webhook.CheckURL(u, opts) }})
	hub := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	r := relay.New(db, hub, relay.Config{})
	counter := &writeCounter{WebhookStore: db}
	client := webhook.NewClient(opts)
	if mode == deliverDiscard {
		client.Transport = discardTransport{}
	}
	w := &webhook.Worker{Store: counter, Service: service, Client: client, Events: hub}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.Run(ctx) }()
	start := func() {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	if mode == deliverPaused {
		start = sync.OnceFunc(start)
	} else {
		start()
		start = func() {}
	}
	b.Cleanup(func() {
		cancel()
		wg.Wait()
		hub.Close()
		db.Close()
	})
	if receiver != nil {
		url, types := receiver.URL, []string{"products.*"}
		if _, err := service.CreateWebhook(context.Background(), resourceapi.SystemCaller(), resourceapi.WebhookInput{URL: &url, Types: &types}); err != nil {
			b.Fatal(err)
		}
	}
	commits := func() int64 { return 0 }
	if c, ok := db.(interface{ WriteTransactions() int64 }); ok {
		commits = c.WriteTransactions
	}
	return service, counter, commits, start
}

// roundStatements times the statements of the worker's rounds inside the
// writer's transactions (on SQLite a request's, which commits after them):
// those run under sqlstore.Beside.
var roundStatements statementClock

type statementClock struct{ n, ns atomic.Int64 }

func (c *statementClock) trace(ctx context.Context, _ string) (context.Context, func(error)) {
	if _, ok := sqlstore.BesideOf(ctx); !ok {
		return ctx, func(error) {}
	}
	start := time.Now()
	return ctx, func(error) {
		c.n.Add(1)
		c.ns.Add(int64(time.Since(start)))
	}
}

// discardTransport answers every request 204 at once, without a
// connection: the worker's rounds and signing without HTTP or TLS.
type discardTransport struct{}

func (discardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// BenchmarkWebhookDelivery writes b.N products from 4 writers and measures
// how fast their events reach a receiver on loopback, from each write's
// commit (when Create returns) to the receiver's reading of the request:
// events/s over the run, and the median and 99th percentile latency.
func BenchmarkWebhookDelivery(b *testing.B) {
	var mu sync.Mutex
	received := map[int64]time.Time{}
	done := make(chan struct{})
	var want atomic.Int64
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		at := time.Now()
		var msg struct {
			Data struct {
				Record struct{ ID int64 } `json:"record"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &msg)
		w.WriteHeader(http.StatusNoContent)
		mu.Lock()
		if _, seen := received[msg.Data.Record.ID]; !seen {
			received[msg.Data.Record.ID] = at
			if int64(len(received)) == want.Load() {
				close(done)
			}
		}
		mu.Unlock()
	}))
	defer receiver.Close()
	service, _, _ := benchService(b, "sqlite", &outOfProcessReceiver{URL: receiver.URL, TLS: receiver.Client().Transport.(*http.Transport).TLSClientConfig})
	want.Store(int64(b.N))
	committed := make([]map[int64]time.Time, 4)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range committed {
		committed[g] = map[int64]time.Time{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < b.N; i += len(committed) {
				rec, err := service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(i))
				if err != nil {
					b.Error(err)
					return
				}
				committed[g][rec.ID()] = time.Now()
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("received %d of %d events", len(received), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var lat []time.Duration
	mu.Lock()
	for _, m := range committed {
		for id, at := range m {
			lat = append(lat, received[id].Sub(at))
		}
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// receiverEnv, set in the environment of the test binary, makes it a
// receiver for BenchmarkWriteWithWebhook rather than run tests: a TLS
// server on loopback answering every POST with 204, and GET /stats with
// the connections it accepted and the requests it answered. It prints its
// URL and certificate (base64 DER) on a line and serves until its stdin
// closes.
const receiverEnv = "RESOURCEAPI_BENCH_WEBHOOK_RECEIVER"

func TestMain(m *testing.M) {
	if os.Getenv(receiverEnv) == "" {
		os.Exit(m.Run())
	}
	var conns, requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			fmt.Fprintf(w, "%d %d", conns.Load(), requests.Load())
			return
		}
		requests.Add(1)
		_, _ = io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	fmt.Println(srv.URL, base64.StdEncoding.EncodeToString(srv.Certificate().Raw))
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// outOfProcessReceiver is a receiver in a process of its own (this test
// binary run again with receiverEnv), so that its CPU is not charged to the
// benchmark's writes: its URL, a client TLS configuration trusting it, and
// its counts of connections and requests.
type outOfProcessReceiver struct {
	URL   string
	TLS   *tls.Config
	stats func() (conns, requests int64)
}

func startReceiver(b *testing.B) *outOfProcessReceiver {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), receiverEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	var url, cert string
	if _, err := fmt.Fscan(stdout, &url, &cert); err != nil {
		b.Fatal(err)
	}
	der, err := base64.StdEncoding.DecodeString(cert)
	if err != nil {
		b.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	r := &outOfProcessReceiver{URL: url, TLS: &tls.Config{RootCAs: pool}}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: r.TLS}}
	r.stats = func() (conns, requests int64) {
		resp, err := client.Get(url + "/stats")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := fmt.Fscan(resp.Body, &conns, &requests); err != nil {
			b.Fatal(err)
		}
		return conns, requests
	}
	return r
}

// BenchmarkWriteWithWebhook measures one write's latency (Create, one
// writer) with the worker running and no endpoint registered, then with
// one endpoint receiving every event, on SQLite, and on PostgreSQL when
// RESOURCEAPI_TEST_POSTGRES_URL is set: delivery is off the write's path,
// so the two should be the same. The receiver runs in a process of its
// own, so that only the service's work is charged to the writes; cpu-ms/op
// is this process's CPU time (user and system) per write. worker-tx/op is
// the worker's write transactions per write during the run (on SQLite
// they share the one writer with the requests'); commits/op, on SQLite,
// every transaction the writer committed per write.
func BenchmarkWriteWithWebhook(b *testing.B) {
	receiver := startReceiver(b)
	for _, store := range []string{"sqlite", "postgres"} {
		for _, bc := range []struct {
			name string
			srv  *outOfProcessReceiver
			mode deliverMode
		}{{"none", nil, deliverSend}, {"endpoint", receiver, deliverSend},
			{"endpoint-discard", receiver, deliverDiscard}, {"endpoint-paused", receiver, deliverPaused}} {
			b.Run(store+"/"+bc.name, func(b *testing.B) {
				service, counter, commits, start := benchServiceMode(b, store, bc.srv, bc.mode)
				conns0, requests0 := receiver.stats()
				commits0 := commits()
				rounds0, roundsNs0 := roundStatements.n.Load(), roundStatements.ns.Load()
				cpu0 := cpuTime()
				b.ResetTimer()
				for i := range b.N {
					if _, err := service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu := cpuTime() - cpu0
				if store == "sqlite" {
					// the rounds' statements inside the writes'
					// transactions, per write: what a write waits for
					b.ReportMetric(float64(roundStatements.n.Load()-rounds0)/float64(b.N), "round-stmts/op")
					b.ReportMetric(float64(roundStatements.ns.Load()-roundsNs0)/1e6/float64(b.N), "round-stmt-ms/op")
				}
				if bc.mode == deliverPaused {
					// The writes ran with an endpoint and no delivery;
					// now the worker catches up: the time it takes, per
					// write, with no write beside it.
					catchUp := time.Now()
					start()
					for {
						if _, requests := receiver.stats(); requests-requests0 >= int64(b.N) {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					b.ReportMetric(float64(time.Since(catchUp).Microseconds())/1000/float64(b.N), "catchup-ms/op")
					b.ReportMetric(float64(cpuTime()-cpu0-cpu)/float64(time.Millisecond)/float64(b.N), "catchup-cpu-ms/op")
				}
				b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(counter.n.Load())/float64(b.N), "worker-tx/op")
				if store == "sqlite" {
					// every write transaction the writer committed (the
					// writes', the relay's marks, the worker's), per
					// write: on SQLite each costs an fsync.
					b.ReportMetric(float64(commits()-commits0)/float64(b.N), "commits/op")
				}
				if bc.srv != nil {
					// connections the receiver accepted per request it
					// answered: near 0 when the client reuses them (one TLS
					// handshake per connection, not per attempt).
					conns, requests := receiver.stats()
					if n := requests - requests0; n > 0 {
						b.ReportMetric(float64(conns-conns0)/float64(n), "conns/req")
					}
				}
			})
		}
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
