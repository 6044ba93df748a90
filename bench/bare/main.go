// Command bare is the baseline for load's get scenario: a net/http server
// that answers GET /api/users/{id} with one fixed user of about 200 bytes of
// JSON and does nothing else. What resourceapi costs on top of this (routing,
// middleware, authentication, the database, encoding) is the difference
// between the two runs; what is left is the floor set by the machine, the
// loopback network, net/http and the load generator itself.
//
//	bare -addr 127.0.0.1:8081
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// user has the shape and size of a user as resourceapi shows it.
const user = `{"id":42,"name":"User 00042","email":"user00042@example.com","age":30,"roles":["user"],` +
	`"created_at":"2026-11-21T05:07:37.123Z","updated_at":"2026-11-21T05:07:37.123Z","deleted":false}`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "listen `address`")
	if err := fs.Parse(args); err != nil {
		return err
	}

	mux := http.NewServeMux()
	body := []byte(user)
	mux.HandleFunc("GET /api/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// The same timeouts a production server sets; they cost nothing per
	// request and keep the comparison fair.
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	fmt.Fprintf(stderr, "bare: listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
