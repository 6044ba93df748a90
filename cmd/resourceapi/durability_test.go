package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/postgres/pgtest"
)

// buildBinary compiles the command once per test binary; TestMain removes
// it.
var buildBinary = sync.OnceValues(func() (string, error) {
	return build(binDir())
})

// binDir returns the directory of the test binary's builds, made once.
var binDir = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "resourceapi-bin-")
	if err != nil {
		panic(err)
	}
	return dir
})

// build compiles the command into dir with extra go build flags.
func build(dir string, flags ...string) (string, error) {
	bin := filepath.Join(dir, "resourceapi")
	if len(flags) > 0 {
		bin += "-" + strings.NewReplacer("/", "_", " ", "_", "=", "_").Replace(strings.Join(flags, "_"))
	}
	args := append(append([]string{"build", "-o", bin}, flags...), ".")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// process is a resourceapi server running as a child process.
type process struct {
	cmd    *exec.Cmd
	URL    string
	stderr *logBuffer
	done   chan struct{} // closed when the process's stderr is closed
	// Key is the API key of the admin the first start on a database
	// created and printed; "" on later starts.
	Key string
}

var (
	listening  = regexp.MustCompile(`msg=listening addr=(\S+)`)
	printedKey = regexp.MustCompile(`API key:\s+(rak_\S+)`)
)

// mustStart starts the binary with env added to a minimal environment and
// waits until it listens.
func mustStart(t *testing.T, env ...string) *process {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return mustStartBinary(t, bin, env...)
}

// mustStartBinary is mustStart with the binary bin.
func mustStartBinary(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	p, err := start(bin, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	return p
}

// start starts the binary bin with env added to a minimal environment and
// waits until it listens, or fails with what it printed.
func start(bin string, env ...string) (*process, error) {
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "RESOURCEAPI_ADDR=127.0.0.1:0",
		"RESOURCEAPI_ACCESS_LOG=false", "RESOURCEAPI_ADMIN_PASSWORD=correct horse battery",
		"RESOURCEAPI_RATE_LIMIT=0"}, env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stderr: new(logBuffer), done: make(chan struct{})}
	addr := make(chan string, 1)
	var key string
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			if m := printedKey.FindStringSubmatch(line); m != nil {
				key = m[1]
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			p.wait()
			return p, fmt.Errorf("server exited before listening:\n%s", p.stderr)
		}
		p.URL, p.Key = "http://"+a, key
	case <-time.After(60 * time.Second):
		p.kill()
		return p, fmt.Errorf("server did not listen within a minute:\n%s", p.stderr)
	}
	return p, nil
}

// stop stops the server as an operator does (SIGTERM), waits until it has
// exited, and returns everything it wrote to stderr.
func (p *process) stop(t *testing.T) string {
	t.Helper()
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(60 * time.Second):
			p.kill()
			t.Fatalf("the server did not stop within a minute of SIGTERM:\n%s", p.stderr)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("server exit: %v\n%s", err, p.stderr)
		}
	}
	return p.stderr.String()
}

// wait waits until the process has exited and its stderr is read.
func (p *process) wait() {
	<-p.done
	if p.cmd.ProcessState == nil {
		p.cmd.Wait()
	}
}

// do sends a request with the API key key.
func (p *process) do(method, path, body, key string) (*http.Response, error) {
	req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-API-Key", key)
	return http.DefaultClient.Do(req)
}

func (p *process) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait()
	}
}

// TestDurability checks decisions §8: a write that got a 2xx survives the
// process being killed with SIGKILL right after.
func TestDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "durable.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
	for name, database := range stores {
		t.Run(name, func(t *testing.T) {
			db := "RESOURCEAPI_DATABASE_URL=" + database(t)
			srv := mustStart(t, db)
			key := srv.Key
			if key == "" {
				t.Fatalf("the first start printed no API key:\n%s", srv.stderr)
			}

			const writers, perWriter = 8, 40
			var mu sync.Mutex
			acked := map[int64]string{}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						email := fmt.Sprintf("durable-%d-%d@example.com", w, i)
						body := fmt.Sprintf(`{"name":"Durable %d %d","email":%q}`, w, i, email)
						resp, err := srv.do("POST", "/api/users", body, key)
						if err != nil {
							t.Errorf("POST: %v", err)
							return
						}
						var u struct{ ID int64 }
						err = json.NewDecoder(resp.Body).Decode(&u)
						resp.Body.Close()
						if resp.StatusCode != http.StatusCreated || err != nil {
							t.Errorf("POST status = %d (%v), want 201", resp.StatusCode, err)
							return
						}
						mu.Lock()
						acked[u.ID] = email
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			srv.kill() // SIGKILL: no shutdown, no checkpoint, no flush
			if t.Failed() {
				t.FailNow()
			}

			srv = mustStart(t, db)
			for id, email := range acked {
				resp, err := srv.do("GET", fmt.Sprintf("/api/users/%d", id), "", key)
				if err != nil {
					t.Fatal(err)
				}
				var u struct{ Email string }
				err = json.NewDecoder(resp.Body).Decode(&u)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || err != nil || u.Email != email {
					t.Errorf("after SIGKILL, user %d: status %d, email %q, want 200 and %q", id, resp.StatusCode, u.Email, email)
				}
			}
			if got, want := len(acked), writers*perWriter; got != want {
				t.Errorf("acknowledged %d creates, want %d", got, want)
			}
		})
	}
}
