package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// buildCrashBinary compiles the command with the crash hook
// (crashhook_on.go) once per test binary.
var buildCrashBinary = sync.OnceValues(func() (string, error) {
	return build(binDir(), "-tags=crashhook")
})

// TestIdempotencyKeyCrash: the server is killed with SIGKILL after a POST
// with an Idempotency-Key committed and before its response went out (a
// test build's hook). After a restart, the retry gets the stored response
// as a replay, and the record exists once: the key was committed with the
// write.
func TestIdempotencyKeyCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildCrashBinary()
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "crash.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
	for name, database := range stores {
		t.Run(name, func(t *testing.T) {
			db := "RESOURCEAPI_DATABASE_URL=" + database(t)
			srv := mustStartBinary(t, bin, db)
			key := srv.Key
			post := func(srv *process, crash bool) (*http.Response, []byte, error) {
				req, err := http.NewRequest("POST", srv.URL+"/api/products", strings.NewReader(`{"name":"Crash","price_cents":3}`))
				if err != nil {
					return nil, nil, err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Key", key)
				req.Header.Set("Idempotency-Key", "crash-1")
				if crash {
					req.Header.Set("X-Test-Crash", "before-response")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return nil, nil, err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return resp, b, err
			}
			if resp, _, err := post(srv, true); err == nil {
				t.Fatalf("the crashing request was answered: %d", resp.StatusCode)
			}
			srv.wait()
			if ws, ok := srv.cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
				t.Fatalf("the server did not die by a signal: %v\n%s", srv.cmd.ProcessState, srv.stderr)
			}

			srv = mustStartBinary(t, bin, db)
			resp, body, err := post(srv, false)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotency-Replayed") != "true" {
				t.Fatalf("retry after the crash: %d, Idempotency-Replayed %q, want 201 replayed; %s", resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), body)
			}
			var got struct{ Name string }
			if err := json.Unmarshal(body, &got); err != nil || got.Name != "Crash" {
				t.Errorf("replayed body %s (%v), want the product", body, err)
			}
			lr, err := srv.do("GET", "/api/products?q=Crash", "", key)
			if err != nil {
				t.Fatal(err)
			}
			var page struct{ Pagination struct{ Total int } }
			err = json.NewDecoder(lr.Body).Decode(&page)
			lr.Body.Close()
			if err != nil || page.Pagination.Total != 1 {
				t.Errorf("products named Crash = %d (%v), want 1", page.Pagination.Total, err)
			}
		})
	}
}
