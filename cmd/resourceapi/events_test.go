package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	main "github.com/resourceapi/resourceapi/cmd/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

// logBuffer is a bytes.Buffer that an in-process server writes while the
// test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// instance is a server running in this process, whose events a test
// subscribes to as GraphQL subscriptions do.
type instance struct {
	URL    string
	Events resourceapi.Events
	log    *logBuffer
}

// startInProcess runs the server in this process with env (KEY=value) added
// to the environment mustStart gives the binary, until the test ends.
func startInProcess(t testing.TB, env ...string) *instance {
	t.Helper()
	kv := map[string]string{"RESOURCEAPI_ADDR": "127.0.0.1:0", "RESOURCEAPI_ACCESS_LOG": "false",
		"RESOURCEAPI_ADMIN_PASSWORD": "correct horse battery", "RESOURCEAPI_RATE_LIMIT": "0"}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		kv[k] = v
	}
	events := make(chan resourceapi.Events, 1)
	restore := main.SetServingHook(func(ev resourceapi.Events) { events <- ev })
	defer restore()
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{log: &logBuffer{}}
	done := make(chan error, 1)
	go func() {
		done <- main.Run(ctx, nil, func(k string) string { return kv[k] }, nil, io.Discard, inst.log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("in-process server: %v\n%s", err, inst.log)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("in-process server did not stop within 30s")
		}
	})
	deadline := time.After(60 * time.Second)
	for {
		if m := listening.FindStringSubmatch(inst.log.String()); m != nil {
			inst.URL = "http://" + m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("in-process server returned %v before listening:\n%s", err, inst.log)
		case <-deadline:
			t.Fatalf("in-process server did not listen within a minute:\n%s", inst.log)
		case <-time.After(10 * time.Millisecond):
		}
	}
	inst.Events = <-events
	return inst
}

// subscribe subscribes to name on events until the test ends.
func subscribe(t testing.TB, events resourceapi.Events, name string) <-chan resourceapi.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := resourceapi.Subscribe(ctx, events, name, 1000)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", name, err)
	}
	return ch
}

// mustEvent waits, at most within, for the next event, and checks that it
// is of record id (any record when id is 0).
func mustEvent(t testing.TB, ch <-chan resourceapi.Event, id int64, within time.Duration) resourceapi.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the subscription was closed")
		}
		if id != 0 && ev.Record.ID() != id {
			t.Fatalf("event %d (%s) of record %d, want one of record %d", ev.ID, ev.Name, ev.Record.ID(), id)
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event of record %d within %v", id, within)
	}
	panic("unreachable")
}

// mustNoMore checks that no event is waiting.
func mustNoMore(t testing.TB, ch <-chan resourceapi.Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %d of record %d: delivered twice?", ev.ID, ev.Record.ID())
	default:
	}
}

// mustCreate creates a record over REST and returns its id.
func mustCreate(t testing.TB, baseURL, key, path, body string) int64 {
	t.Helper()
	id, err := create(baseURL, key, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// create creates a record over REST and returns its id, or why not: for
// goroutines other than the test's, which must not call t.Fatal.
func create(baseURL, key, path, body string) (int64, error) {
	req, err := http.NewRequest("POST", baseURL+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var rec struct{ ID int64 }
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("POST %s: status %d (%v), want 201", path, resp.StatusCode, err)
	}
	return rec.ID, nil
}

func userBody(email string) string {
	return fmt.Sprintf(`{"name":"Events","email":%q}`, email)
}

// TestEventsFromEveryDoor runs one server on SQLite: a write through REST
// and one through the command line (another process, beside the server)
// both reach a subscriber, each once; a post publishes postCreated.
func TestEventsFromEveryDoor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	dbEnv := "RESOURCEAPI_DATABASE_URL=" + filepath.Join(t.TempDir(), "events.db")
	srv := startInProcess(t, dbEnv, "RESOURCEAPI_EVENTS_POLL=50ms")
	key := printedKey.FindStringSubmatch(srv.log.String())
	if key == nil {
		t.Fatalf("the first start printed no API key:\n%s", srv.log)
	}
	users, posts := subscribe(t, srv.Events, "userCreated"), subscribe(t, srv.Events, "postCreated")

	id := mustCreate(t, srv.URL, key[1], "/api/users", userBody("rest@example.com"))
	if ev := mustEvent(t, users, id, 10*time.Second); ev.Record["email"] != "rest@example.com" || ev.Alias != "userCreated" {
		t.Fatalf("event %+v, want userCreated with the user's record", ev)
	}
	post := mustCreate(t, srv.URL, key[1], "/api/posts", fmt.Sprintf(`{"author_id":%d,"title":"Hi","content":"There"}`, id))
	mustEvent(t, posts, post, 10*time.Second)

	cmd := exec.Command(bin, "user", "create", "--email", "cli@example.com", "--name", "CLI")
	cmd.Env = []string{dbEnv}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user create: %v\n%s", err, out)
	}
	ev := mustEvent(t, users, 0, 10*time.Second)
	if ev.Record["email"] != "cli@example.com" {
		t.Fatalf("event of %v, want the user the command created", ev.Record)
	}
	mustNoMore(t, users)
	mustNoMore(t, posts)
}

