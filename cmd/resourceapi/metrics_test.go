package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMetrics serves on SQLite with a metrics listener, sends known
// traffic and scrapes: requests are counted by route pattern (never the raw
// path), method and status; refused credentials by scheme; the rate
// limiter's refusals; GraphQL operations by type and code; events
// committed and published; caches, pools and the Go runtime are there. The
// main listener's /metrics is for an admin or a caller granted
// metrics:read, the metrics listener's for anyone who reaches it.
func TestMetrics(t *testing.T) {
	kv := map[string]string{
		"RESOURCEAPI_DATABASE_URL": filepath.Join(t.TempDir(), "m.db"), "RESOURCEAPI_ADDR": "127.0.0.1:0",
		"RESOURCEAPI_METRICS_ADDR": "127.0.0.1:0", "RESOURCEAPI_RATE_LIMIT": "40",
	}
	_, output := mustServeOutput(t, kv)
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`).FindStringSubmatch(output())
	maddr := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(output())
	key := regexp.MustCompile(`API key:\s+(\S+)`).FindStringSubmatch(output())
	if addr == nil || maddr == nil || key == nil {
		t.Fatalf("no address, metrics address or admin API key in serve's output:\n%s", output())
	}
	base := "http://" + addr[1]
	do := func(method, path, apiKey, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if apiKey != "" {
			req.Header.Set("X-API-Key", apiKey)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	admin := key[1]
	for i := range 3 {
		if got := do("GET", "/api/users/"+strconv.Itoa(i+1), admin, ""); got != 200 && got != 404 {
			t.Fatalf("GET /api/users/%d = %d", i+1, got)
		}
	}
	if got := do("GET", "/api/users/1", admin, ""); got != 200 {
		t.Fatalf("GET /api/users/1 = %d, want 200", got)
	}
	for _, body := range []string{
		`{"name":"Reader","email":"reader@example.com","permissions":["metrics:read"]}`,
		`{"name":"Other","email":"other@example.com"}`,
	} {
		if got := do("POST", "/api/users", admin, body); got != 201 {
			t.Fatalf("POST /api/users %s = %d, want 201", body, got)
		}
	}
	reader := apiKeyOf(t, base, admin, 2)
	other := apiKeyOf(t, base, admin, 3)
	do("GET", "/nowhere/12345", "", "")
	do("GET", "/api/users", "rak_not_a_key", "")
	do("POST", "/graphql", admin, `{"query":"{ users(limit: 1) { id } }"}`)
	do("POST", "/graphql", admin, `{"query":"{ users( "}`)

	// The main listener's /metrics: a credential, then admin or metrics:read.
	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {other, 403}, {reader, 200}, {admin, 200}} {
		if got := do("GET", "/metrics", c.key, ""); got != c.want {
			t.Errorf("GET /metrics with key %q = %d, want %d", c.key, got, c.want)
		}
	}
	// Spend the address's budget: requests without a credential count
	// against it, until one is refused.
	limited := false
	for range 60 {
		if do("GET", "/api/posts", "", "") == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("no request was rate limited")
	}

	// The relay publishes the two userCreated events (and the first
	// admin's): wait until the outbox is empty, each scrape a fresh read.
	var m map[string]float64
	for i := 0; ; i++ {
		m = scrape(t, "http://"+maddr[1]+"/metrics")
		if m[`resourceapi_events_unpublished`] == 0 && m[`resourceapi_events_published_total`] >= 3 &&
			m[`resourceapi_events_published_total`] == m[`resourceapi_events_committed_total`] {
			break
		}
		if i == 500 {
			t.Fatalf("events not published: %v unpublished, %v published", m[`resourceapi_events_unpublished`], m[`resourceapi_events_published_total`])
		}
	}
	for name, want := range map[string]float64{
		`resourceapi_http_requests_total{code="200",method="GET",route="/api/users/{id}"}`:                    2, // users 1 and... see below
		`resourceapi_http_requests_total{code="404",method="GET",route="unmatched"}`:                          1,
		`resourceapi_http_requests_total{code="201",method="POST",route="/api/users"}`:                        2,
		`resourceapi_http_requests_total{code="403",method="GET",route="/api/users"}`:                         1,
		`resourceapi_http_requests_total{code="401",method="GET",route="/metrics"}`:                           1,
		`resourceapi_http_requests_total{code="403",method="GET",route="/metrics"}`:                           1,
		`resourceapi_http_requests_total{code="429",method="GET",route="/api/posts"}`:                         1,
		`resourceapi_rate_limited_total`:                                                                      1,
		`resourceapi_auth_failures_total{scheme="api_key"}`:                                                   1,
		`resourceapi_graphql_operations_total{code="OK",operation="query"}`:                                   1,
		`resourceapi_graphql_operations_total{code="GRAPHQL_PARSE_FAILED",operation="unknown"}`:               1,
		`resourceapi_graphql_websocket_connections`:                                                           0,
		`resourceapi_http_request_duration_seconds_count{method="POST",route="/api/users"}`:                   2,
		`resourceapi_http_request_duration_seconds_count{method="POST",route="/api/users/{parent}/api-keys"}`: 2,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// Every event committed (the users', their API keys'...) was
	// published by this instance's relay.
	if c, p := m[`resourceapi_events_committed_total`], m[`resourceapi_events_published_total`]; c < 3 || c != p {
		t.Errorf("events committed %v, published %v; want 3 or more, all published", c, p)
	}
	for _, name := range []string{
		`resourceapi_cache_hits_total{cache="records"}`, `resourceapi_cache_misses_total{cache="passwords"}`,
		`go_sql_open_connections{db_name="sqlite_read"}`, `go_goroutines`, `process_resident_memory_bytes`,
		`resourceapi_events_oldest_unpublished_age_seconds`,
	} {
		if _, ok := m[name]; !ok {
			t.Errorf("%s is missing", name)
		}
	}
	for name := range m {
		if strings.Contains(name, "12345") {
			t.Errorf("a raw path became a label: %s", name)
		}
	}
}

// apiKeyOf creates an API key for user id (as the admin) and returns it.
func apiKeyOf(t *testing.T, base, admin string, id int64) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/users/"+strconv.FormatInt(id, 10)+"/api-keys", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	k := regexp.MustCompile(`"key":"([^"]+)"`).FindSubmatch(b)
	if resp.StatusCode != 201 || k == nil {
		t.Fatalf("create API key: %d %s", resp.StatusCode, b)
	}
	return string(k[1])
}

// scrape reads the Prometheus text format at url into series -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
