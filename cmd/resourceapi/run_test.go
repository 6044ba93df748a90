package main

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/postgres/pgtest"
	"github.com/resourceapi/resourceapi/redis/redistest"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// syncBuffer is a bytes.Buffer safe for the server goroutine to write while
// the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConfigErrors(t *testing.T) {
	for name, kv := range map[string]map[string]string{
		"sync":      {"RESOURCEAPI_SQLITE_SYNC": "sometimes"},
		"cache":     {"RESOURCEAPI_SQLITE_CACHE": "-5"},
		"level":     {"RESOURCEAPI_LOG_LEVEL": "loud"},
		"format":    {"RESOURCEAPI_LOG_FORMAT": "xml"},
		"access":    {"RESOURCEAPI_ACCESS_LOG": "perhaps"},
		"shutdown":  {"RESOURCEAPI_SHUTDOWN_TIMEOUT": "-1s"},
		"issuer":    {"RESOURCEAPI_OAUTH_ISSUER": "https://auth.example.com/?x=1"},
		"grace":     {"RESOURCEAPI_OAUTH_REFRESH_REUSE_GRACE": "2m"},
		"grace<0":   {"RESOURCEAPI_OAUTH_REFRESH_REUSE_GRACE": "-1s"},
		"relay":     {"RESOURCEAPI_EVENTS_RELAY": "sometimes"},
		"deliver":   {"RESOURCEAPI_WEBHOOKS_DELIVER": "sometimes"},
		"poll":      {"RESOURCEAPI_EVENTS_POLL": "1ms"},
		"retain":    {"RESOURCEAPI_EVENTS_RETENTION": "0s"},
		"retry":     {"RESOURCEAPI_WEBHOOKS_RETRY_PERIOD": "soon"},
		"retry<1s":  {"RESOURCEAPI_WEBHOOKS_RETRY_PERIOD": "10ms"},
		"length":    {"RESOURCEAPI_EVENTS_STREAM_LENGTH": "10"},
		"ws user":   {"RESOURCEAPI_WS_MAX_PER_USER": "-1"},
		"ws addr":   {"RESOURCEAPI_WS_MAX_PER_ADDR": "many"},
		"response":  {"RESOURCEAPI_GRAPHQL_MAX_RESPONSE_BYTES": "100"},
		"records":   {"RESOURCEAPI_GRAPHQL_MAX_RECORDS": "many"},
		"scheme":    {"RESOURCEAPI_DATABASE_URL": "postgress://u:p@localhost/db"},
		"mysql":     {"RESOURCEAPI_DATABASE_URL": "mysql://u:p@localhost/db"},
		"idem":      {"RESOURCEAPI_IDEMPOTENCY_RETENTION": "30s"},
		"idem unit": {"RESOURCEAPI_IDEMPOTENCY_RETENTION": "24"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := loadConfig(env(kv)); err == nil {
				t.Fatalf("loadConfig(%v) = nil error, want one", kv)
			}
		})
	}
}

