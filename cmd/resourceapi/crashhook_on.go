//go:build crashhook

package main

import (
	"net/http"
	"os"
	"syscall"
)

// crashHook, in a test build (-tags crashhook), kills the process with
// SIGKILL when a request that carries "X-Test-Crash: before-response" is
// about to be answered with a success: after its write committed, before a
// byte of the response is sent. Tests use it to show that a retry after such
// a crash finds the write and its idempotency key together.
func crashHook(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Crash") == "before-response" {
			w = &crashWriter{ResponseWriter: w}
		}
		h.ServeHTTP(w, r)
	})
}

type crashWriter struct {
	http.ResponseWriter
	wrote bool
}

func (c *crashWriter) WriteHeader(status int) {
	if c.wrote {
		return
	}
	c.wrote = true
	if status >= 200 && status < 300 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *crashWriter) Write(p []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}
