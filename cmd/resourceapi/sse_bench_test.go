package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkSSEFanout measures Server-Sent Events on one SQLite instance:
// SSE_CLIENTS (default 1,000) streams of every users event, one client creating
// users one at a time over REST; it reports each event's arrival at every
// stream after the POST was sent and after its 201 was read (p50, p99), and
// the heap each idle stream costs (server and this lean client together:
// an upper bound of the server's share).
//
//	go test -run '^$' -bench SSEFanout -benchtime 200x ./cmd/resourceapi
func BenchmarkSSEFanout(b *testing.B) {
	clients := 1000
	if n, err := strconv.Atoi(os.Getenv("SSE_CLIENTS")); err == nil && n > 0 {
		clients = n // SSE_CLIENTS=1: the baseline of the same run
	}
	srv := startInProcess(b, "RESOURCEAPI_DATABASE_URL="+filepath.Join(b.TempDir(), "fan.db"),
		"RESOURCEAPI_WS_MAX_PER_USER=0", "RESOURCEAPI_WS_MAX_PER_ADDR=0")
	admin := printedKey.FindStringSubmatch(srv.log.String())[1]
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
