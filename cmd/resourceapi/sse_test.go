package main_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// sseFrame is one event of a Server-Sent Events stream.
type sseFrame struct {
	ID, Event string
	Data      struct {
		ID       int64          `json:"id"`
		Type     string         `json:"type"`
		Resource string         `json:"resource"`
		Actor    int64          `json:"actor"`
		Record   map[string]any `json:"record"`
		Code     string         `json:"code"`
	}
	Raw string
}

// sseStream is a plain HTTP client of GET /api/events.
type sseStream struct {
	frames <-chan sseFrame
	body   io.Closer
}

// openSSE opens a stream with key, the query q and Last-Event-ID last ("":
// none). It returns the status when it is not 200.
func openSSE(t testing.TB, baseURL, key, q, last string) (*sseStream, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/api/events?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /api/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	ch := make(chan sseFrame, 1000)
	go func() {
		defer close(ch)
		rd := bufio.NewReader(resp.Body)
		var f sseFrame
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if f.Event != "" {
					ch <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.Raw = line[6:]
				_ = json.Unmarshal([]byte(f.Raw), &f.Data)
			}
		}
	}()
	s := &sseStream{frames: ch, body: closerFunc(func() error { cancel(); return resp.Body.Close() })}
	t.Cleanup(func() { s.body.Close() })
	return s, http.StatusOK
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// next returns the next frame, failing after within.
func (s *sseStream) next(t testing.TB, within time.Duration) sseFrame {
	t.Helper()
	select {
	case f, ok := <-s.frames:
		if !ok {
			t.Fatal("the stream ended")
		}
		return f
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
	}
	panic("unreachable")
}

// ended waits until the stream ends, failing on any event but an error.
func (s *sseStream) ended(t testing.TB, within time.Duration) {
	t.Helper()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return
			}
			if f.Event != "error" {
				t.Fatalf("event %s (%s) after the end, want none", f.Event, f.Raw)
			}
		case <-time.After(within):
			t.Fatalf("the stream did not end within %v", within)
		}
	}
}

// postJSON posts body with key and returns the response's record.
func postJSON(t testing.TB, baseURL, key, method, path, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, baseURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var rec map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&rec)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: status %d %v", method, path, resp.StatusCode, rec)
	}
	return rec
}