// TestOutboxRetention: the outbox keeps published events for the longer of
// the Server-Sent Events retention and the webhook retry period.
func TestOutboxRetention(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want time.Duration
	}{
		{nil, 24 * time.Hour},
		{map[string]string{"RESOURCEAPI_EVENTS_RETENTION": "48h"}, 48 * time.Hour},
		{map[string]string{"RESOURCEAPI_WEBHOOKS_RETRY_PERIOD": "2h"}, 2 * time.Hour},
		{map[string]string{"RESOURCEAPI_WEBHOOKS_RETRY_PERIOD": "10m", "RESOURCEAPI_EVENTS_RETENTION": "30m"}, 30 * time.Minute},
	} {
		cfg, err := loadConfig(env(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.outboxRetention(); got != c.want {
			t.Errorf("%v: outbox retention %v, want %v", c.env, got, c.want)
		}
	}
}

func TestConfigWebSocketCaps(t *testing.T) {
	cfg, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WSMaxPerUser != 64 || cfg.WSMaxPerAddr != 256 {
		t.Fatalf("defaults: per user %d, per address %d; want 64, 256", cfg.WSMaxPerUser, cfg.WSMaxPerAddr)
	}
	cfg, err = loadConfig(env(map[string]string{"RESOURCEAPI_WS_MAX_PER_USER": "3", "RESOURCEAPI_WS_MAX_PER_ADDR": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WSMaxPerUser != 3 || cfg.WSMaxPerAddr != 0 {
		t.Fatalf("per user %d, per address %d; want 3, 0", cfg.WSMaxPerUser, cfg.WSMaxPerAddr)
	}
}

func TestGraphQLLimitsConfig(t *testing.T) {
	cfg, err := loadConfig(env(map[string]string{
		"RESOURCEAPI_GRAPHQL_MAX_RESPONSE_BYTES": "1048576", "RESOURCEAPI_GRAPHQL_MAX_RECORDS": "5000"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GraphQLMaxResponseBytes != 1<<20 || cfg.GraphQLMaxRecords != 5000 {
		t.Fatalf("limits = %d bytes, %d records; want 1048576, 5000", cfg.GraphQLMaxResponseBytes, cfg.GraphQLMaxRecords)
	}
}

func TestSQLitePath(t *testing.T) {
	for in, want := range map[string]string{
		"./data/x.db":        "./data/x.db",
		"sqlite:///tmp/x.db": "/tmp/x.db",
		"sqlite:rel.db":      "rel.db",
		"file:/tmp/y.db":     "/tmp/y.db",
		"file:///tmp/z.db":   "/tmp/z.db",
	} {
		if got := (config{DatabaseURL: in}).sqlitePath(); got != want {
			t.Errorf("sqlitePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"frobnicate"}, env(nil), nil, &out, &errOut)
	if _, ok := err.(usageError); !ok {
		t.Fatalf("run(frobnicate) = %v, want a usage error", err)
	}
}

func TestMigrate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	var out, errOut bytes.Buffer
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": db}
	for range 2 { // migrating twice is a no-op, not an error
		if err := run(context.Background(), []string{"migrate"}, env(kv), nil, &out, &errOut); err != nil {
			t.Fatalf("migrate: %v\n%s", err, errOut.String())
		}
	}
}

// TestMigrateFreshDirectory runs migrate where the database's directory does
// not exist yet, as the default ./data/resourceapi.db in a fresh checkout.
func TestMigrateFreshDirectory(t *testing.T) {
	db := filepath.Join(t.TempDir(), "data", "resourceapi.db")
	var out, errOut bytes.Buffer
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": db}
	if err := run(context.Background(), []string{"migrate"}, env(kv), nil, &out, &errOut); err != nil {
		t.Fatalf("migrate in a fresh directory: %v\n%s", err, errOut.String())
	}
}

// TestMigrateWhileServing checks that migrate refuses a SQLite file that a
// server holds, with a message that says so, and works once it has stopped.
func TestMigrateWhileServing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": db, "RESOURCEAPI_ADDR": "127.0.0.1:0"}
	stop := mustServe(t, kv)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"migrate"}, env(kv), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "in use by another resourceapi process") {
		t.Fatalf("migrate while serving = %v, want an error saying the database is in use", err)
	}
	stop()
	if err := run(context.Background(), []string{"migrate"}, env(kv), nil, &out, &errOut); err != nil {
		t.Fatalf("migrate after the server stopped: %v\n%s", err, errOut.String())
	}
}

// mustServe runs the server in-process with kv as its environment until it
// listens, and returns a function that stops it and returns what it logged.
func mustServe(t *testing.T, kv map[string]string) (stop func() string) {
	t.Helper()
	stop, _ = mustServeOutput(t, kv)
	return stop
}

// mustServeOutput is mustServe that also returns what serve has written to
// stderr so far.
func mustServeOutput(t *testing.T, kv map[string]string) (stop, output func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, env(kv), nil, &bytes.Buffer{}, &errOut) }()
	for !strings.Contains(errOut.String(), "msg=listening") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve returned %v before listening:\n%s", err, errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	var once sync.Once
	stop = func() string {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve after shutdown = %v, want nil\n%s", err, errOut.String())
			}
		})
		return errOut.String()
	}
	t.Cleanup(func() { stop() })
	return stop, errOut.String
}

// TestServeBootstrapAndShutdown starts the server in-process twice on one
// database: the first start creates the admin and prints its generated
// password, the second does neither; each stops cleanly when its context ends.
func TestServeBootstrapAndShutdown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	kv := map[string]string{"RESOURCEAPI_DATABASE_URL": db, "RESOURCEAPI_ADDR": "127.0.0.1:0"}
	start := func() string {
		t.Helper()
		out := mustServe(t, kv)()
		if t.Failed() {
			t.FailNow()
		}
		return out
	}
	before := runtime.NumGoroutine()
	first := start()
	if !strings.Contains(first, "password: ") || !strings.Contains(first, "admin@localhost") {
		t.Fatalf("first start did not print the admin's password:\n%s", first)
	}
	if second := start(); strings.Contains(second, "password") {
		t.Fatalf("second start printed a password again:\n%s", second)
	}
	// Everything serve started (listener, database writer, log flusher,
	// relay, connections) must be gone once it has returned.
	mustNoGoroutinesOver(t, before)
}

