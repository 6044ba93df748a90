package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/inmem"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/relay"
	"github.com/resourceapi/resourceapi/sqlite"
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
func benchService(b *testing.B, store string, receiver *httptest.Server) (*resourceapi.Service, *writeCounter, func() int64) {
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
		db, err = sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	}
	if err != nil {
		b.Fatal(err)
	}
	service := resourceapi.NewService(db, nil)
	opts := webhook.Options{AllowPrivate: true}
	if receiver != nil {
		opts.TLS = receiver.Client().Transport.(*http.Transport).TLSClientConfig
	}
	service.SetWebhookPolicy(resourceapi.WebhookPolicy{CheckURL: func(u string) error { return webhook.CheckURL(u, opts) }})
	hub := inmem.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	r := relay.New(db, hub, relay.Config{})
	counter := &writeCounter{WebhookStore: db}
	w := &webhook.Worker{Store: counter, Service: service, Client: webhook.NewClient(opts), Events: hub}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.Run(ctx) }()
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
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
	return service, counter, commits
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
	service, _, _ := benchService(b, "sqlite", receiver)
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

// BenchmarkWriteWithWebhook measures one write's latency (Create, one
// writer) with the worker running and no endpoint registered, then with
// one endpoint receiving every event, on SQLite, and on PostgreSQL when
// RESOURCEAPI_TEST_POSTGRES_URL is set: delivery is off the write's path,
// so the two should be the same. worker-tx/op is the worker's write
// transactions per write during the run (on SQLite they share the one
// writer with the requests'); commits/op, on SQLite, every transaction the
// writer committed per write.
func BenchmarkWriteWithWebhook(b *testing.B) {
	var conns, requests atomic.Int64
	receiver := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	receiver.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	receiver.StartTLS()
	defer receiver.Close()
	for _, store := range []string{"sqlite", "postgres"} {
		for _, bc := range []struct {
			name string
			srv  *httptest.Server
		}{{"none", nil}, {"endpoint", receiver}} {
			b.Run(store+"/"+bc.name, func(b *testing.B) {
				service, counter, commits := benchService(b, store, bc.srv)
				conns0, requests0, commits0 := conns.Load(), requests.Load(), commits()
				b.ResetTimer()
				for i := range b.N {
					if _, err := service.Create(context.Background(), resourceapi.SystemCaller(), resourceapi.Products, 0, resourceapi.Products.Example(i)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
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
					if n := requests.Load() - requests0; n > 0 {
						b.ReportMetric(float64(conns.Load()-conns0)/float64(n), "conns/req")
					}
				}
			})
		}
	}
}