// TestEventStream is issue 18's test of Server-Sent Events over a real
// server: each caller receives the events it may read (an order's reach its
// owner and admins only); a client cut off at a random event resumes with
// Last-Event-ID and misses nothing, receiving nothing twice; a revoked key
// ends its stream; a resumption older than the retention is told so; bad
// requests are 4xx.
func TestEventStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server")
	}
	path := filepath.Join(t.TempDir(), "sse.db")
	srv := startInProcess(t, "RESOURCEAPI_DATABASE_URL="+path, "RESOURCEAPI_EVENTS_POLL=50ms")
	admin := printedKey.FindStringSubmatch(srv.log.String())[1]
	ann := mustCreate(t, srv.URL, admin, "/api/users", userBody("ann@example.com"))
	bob := mustCreate(t, srv.URL, admin, "/api/users", userBody("bob@example.com"))
	annKey := postJSON(t, srv.URL, admin, "POST", fmt.Sprintf("/api/users/%d/api-keys", ann), `{}`)
	bobKey := postJSON(t, srv.URL, admin, "POST", fmt.Sprintf("/api/users/%d/api-keys", bob), `{}`)
	product := mustCreate(t, srv.URL, admin, "/api/products", `{"name":"Engine","price_cents":100}`)
	order := func(user int64) int64 {
		return mustCreate(t, srv.URL, admin, fmt.Sprintf("/api/users/%d/orders", user),
			fmt.Sprintf(`{"items":[{"product_id":%d,"quantity":1}]}`, product))
	}

	// Refusals, before any stream.
	for _, c := range []struct {
		key, q, last string
		want         int
	}{
		{"", "", "", http.StatusUnauthorized},
		{admin, "types=nothing.created", "", http.StatusBadRequest},
		{admin, "types=orders.moved", "", http.StatusBadRequest},
		{admin, "", "12abc", http.StatusBadRequest},
		{admin, "", "-1", http.StatusBadRequest},
		{"rak_nosuchkey", "", "", http.StatusForbidden},
	} {
		if _, status := openSSE(t, srv.URL, c.key, c.q, c.last); status != c.want {
			t.Errorf("GET /api/events?%s with key %q, Last-Event-ID %q: status %d, want %d", c.q, c.key, c.last, status, c.want)
		}
	}

	// Permissions per caller.
	adminS, _ := openSSE(t, srv.URL, admin, "types=orders.*", "")
	annS, _ := openSSE(t, srv.URL, annKey["key"].(string), "types=orders.created,products.*", "")
	bobS, _ := openSSE(t, srv.URL, bobKey["key"].(string), "types=orders.*", "")
	annOrder, bobOrder := order(ann), order(bob)
	for _, want := range []int64{annOrder, bobOrder} {
		if f := adminS.next(t, 10*time.Second); f.Event != "orders.created" || int64(f.Data.Record["id"].(float64)) != want {
			t.Fatalf("admin's stream: %s %s, want orders.created of order %d", f.Event, f.Raw, want)
		}
	}
	if f := annS.next(t, 10*time.Second); f.Event != "orders.created" || int64(f.Data.Record["id"].(float64)) != annOrder ||
		f.ID != strconv.FormatInt(f.Data.ID, 10) || f.Data.Actor == 0 {
		t.Fatalf("Ann's stream: %s %s (id %s), want her order %d with its id and actor", f.Event, f.Raw, f.ID, annOrder)
	}
	if f := bobS.next(t, 10*time.Second); int64(f.Data.Record["id"].(float64)) != bobOrder {
		t.Fatalf("Bob's stream: %s, want only his order %d", f.Raw, bobOrder)
	}
	postJSON(t, srv.URL, admin, "PATCH", fmt.Sprintf("/api/products/%d", product), `{"price_cents":200}`)
	if f := annS.next(t, 10*time.Second); f.Event != "products.updated" {
		t.Fatalf("Ann's stream: %s, want products.updated", f.Raw)
	}

	// Resumption after a cut at a random event: nothing lost or doubled.
	const n = 12
	var want []string
	for range n {
		want = append(want, strconv.FormatInt(order(ann), 10))
	}
	var got []sseFrame
	cut := 1 + rand.IntN(n-1)
	for range cut {
		got = append(got, annS.next(t, 10*time.Second))
	}
	annS.body.Close()
	for range 3 { // written while Ann is away
		want = append(want, strconv.FormatInt(order(ann), 10))
	}
	annS, _ = openSSE(t, srv.URL, annKey["key"].(string), "types=orders.created,products.*", got[len(got)-1].ID)
	want = append(want, strconv.FormatInt(order(ann), 10)) // live, after the resumption
	for len(got) < len(want) {
		got = append(got, annS.next(t, 10*time.Second))
	}
	for i, f := range got {
		if rec := strconv.FormatInt(int64(f.Data.Record["id"].(float64)), 10); rec != want[i] {
			t.Fatalf("after a cut at event %d: event %d is of order %s, want %s", cut, i, rec, want[i])
		}
		if i > 0 && f.Data.ID <= got[i-1].Data.ID {
			t.Fatalf("event ids %d then %d", got[i-1].Data.ID, f.Data.ID)
		}
	}

	// A resumption from before what the retention deleted is told so.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)") // the server may be writing
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE events_purged SET through = 3"); err != nil {
		t.Fatal(err)
	}
	old, _ := openSSE(t, srv.URL, admin, "types=users.created", "1")
	if f := old.next(t, 10*time.Second); f.Event != "expired" || f.ID != "3" {
		t.Fatalf("resuming from event 1 after the retention deleted 3: %s %s %s, want expired with id 3", f.ID, f.Event, f.Raw)
	}
	if f := old.next(t, 10*time.Second); f.Event != "users.created" || int64(f.Data.Record["id"].(float64)) != ann {
		t.Fatalf("after expired: %s, want the users created after event 1 still kept", f.Raw)
	}
	old.body.Close()

	// A revoked key ends its stream, with an error event.
	postJSON(t, srv.URL, admin, "DELETE", fmt.Sprintf("/api/users/%d/api-keys/%d", ann, int64(annKey["id"].(float64))), ``)
	order(ann)
	for {
		f := annS.next(t, 10*time.Second)
		if f.Event == "error" {
			if f.Data.Code != "INVALID_TOKEN" {
				t.Fatalf("error event %s, want INVALID_TOKEN", f.Raw)
			}
			break
		}
		if f.Event != "orders.created" {
			t.Fatalf("event %s after the revocation", f.Raw)
		}
	}
	annS.ended(t, 10*time.Second)
}