// mustNoGoroutinesOver waits until no more than before goroutines run.
// Goroutines end asynchronously, so it gives them a bounded number of
// chances.
func mustNoGoroutinesOver(t *testing.T, before int) {
	t.Helper()
	for i := 0; runtime.NumGoroutine() > before; i++ {
		if i == 500 {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeEventsShutdown serves on PostgreSQL with Redis, where events go
// through a Redis stream: when serve returns, the subscriptions it handed
// out are closed, and the relay, the stream's follower and the Redis
// client's goroutines are gone.
func TestServeEventsShutdown(t *testing.T) {
	rdb := redistest.NewClient(t)
	kv := map[string]string{
		"RESOURCEAPI_DATABASE_URL": pgtest.NewDatabase(t), "RESOURCEAPI_ADDR": "127.0.0.1:0",
		"RESOURCEAPI_REDIS_URL": redistest.URL(t), "RESOURCEAPI_EVENTS_STREAM": redistest.Prefix(t, rdb) + "events",
	}
	got := make(chan resourceapi.Events, 1)
	testHookServing = func(ev resourceapi.Events) { got <- ev }
	defer func() { testHookServing = nil }()
	before := runtime.NumGoroutine()
	stop := mustServe(t, kv)
	sub, err := resourceapi.Subscribe(context.Background(), <-got, "userCreated", 1)
	if err != nil {
		t.Fatal(err)
	}
	if out := stop(); !strings.Contains(out, "engine=redis") {
		t.Fatalf("the server did not say it carries events through Redis:\n%s", out)
	}
	// The first admin's userCreated may be in the channel before it closes.
	for open := true; open; {
		select {
		case _, open = <-sub:
		case <-time.After(10 * time.Second):
			t.Fatal("the subscription is still open 10s after serve returned")
		}
	}
	mustNoGoroutinesOver(t, before)
}

// TestWebhooksDeliverSetting: delivery is on by default, off with false,
// and anything else is refused by name.
func TestWebhooksDeliverSetting(t *testing.T) {
	for v, want := range map[string]bool{"": true, "true": true, "false": false, "0": false} {
		cfg, err := loadConfig(env(map[string]string{"RESOURCEAPI_WEBHOOKS_DELIVER": v}))
		if err != nil || cfg.WebhooksDeliver != want {
			t.Errorf("RESOURCEAPI_WEBHOOKS_DELIVER=%q: %v, %v; want %v", v, cfg.WebhooksDeliver, err, want)
		}
	}
	_, err := loadConfig(env(map[string]string{"RESOURCEAPI_WEBHOOKS_DELIVER": "paused"}))
	if err == nil || !strings.Contains(err.Error(), "RESOURCEAPI_WEBHOOKS_DELIVER must be true or false") {
		t.Errorf("RESOURCEAPI_WEBHOOKS_DELIVER=paused: %v, want it refused by name", err)
	}
}
