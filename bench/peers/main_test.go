package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The searches of the workloads match what peers.sh says they match: q=abc
// one user in eight (1,250 of 10,000), q=example all, q=qzx none, and no
// user that the POST workloads create matches any of them.
func TestDataSetMatches(t *testing.T) {
	const users = 10000
	count := func(q string) int {
		n := 0
		for i := 1; i <= users; i++ {
			if contains(userName(i), q) || contains(userEmail(i), q) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"abc", 1250},
		// User 1 is the first admin on the service (admin@bench.example),
		// which example matches too.
		{"example", users},
		{"qzx", 0},
	} {
		if got := count(tc.q); got != tc.want {
			t.Errorf("q=%s matches %d users, want %d", tc.q, got, tc.want)
		}
	}
	// What the POST workloads create: name "Load <seq>", email
	// load-<seq>@load.test, seq being a letter, digits, a dash and digits.
	created := []string{"Load m1732512345678901234-17", "load-m1732512345678901234-17@load.test"}
	for _, q := range []string{"abc", "example", "qzx"} {
		for _, s := range created {
			if contains(s, q) {
				t.Errorf("q=%s matches created %q", q, s)
			}
		}
	}
}

func contains(s, q string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(q)) }

func TestIDs(t *testing.T) {
	if got, want := pocketbaseID(42), "u00000000000042"; got != want {
		t.Errorf("pocketbaseID(42) = %q, want %q", got, want)
	}
	if !regexp.MustCompile(`^[a-z0-9]{15}$`).MatchString(pocketbaseID(10000)) {
		t.Errorf("pocketbaseID(10000) = %q, not 15 of [a-z0-9]", pocketbaseID(10000))
	}
	// Posts 1..users*perUser, each once.
	seen := make(map[int]bool)
	for i := 1; i <= 100; i++ {
		for k := 1; k <= 3; k++ {
			id := postID(i, k, 3)
			if seen[id] || id < 1 || id > 300 {
				t.Fatalf("postID(%d, %d, 3) = %d: repeated or out of 1..300", i, k, id)
			}
			seen[id] = true
		}
	}
	var u struct {
		ID    string
		Name  string
		Email string
		Age   int
	}
	if err := json.Unmarshal(userJSON(16, pocketbaseID(16)), &u); err != nil {
		t.Fatal(err)
	}
	if u.ID != "u00000000000016" || u.Name != "User 00016 Abc" || u.Email != "user00016@example.com" || u.Age != 34 {
		t.Errorf("userJSON(16) = %+v", u)
	}
}

// The token is what PostGraphile verifies with --jwt-secret: HS256 over the
// header and claims, audience postgraphile, an expiry.
func TestSignJWT(t *testing.T) {
	exp := time.Unix(2000000000, 0)
	tok := signJWT("secret", exp)
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q has %d parts, want 3", tok, len(parts))
	}
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if got, want := parts[2], base64.RawURLEncoding.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("signature %q, want %q", got, want)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Aud string
		Exp int64
	}
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Aud != "postgraphile" || claims.Exp != exp.Unix() {
		t.Errorf("claims %s", b)
	}
}

const sampleResults = `# start: load average: 0.10
round=1 name=bare requests=300000 duration_us=10000000 p50_us=1500 p99_us=9000 max_us=20000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=400 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=6000 load=0.5_0.4_0.3
round=1 name=pg-get requests=100000 duration_us=10000000 p50_us=6000 p99_us=20000 max_us=40000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=500 pg_ticks=900 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=3000 sessions=0 xacts=100000 allocs=5000000 alloc_bytes=512000000 load=0.6_0.4_0.3
round=1 name=pg-search requests=20000 duration_us=10000000 p50_us=30000 p99_us=120000 max_us=200000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=100 pg_ticks=1700 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=200
round=2 name=bare requests=300000 duration_us=10000000 p50_us=1500 p99_us=9000 max_us=20000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=400 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=6000
round=2 name=pg-get requests=80000 duration_us=10000000 p50_us=6000 p99_us=20000 max_us=40000 status=3 connect=0 read=0 write=0 timeout=0 server_ticks=400 pg_ticks=900 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=3000
`

func TestParseResults(t *testing.T) {
	runs, err := parseResults(strings.NewReader(sampleResults))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 {
		t.Fatalf("%d runs, want 5", len(runs))
	}
	r := runs[1]
	if r.Name != "pg-get" || r.Round != "1" || r.rps() != 10000 || r.P99MS != 20 {
		t.Errorf("run %+v", r)
	}
	if got, want := r.perRequest(r.ServerCPU)*1e6, 50.0; got != want {
		t.Errorf("server CPU per request = %v µs, want %v", got, want)
	}
	if got, want := r.perRequest(r.PGCPU)*1e6, 90.0; got != want {
		t.Errorf("PostgreSQL CPU per request = %v µs, want %v", got, want)
	}
	if r.Load != "0.6 0.4 0.3" {
		t.Errorf("load %q", r.Load)
	}
	// 20 s busy of 20 s, minus 5 (server), 9 (PostgreSQL), 3 (wrk): 15%.
	if got, want := others(r), "15%"; got != want {
		t.Errorf("others = %s, want %s", got, want)
	}
	if runs[2].Sessions != -1 || runs[2].perRequest(runs[2].Allocs) != -1 {
		t.Errorf("absent fields: sessions %v, allocs %v, want -1", runs[2].Sessions, runs[2].Allocs)
	}
	if _, err := parseResults(strings.NewReader("round=1 name=x oops\n")); err == nil {
		t.Error("a field without = parsed")
	}
}