// TestEventStreamAcrossInstances: on PostgreSQL and Redis, a stream on one
// instance hears the writes of another (a process of the binary), and
// resumes there after a cut, missing nothing and receiving nothing twice.
func TestEventStreamAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	pg := pgtest.NewDatabase(t)
	rds := redistest.StartServer(t)
	common := []string{"RESOURCEAPI_DATABASE_URL=" + pg, "RESOURCEAPI_REDIS_URL=" + rds.URL, "RESOURCEAPI_EVENTS_POLL=100ms"}
	writer := mustStart(t, common...)
	if writer.Key == "" {
		t.Fatalf("the first start printed no API key:\n%s", writer.stderr)
	}
	reader := startInProcess(t, common...)
	s, status := openSSE(t, reader.URL, writer.Key, "types=users.created", "")
	if status != http.StatusOK {
		t.Fatalf("GET /api/events on the second instance: %d", status)
	}
	var want []int64
	for i := range 3 {
		want = append(want, mustCreate(t, writer.URL, writer.Key, "/api/users", userBody(fmt.Sprintf("a%d@example.com", i))))
	}
	// A stream without Last-Event-ID receives what is published after it
	// listens: the administrator's event, committed when the writer
	// started, comes first if the writer's relay had not published it yet
	// (as in TestEventStreamCommitOrder). Events of records older than the
	// first write are passed over.
	var got []sseFrame
	for len(got) < 2 {
		f := s.next(t, 10*time.Second)
		if int64(f.Data.Record["id"].(float64)) < want[0] {
			continue
		}
		got = append(got, f)
	}
	s.body.Close()
	for i := range 2 {
		want = append(want, mustCreate(t, writer.URL, writer.Key, "/api/users", userBody(fmt.Sprintf("b%d@example.com", i))))
	}
	s, _ = openSSE(t, reader.URL, writer.Key, "types=users.created", got[len(got)-1].ID)
	for len(got) < len(want) {
		got = append(got, s.next(t, 10*time.Second))
	}
	for i, f := range got {
		if id := int64(f.Data.Record["id"].(float64)); id != want[i] {
			t.Fatalf("event %d is of user %d, want %d", i, id, want[i])
		}
	}
	// A barrier: the next event is the next write's, not a repeat.
	last := mustCreate(t, writer.URL, writer.Key, "/api/users", userBody("last@example.com"))
	if f := s.next(t, 10*time.Second); int64(f.Data.Record["id"].(float64)) != last {
		t.Fatalf("after the resumption: %s, want user %d (a repeat?)", f.Raw, last)
	}
}

