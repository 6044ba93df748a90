// Package redistest gives tests a client for the Redis server named by
// RESOURCEAPI_TEST_REDIS_URL and a key prefix of their own. That server is
// shared (with other tests, other packages, other people), so a test never
// flushes it: it writes only under its prefix, and its keys are deleted when
// it ends.
package redistest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi/redis"
)

// EnvURL names the variable that points the tests at a Redis server.
const EnvURL = "RESOURCEAPI_TEST_REDIS_URL"

// URL returns the server URL from EnvURL, skipping tb with a clear message
// when it is not set.
func URL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		tb.Skipf("Redis tests skipped: set %s (e.g. redis://127.0.0.1:6379/0) to run them", EnvURL)
	}
	return u
}

// NewClient returns a client for the server at EnvURL (skipping tb when it is
// unset), opened with redis.Open and closed when tb ends.
func NewClient(tb testing.TB) *goredis.Client {
	tb.Helper()
	u := URL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redis.Open(ctx, u)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Prefix returns a key prefix no other test uses, and deletes every key that
// contains it when tb ends (libraries may put their own prefix before it, as
// redis_rate does).
func Prefix(tb testing.TB, c *goredis.Client) string {
	tb.Helper()
	p := "resourceapi:test:" + strings.ToLower(rand.Text()[:16]) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The prefix is ours (base32 letters and digits): no glob characters.
		iter := c.Scan(ctx, 0, "*"+p+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("redistest: scan %s*: %v", p, err)
			return
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("redistest: delete %d keys under %s: %v", len(keys), p, err)
			}
		}
	})
	return p
}

// Server is a private redis-server that a test starts, stops and restarts
// (the shared one must never be), on a port of its own, without
// persistence: a restart empties it, as a Redis without persistence that
// restarts is.
type Server struct {
	// URL is the server's redis:// URL; it stays the same across restarts.
	URL  string
	tb   testing.TB
	bin  string
	port int
	cmd  *exec.Cmd
}

// StartServer starts a private redis-server, skipping tb with a clear
// message when the binary is not installed, and stops it when tb ends.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server is not installed: this test needs a private Redis it can stop and restart")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), tb: tb, bin: bin, port: port}
	s.Start()
	tb.Cleanup(s.Stop)
	return s
}

// Start starts the server (again), empty, and waits until it answers.
func (s *Server) Start() {
	s.tb.Helper()
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	var out strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("redistest: start redis-server: %v", err)
	}
	opts, _ := goredis.ParseURL(s.URL)
	c := goredis.NewClient(opts)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.tb.Fatalf("redistest: redis-server on port %d did not answer within 10s: %v\n%s", s.port, err, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would) and waits until it has exited.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}
