package http

import (
	"net/http"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Observer receives what the server measures: every request once it is
// answered, each refusal of the rate limiter, and each credential refused.
// Package metrics implements it; cmd hands it over (Config.Observer). Its
// methods are called from many goroutines at once and must not block.
type Observer interface {
	// Request reports an answered request: its method (one of the
	// standard methods, else "OTHER"), the route pattern that served it
	// ("/api/users/{id}", never the raw path; "unmatched" when no route
	// did), the status sent (0 when none was, such as a WebSocket
	// upgrade), and how long it took.
	Request(method, route string, status int, elapsed time.Duration)
	// RateLimited reports a request refused with 429 by the rate limiter.
	RateLimited()
	// AuthFailed reports a credential refused: scheme is "api_key",
	// "bearer", "basic", or "malformed" for a header that is not one.
	AuthFailed(scheme string)
}

// unmatched is the route label of a request no route served (404, a 405, a
// preflight, or one refused before routing for a path without a route).
const unmatched = "unmatched"

// observe reports every request to the observer once it is answered. It
// runs inside requestID, so the request's shared state (the route pattern
// that routeErrors records) is there to read.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		infoFrom(r).start = start // the access log's start too (logAccess)
		sw := trackStatus(w, r)
		defer func() {
			s.observer.Request(methodLabel(r.Method), s.routeOf(r), sw.status, time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

// routeOf returns the route label of a request once it is answered.
func (s *Server) routeOf(r *http.Request) string {
	info := infoFrom(r)
	pattern := info.pattern
	if !info.routed {
		// Answered before the router (a 429): find the route the
		// request would have had.
		_, pattern = s.serveMux.Handler(r)
	}
	return routeLabel(pattern)
}

// trace runs every request in the context Config.Trace gives it (a span),
// and ends it with the request's route and status once answered.
func (s *Server) trace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, end := s.tracer(r)
		r = r.WithContext(ctx)
		sw := trackStatus(w, r)
		defer func() { end(s.routeOf(r), sw.status) }()
		next.ServeHTTP(sw, r)
	})
}

// routeLabel turns a ServeMux pattern ("GET /api/users/{id}") into the
// route label: its path.
func routeLabel(pattern string) string {
	if pattern == "" {
		return unmatched
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// methodLabel bounds the method label to the standard methods: a client can
// send any token as a method.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// schemeLabel names a credential scheme for Observer.AuthFailed.
func schemeLabel(s resourceapi.Scheme) string {
	switch s {
	case resourceapi.SchemeAPIKey:
		return "api_key"
	case resourceapi.SchemeBearer:
		return "bearer"
	case resourceapi.SchemeBasic:
		return "basic"
	}
	return "malformed"
}

// metricsPage serves the metrics (Config.Metrics) to an admin or a caller
// granted metrics:read (resourceapi.MetricsRead); the rule is the
// Service's.
func (s *Server) metricsPage() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.service.Permit(r.Context(), resourceapi.CallerFrom(r.Context()), resourceapi.MetricsRead); err != nil {
			return err
		}
		w.Header()["Cache-Control"] = noStore
		s.metrics.ServeHTTP(w, r)
		return nil
	})
}