func TestTargets(t *testing.T) {
	runs, err := parseResults(strings.NewReader(sampleResults))
	if err != nil {
		t.Fatal(err)
	}
	rounds := map[string]map[string]result{}
	for _, r := range runs {
		if rounds[r.Round] == nil {
			rounds[r.Round] = map[string]result{}
		}
		rounds[r.Round][r.Name] = r
	}
	for _, tc := range []struct {
		t      target
		round  string
		value  string
		ok     bool
		known  bool
		reason string
	}{
		{target{name: "pg-get", of: "bare", min: 0.3}, "1", "0.33x", true, true, "10,000 of 30,000 req/s"},
		{target{name: "pg-get", of: "bare", min: 0.3}, "2", "0.27x", false, true, "8,000 of 30,000"},
		{target{name: "pg-get", maxCPUus: 60}, "1", "50 µs", true, true, "5 s of CPU for 100,000 requests"},
		{target{name: "pg-get", maxCPUus: 40}, "1", "50 µs", false, true, "over the limit"},
		{target{name: "pg-search", minRPS: 1500, maxP99MS: 100}, "1", "2000 req/s, p99 120.0 ms", false, true, "p99 too high"},
		{target{name: "pg-search", minRPS: 1500}, "1", "2000 req/s", true, true, "throughput alone"},
		{target{name: "pg-get", minRPS: 1}, "2", "8000 req/s", false, true, "errors fail a target"},
		{target{name: "pg-post", minRPS: 3000}, "1", "not run", false, false, "not run"},
		{target{name: "pg-get", of: "pgl-get", min: 4}, "1", "pgl-get not run", false, false, "baseline not run"},
	} {
		v := tc.t.check(rounds[tc.round])
		if v.value != tc.value || v.ok != tc.ok || v.known != tc.known {
			t.Errorf("%s, round %s (%s): got %+v, want value %q ok %v known %v", tc.t, tc.round, tc.reason, v, tc.value, tc.ok, tc.known)
		}
	}
}

func TestTable(t *testing.T) {
	out := mustTable(t, sampleResults,
		"pg-get          1         10000",
		"pg-get >= 0.3x bare                           0.33x ok                       0.27x FAIL                     mixed",
		"pg-search >= 1500 req/s, p99 < 100 ms",
		"pg-post >= 3000 req/s                         not run                        not run                        not measured",
	)
	// Comparisons without a target are left out when not run.
	if strings.Contains(out, "pg-search-none") || strings.Contains(out, "pg-floor") {
		t.Errorf("table shows a comparison that was not run:\n%s", out)
	}
}

// TestTableFloors: pg-post against PostgreSQL alone (bench/pgfloor), shown
// for the rounds that ran both, as a comparison without a target.
func TestTableFloors(t *testing.T) {
	mustTable(t, `
round=1 name=pg-floor requests=40000 duration_us=10000000 p50_us=2000 p99_us=9000 max_us=20000 status=0 server_ticks=0 pg_ticks=1500 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=500
round=1 name=pg-floor-schema requests=20000 duration_us=10000000 p50_us=4000 p99_us=9000 max_us=20000 status=0 server_ticks=0 pg_ticks=1800 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=500
round=1 name=pg-post requests=15000 duration_us=10000000 p50_us=40000 p99_us=90000 max_us=200000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=600 pg_ticks=1300 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=100
round=2 name=pg-post requests=16000 duration_us=10000000 p50_us=40000 p99_us=90000 max_us=200000 status=0 connect=0 read=0 write=0 timeout=0 server_ticks=600 pg_ticks=1300 busy_ticks=2000 busy_ms=10000 cores=2 clk_tck=100 wrk_ms=100
`,
		"pg-floor        1          4000",
		"pg-post >= 0x pg-floor-schema                 0.75x                          pg-floor-schema not run        (no target)",
		"pg-floor-schema >= 0x pg-floor                0.50x                          not run                        (no target)",
		"pg-post >= 3000 req/s                         1500 req/s FAIL                1600 req/s FAIL                fail",
	)
}

// mustTable prints the table of results and checks that it holds each of
// want; it returns the table.
func mustTable(t *testing.T, results string, want ...string) string {
	t.Helper()
	runs, err := parseResults(strings.NewReader(results))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	printTable(&b, runs)
	out := b.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	return out
}
