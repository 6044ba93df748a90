package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// BenchmarkSSEFanout measures Server-Sent Events on one instance (SQLite;
// SSE_DATABASE=postgres: PostgreSQL and Redis):
// SSE_CLIENTS (default 1,000) streams of every users event, one client creating
// users one at a time over REST; it reports each event's arrival at every
// stream after the POST was sent and after its 201 was read (p50, p99), and
// the heap each idle stream costs (server and this lean client together:
// an upper bound of the server's share).
//
//	go test -run '^$' -bench SSEFanout -benchtime 200x ./cmd/resourceapi
func BenchmarkSSEFanout(b *testing.B) {
	clients := envInt("SSE_CLIENTS", 1000) // SSE_CLIENTS=1: the baseline of the same run
	srv, admin := benchServer(b)
	tr := &http.Transport{MaxIdleConnsPerHost: clients + 10, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr}

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type arrival struct {
		id int64
		at time.Time
	}
	var mu sync.Mutex
	arrivals := make([][]arrival, clients)
	var wg sync.WaitGroup
	for i := range clients {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?types=users.created", nil)
		req.Header.Set("X-API-Key", admin)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("stream %d: %v %v", i, err, resp)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			rd := bufio.NewReaderSize(resp.Body, 512)
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					return
				}
				if rest, ok := strings.CutPrefix(string(line), "id: "); ok {
					id, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
					now := time.Now()
					mu.Lock()
					arrivals[i] = append(arrivals[i], arrival{id, now})
					mu.Unlock()
				}
			}
		})
	}
	perStream := float64(heap()-before) / float64(clients)

	type write struct{ sent, answered time.Time }
	writes := map[int64]write{}
	b.ResetTimer()
	for i := range b.N {
		sent := time.Now()
		id := mustCreate(b, srv.URL, admin, "/api/users", userBody(fmt.Sprintf("fan%d@example.com", i)))
		writes[id] = write{sent, time.Now()}
	}
	// Every stream receives every event.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := 0
		for _, a := range arrivals {
			if len(a) >= b.N {
				done++
			}
		}
		mu.Unlock()
		if done == clients {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d streams have every event after 60s", done, clients)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()

	// Events ids are not record ids: pair them by order.
	var afterSent, afterAnswer []time.Duration
	ids := make([]int64, 0, len(writes))
	for id := range writes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, a := range arrivals {
		for j, ar := range a[:b.N] {
			w := writes[ids[j]]
			afterSent = append(afterSent, ar.at.Sub(w.sent))
			afterAnswer = append(afterAnswer, ar.at.Sub(w.answered))
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(afterSent, 0.5), "ms-p50-after-POST")
	b.ReportMetric(pct(afterSent, 0.99), "ms-p99-after-POST")
	b.ReportMetric(pct(afterAnswer, 0.5), "ms-p50-after-201")
	b.ReportMetric(pct(afterAnswer, 0.99), "ms-p99-after-201")
	b.ReportMetric(perStream/1024, "KiB-heap/stream")
	b.ReportMetric(float64(b.N*clients)/b.Elapsed().Seconds(), "deliveries/s")
}

// benchServer starts the server SSE benchmarks measure, in this process: on
// SQLite, or with SSE_DATABASE=postgres on PostgreSQL and a Redis of its own
// (the setup of several instances, here one). It returns the server and the
// admin's key.
func benchServer(b *testing.B) (*instance, string) {
	env := []string{"RESOURCEAPI_WS_MAX_PER_USER=0", "RESOURCEAPI_WS_MAX_PER_ADDR=0"}
	if os.Getenv("SSE_DATABASE") == "postgres" {
		env = append(env, "RESOURCEAPI_DATABASE_URL="+pgtest.NewDatabase(b), "RESOURCEAPI_REDIS_URL="+redistest.StartServer(b).URL)
	} else {
		env = append(env, "RESOURCEAPI_DATABASE_URL="+filepath.Join(b.TempDir(), "fan.db"))
	}
	srv := startInProcess(b, env...)
	return srv, printedKey.FindStringSubmatch(srv.log.String())[1]
}

// envInt returns the positive integer in the variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkSSEThroughput measures events per second from commit to
// Server-Sent Events clients: SSE_WRITERS (default 8) clients create b.N
// users at once over REST while SSE_CLIENTS (default 100) streams of every
// users event read; the clock runs from the first POST until every stream
// has every event. It reports events/s (each reaching every stream),
// deliveries/s (events times streams), and the writes' own rate
// (writes/s, the 201s, which the events cannot outrun). SSE_DATABASE=postgres
// runs it on PostgreSQL and Redis.
//
//	go test -run '^$' -bench SSEThroughput -benchtime 2000x ./cmd/resourceapi
func BenchmarkSSEThroughput(b *testing.B) {
	clients, writers := envInt("SSE_CLIENTS", 100), envInt("SSE_WRITERS", 8)
	srv, admin := benchServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: clients + writers + 10}
	var counts = make([]atomic.Int64, clients)
	var wg sync.WaitGroup
	for i := range clients {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?types=users.created", nil)
		req.Header.Set("X-API-Key", admin)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("stream %d: %v %v", i, err, resp)
		}
		wg.Go(func() {
			defer resp.Body.Close()
			rd := bufio.NewReaderSize(resp.Body, 4096)
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) > 4 && string(line[:4]) == "id: " {
					counts[i].Add(1)
				}
			}
		})
	}
	client := &http.Client{Transport: tr}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var ws sync.WaitGroup
	for range writers {
		ws.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				req, _ := http.NewRequest("POST", srv.URL+"/api/users", strings.NewReader(userBody(fmt.Sprintf("t%d@example.com", i))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Key", admin)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("POST: %d", resp.StatusCode)
					return
				}
			}
		})
	}
	ws.Wait()
	written := time.Since(start)
	deadline := time.Now().Add(120 * time.Second)
	for {
		done := 0
		for i := range counts {
			if counts[i].Load() >= int64(b.N) {
				done++
			}
		}
		if done == clients {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d streams have every event 120s after the writes", done, clients)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(b.N*clients)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(b.N)/written.Seconds(), "writes/s")
}

// BenchmarkSSEMemory measures what an idle Server-Sent Events stream costs
// the server alone: the binary runs in a process of its own, and its heap in
// use (go_memstats_heap_inuse_bytes on /metrics, with GOGC=10) is read
// before and after SSE_CLIENTS (default 1,000) streams open, each time the
// least of five readings between bursts of requests (which make the
// collector run), and divided by the streams. It reports the goroutines'
// stacks (go_memstats_stack_inuse_bytes, outside the heap) and the
// goroutines per stream too.
//
//	go test -run '^$' -bench SSEMemory -benchtime 1x ./cmd/resourceapi
func BenchmarkSSEMemory(b *testing.B) {
	clients := envInt("SSE_CLIENTS", 1000)
	bin, err := buildBinary()
	if err != nil {
		b.Fatal(err)
	}
	// GOGC=10: the collector runs after every 10% of growth, so that the
	// heap in use is the live heap give or take a tenth.
	p, err := start(bin, "RESOURCEAPI_DATABASE_URL="+filepath.Join(b.TempDir(), "mem.db"),
		"RESOURCEAPI_WS_MAX_PER_USER=0", "RESOURCEAPI_WS_MAX_PER_ADDR=0", "GOGC=10")
	if err != nil {
		b.Fatal(err)
	}
	defer p.kill()
	tr := &http.Transport{MaxIdleConnsPerHost: clients + 10}
	client := &http.Client{Transport: tr}
	metric := func(name string) float64 {
		req, _ := http.NewRequest("GET", p.URL+"/metrics", nil)
		req.Header.Set("X-API-Key", p.Key)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		b.Fatalf("no %s on /metrics", name)
		return 0
	}
	heap := func() float64 {
		least := math.Inf(1)
		for range 5 {
			for range 200 { // garbage enough for a collection
				resp, err := client.Get(p.URL + "/healthz")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			least = min(least, metric("go_memstats_heap_inuse_bytes"))
		}
		return least
	}
	for range b.N {
		before, stackBefore, goBefore := heap(), metric("go_memstats_stack_inuse_bytes"), metric("go_goroutines")
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range clients {
			req, _ := http.NewRequestWithContext(ctx, "GET", p.URL+"/api/events?types=users.created", nil)
			req.Header.Set("X-API-Key", p.Key)
			resp, err := tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("stream %d: %v %v", i, err, resp)
			}
			wg.Go(func() {
				defer resp.Body.Close()
				io.Copy(io.Discard, resp.Body)
			})
		}
		after, stackAfter, goAfter := heap(), metric("go_memstats_stack_inuse_bytes"), metric("go_goroutines")
		cancel()
		wg.Wait()
		b.ReportMetric((after-before)/float64(clients)/1024, "KiB-server-heap/stream")
		b.ReportMetric((stackAfter-stackBefore)/float64(clients)/1024, "KiB-server-stack/stream")
		b.ReportMetric((goAfter-goBefore)/float64(clients), "goroutines/stream")
	}
}