// published reports whether the outbox of the database at url has marked
// the event of user id published.
func published(t testing.TB, url string, id int64) bool {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var published bool
	err = db.QueryRow("SELECT id <= (SELECT through FROM events_published) FROM events WHERE resource = 'users' AND record_id = $1", id).Scan(&published)
	if err != nil {
		t.Fatalf("the event of user %d: %v", id, err)
	}
	return published
}

// waitPublished waits, at most 10 s, until the event of user id is marked
// published.
func waitPublished(t testing.TB, url string, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !published(t, url, id) {
		if time.Now().After(deadline) {
			t.Fatalf("the event of user %d is not marked published after 10s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits, at most within, until log has a line containing s.
func waitLog(t testing.TB, log *logBuffer, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(log.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q within %v:\n%s", s, within, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEventsAcrossInstances is issue 8's test of events across instances:
// servers on one PostgreSQL and one Redis (a private one, which the test
// restarts). The subscriber is on an in-process instance; the writers are
// processes of the binary.
func TestEventsAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	pg := pgtest.NewDatabase(t)
	rds := redistest.StartServer(t)
	common := []string{"RESOURCEAPI_DATABASE_URL=" + pg, "RESOURCEAPI_REDIS_URL=" + rds.URL, "RESOURCEAPI_EVENTS_POLL=100ms"}
	writer := mustStart(t, common...)
	key := writer.Key
	if key == "" {
		t.Fatalf("the first start printed no API key:\n%s", writer.stderr)
	}
	subscriber := startInProcess(t, common...)
	sub := subscribe(t, subscriber.Events, "userCreated")

	// Subscribe on one, create on the other: the event arrives, once. The
	// second write is a barrier: it is published after the first event was
	// marked published, so a repeat of the first would arrive before it.
	first := mustCreate(t, writer.URL, key, "/api/users", userBody("first@example.com"))
	ev := mustEvent(t, sub, first, 10*time.Second)
	if ev.Record["email"] != "first@example.com" || ev.Alias != "userCreated" || ev.Resource != "users" {
		t.Fatalf("event %+v, want userCreated with the user's record", ev)
	}
	waitPublished(t, pg, first)
	second := mustCreate(t, writer.URL, key, "/api/users", userBody("second@example.com"))
	mustEvent(t, sub, second, 10*time.Second)
	mustNoMore(t, sub)

	// A writer killed right after its commit, before any publish (its relay
	// is off): the event is in the outbox, and the subscriber's instance
	// publishes it on its poll.
	doomed := mustStart(t, append(slices.Clone(common), "RESOURCEAPI_EVENTS_RELAY=off")...)
	killed := mustCreate(t, doomed.URL, key, "/api/users", userBody("killed@example.com"))
	doomed.kill()
	mustEvent(t, sub, killed, 10*time.Second)
	mustNoMore(t, sub)

	// Redis restarts, empty. A write made while it is down waits in the
	// outbox and arrives once Redis is back; later writes flow as before.
	rds.Stop()
	during := mustCreate(t, writer.URL, key, "/api/users", userBody("during@example.com"))
	waitLog(t, subscriber.log, "cannot read the Redis stream", 20*time.Second)
	if published(t, pg, during) {
		t.Fatal("an event was published while Redis was down")
	}
	rds.Start()
	mustEvent(t, sub, during, 30*time.Second)
	after := mustCreate(t, writer.URL, key, "/api/users", userBody("after@example.com"))
	mustEvent(t, sub, after, 10*time.Second)
	mustNoMore(t, sub)
}

// BenchmarkEventLatency measures how long after its commit an event reaches
// a subscriber, one write at a time: on SQLite (one instance), and on
// PostgreSQL with Redis, subscribed on the writing instance and on another
// (two in-process instances that share only the database and Redis). It
// reports percentiles of the time from the write's timestamp (taken in its
// transaction before the commit, in whole milliseconds, so up to 1 ms
// early) to the event's arrival ("commit"), of the whole path from sending
// the POST ("post"), and from the client's reading the 201 to the arrival
// ("answer", negative when the subscriber had it first).
//
//	go test -run '^$' -bench EventLatency -benchtime 500x ./cmd/resourceapi
func BenchmarkEventLatency(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		srv := startInProcess(b, "RESOURCEAPI_DATABASE_URL="+filepath.Join(b.TempDir(), "latency.db"))
		benchLatency(b, srv, srv)
	})
	pgAndRedis := func(b *testing.B) []string {
		rdb := redistest.NewClient(b)
		return []string{"RESOURCEAPI_DATABASE_URL=" + pgtest.NewDatabase(b), "RESOURCEAPI_REDIS_URL=" + redistest.URL(b),
			"RESOURCEAPI_EVENTS_STREAM=" + redistest.Prefix(b, rdb) + "events"}
	}
	b.Run("postgres+redis/same-instance", func(b *testing.B) {
		srv := startInProcess(b, pgAndRedis(b)...)
		benchLatency(b, srv, srv)
	})
	b.Run("postgres+redis/across-instances", func(b *testing.B) {
		env := pgAndRedis(b)
		writer := startInProcess(b, env...)
		benchLatency(b, writer, startInProcess(b, env...))
	})
}

func benchLatency(b *testing.B, writer, subscriber *instance) {
	key := printedKey.FindStringSubmatch(writer.log.String())
	if key == nil {
		b.Fatalf("the first start printed no API key:\n%s", writer.log)
	}
	sub := subscribe(b, subscriber.Events, "userCreated")
	type arrival struct {
		ev resourceapi.Event
		at time.Time
	}
	arrivals := make(chan arrival, 16)
	go func() {
		for ev := range sub {
			arrivals <- arrival{ev, time.Now()}
		}
	}()
	var fromAt, fromSend, fromAnswer []time.Duration
	b.ResetTimer()
	for i := range b.N {
		sent := time.Now()
		id := mustCreate(b, writer.URL, key[1], "/api/users", userBody(fmt.Sprintf("latency%d-%d@example.com", b.N, i)))
		answered := time.Now()
		for {
			var a arrival
			select {
			case a = <-arrivals:
			case <-time.After(10 * time.Second):
				b.Fatalf("no event of user %d within 10s", id)
			}
			if a.ev.Record.ID() != id {
				continue // the first admin's, from the start
			}
			fromAt, fromSend = append(fromAt, a.at.Sub(a.ev.At)), append(fromSend, a.at.Sub(sent))
			fromAnswer = append(fromAnswer, a.at.Sub(answered))
			break
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(fromAt, 0.5), "commit-p50-ms")
	b.ReportMetric(pct(fromAt, 0.99), "commit-p99-ms")
	b.ReportMetric(pct(fromSend, 0.5), "post-p50-ms")
	b.ReportMetric(pct(fromSend, 0.99), "post-p99-ms")
	b.ReportMetric(pct(fromAnswer, 0.5), "answer-p50-ms")
	b.ReportMetric(pct(fromAnswer, 0.99), "answer-p99-ms")
}