// TestEventStreamCommitOrder provokes, on PostgreSQL, what a resuming
// client must survive: a transaction that took an event id stays open
// while a later write commits (without waiting for it: writers take the
// order lock shared, migration 00028). A stream reads the first event that
// reaches it, is cut, and resumes from that event's id: it receives every
// event once, the open transaction's included (the relay publishes
// nothing past the open transaction until it ends, and a resumption reads
// the outbox up to the relay's horizon; docs/events.md, "Order and
// resumption"). With ids from a plain sequence and no horizon, the later
// write's event would reach the stream first and the earlier one never.
func TestEventStreamCommitOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server")
	}
	pg := pgtest.NewDatabase(t)
	srv := startInProcess(t, "RESOURCEAPI_DATABASE_URL="+pg, "RESOURCEAPI_EVENTS_POLL=50ms")
	admin := printedKey.FindStringSubmatch(srv.log.String())[1]
	s, _ := openSSE(t, srv.URL, admin, "types=users.created", "")
	first := mustCreate(t, srv.URL, admin, "/api/users", userBody("first@example.com"))
	// A stream without Last-Event-ID receives what is published after it
	// listens: the administrator's event, committed when the server
	// started, may come first if the relay had not published it yet.
	for {
		f := s.next(t, 10*time.Second)
		id := int64(f.Data.Record["id"].(float64))
		if id == first {
			break
		}
		if id > first {
			t.Fatalf("first event %s, want user %d's", f.Raw, first)
		}
	}
	raw, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var held int64 // a copy of the first user's event, its transaction open
	if err := tx.QueryRow(`INSERT INTO events (name, alias, actor, resource, record_id, payload, payload_text, created_at)
		SELECT name, alias, actor, resource, record_id, payload, payload_text, created_at FROM events WHERE resource = 'users' AND record_id = $1
		RETURNING id`, first).Scan(&held); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var second int64
	var errSecond error
	go func() {
		defer close(done)
		second, errSecond = create(srv.URL, admin, "/api/users", userBody("second@example.com"))
	}()
	// The relay's session waits for the open transaction; the write must not.
	if pgtest.WaitLockedWhereOr(t, raw, "query NOT LIKE '%events_establish_horizon%'", done) {
		tx.Rollback()
		t.Fatal("a write waited for another transaction's event to commit")
	}
	if errSecond != nil {
		t.Fatal(errSecond)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := []sseFrame{s.next(t, 10*time.Second)}
	s.body.Close()
	s, _ = openSSE(t, srv.URL, admin, "types=users.created", got[0].ID)
	last := mustCreate(t, srv.URL, admin, "/api/users", userBody("last@example.com"))
	for {
		f := s.next(t, 10*time.Second)
		got = append(got, f)
		if int64(f.Data.Record["id"].(float64)) == last {
			break
		}
	}
	var events []string
	heldN, secondN := 0, 0
	for i, f := range got {
		events = append(events, fmt.Sprintf("%d (user %v)", f.Data.ID, f.Data.Record["id"]))
		if i > 0 && f.Data.ID <= got[i-1].Data.ID {
			t.Errorf("event %d after %d", f.Data.ID, got[i-1].Data.ID)
		}
		switch {
		case f.Data.ID == held:
			heldN++
		case int64(f.Data.Record["id"].(float64)) == second:
			secondN++
		}
	}
	if heldN != 1 || secondN != 1 {
		t.Fatalf("the stream, cut after its first event and resumed, received %v: the open transaction's event %d %d times, the later write's %d times; want each once",
			events, held, heldN, secondN)
	}
}

// TestEventStreamResumeUnderConcurrentWrites: on PostgreSQL and Redis, with
// writers committing at once (their transactions overlapping, so ids would
// commit out of order if nothing ordered them), a plain HTTP client is cut
// at random events and resumes each time from the last id it received:
// every write's event arrives exactly once, in increasing id order.
func TestEventStreamResumeUnderConcurrentWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server")
	}
	pg := pgtest.NewDatabase(t)
	rds := redistest.StartServer(t)
	srv := startInProcess(t, "RESOURCEAPI_DATABASE_URL="+pg, "RESOURCEAPI_REDIS_URL="+rds.URL, "RESOURCEAPI_EVENTS_POLL=50ms")
	admin := printedKey.FindStringSubmatch(srv.log.String())[1]
	s, _ := openSSE(t, srv.URL, admin, "types=users.created", "0")

	const writers, each = 4, 25
	var mu sync.Mutex
	created := map[int64]bool{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id, err := create(srv.URL, admin, "/api/users", userBody(fmt.Sprintf("w%d-%d@example.com", w, i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				created[id] = true
				mu.Unlock()
			}
		})
	}
	seen := map[int64]int{}
	var last int64
	cuts := 0
	read := func(f sseFrame) {
		if f.Event != "users.created" {
			t.Fatalf("frame %s %s", f.Event, f.Raw)
		}
		if f.Data.ID <= last {
			t.Fatalf("event %d after %d", f.Data.ID, last)
		}
		last = f.Data.ID
		seen[int64(f.Data.Record["id"].(float64))]++
	}
	for got := 0; got < writers*each; {
		n := 1 + rand.IntN(20) // events until the next cut
		for range n {
			read(s.next(t, 10*time.Second))
			got++
			if got == writers*each {
				break
			}
		}
		s.body.Close()
		cuts++
		s, _ = openSSE(t, srv.URL, admin, "types=users.created", strconv.FormatInt(last, 10))
	}
	wg.Wait()
	barrier := mustCreate(t, srv.URL, admin, "/api/users", userBody("barrier@example.com"))
	for {
		f := s.next(t, 10*time.Second)
		read(f)
		if int64(f.Data.Record["id"].(float64)) == barrier {
			break
		}
	}
	for id := range created {
		if seen[id] != 1 {
			t.Errorf("user %d's event received %d times across %d cuts, want once", id, seen[id], cuts)
		}
	}
	if len(seen) != len(created)+2 { // the admin's and the barrier
		t.Errorf("received the events of %d users, want %d", len(seen), len(created)+2)
	}
}
