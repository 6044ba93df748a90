package http

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// Config is what a Server is made from. Service is required; the rest have
// defaults.
type Config struct {
	// Service is the rule layer every request goes through; it also
	// authenticates the credentials the server reads (Service.Authenticate:
	// without an Authenticator every credential is refused).
	Service *resourceapi.Service
	// RateLimiter, when set, limits requests under /api, /graphql and /oauth
	// per caller (user id, else client address); nil serves them unlimited
	// and without rate-limit headers.
	RateLimiter resourceapi.RateLimiter
	// TrustedProxies are the addresses whose X-Forwarded-For is believed
	// when finding a request's client address (for rate limits and password
	// throttling); none by default, so the peer address is the client.
	TrustedProxies []netip.Prefix
	// OAuth, when set, serves /oauth/ and
	// /.well-known/oauth-authorization-server (package oauth).
	OAuth http.Handler
	// GraphQL, when set, serves /graphql and everything under it (package
	// graph). Its requests carry the caller of their credential, if any
	// (resourceapi.CallerFrom), or why the credential was refused
	// (resourceapi.CredentialErrorFrom): a request without one is not
	// refused here, as some fields are public.
	GraphQL http.Handler
	// Logger receives every error a client only sees as INTERNAL, with its
	// cause; nil discards them.
	Logger *slog.Logger
	// Vendor names the API in its media types,
	// application/vnd.<vendor>.v<N>+json; default "example".
	Vendor string
	// CORSOrigins are the origins (scheme://host[:port]) whose scripts may
	// call the API; "*" allows any. None by default.
	CORSOrigins []string
	// AccessLog, when set, receives one line per request. It is separate from
	// Logger so that it can be buffered: a write per request would cost the
	// server a third of its throughput.
	AccessLog *slog.Logger
	// MaxBodyBytes bounds request bodies; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Observer, when set, is told of every request, rate-limit refusal and
	// refused credential (package metrics).
	Observer Observer
	// Trace, when set, is called as every request starts: the request
	// runs in the context it returns, and the function it returns is
	// called with the route label (as Observer's) and the status once the
	// request is answered (package tracing: a span per request).
	Trace func(r *http.Request) (context.Context, func(route string, status int))
	// Version is the server's version, shown by the front page (GET /)
	// and as the OpenAPI document's info.version.
	Version string
	// Metrics, when set, is served at GET /metrics to an admin or a caller
	// granted metrics:read (package metrics's handler).
	Metrics http.Handler
	// EventStream, when set, serves GET /api/events (events.go).
	EventStream *EventStreamConfig
	// CursorKey signs the cursors of list pages (see Cursors). Instances
	// that serve the same database must share it; when empty, a random
	// key is used, and only this server accepts its cursors.
	CursorKey []byte
}

// Server is the REST API over one store. Its Handler is safe for concurrent
// use.
type Server struct {
	service        *resourceapi.Service
	store          resourceapi.Store
	limiter        resourceapi.RateLimiter
	debts          debts // what callers owe their limiter budget (ratelimit.go)
	trustedProxies []netip.Prefix
	oauth          http.Handler
	graphql        http.Handler
	logger         *slog.Logger
	vendor         string
	corsOrigins    []string
	accessLog      *slog.Logger
	maxBody        int64
	observer       Observer
	tracer         func(r *http.Request) (context.Context, func(route string, status int))
	metrics        http.Handler
	version        string
	events         *eventStreams
	cursors        *Cursors

	ids     *idGenerator
	handler http.Handler
	// serveMux is the router, which observe asks for the route of a request
	// answered before it.
	serveMux *http.ServeMux
	// table is the route list the handler serves, and openapi the document
	// generated from it.
	table   []route
	openapi *asset
}

// NewServer returns a Server for cfg. It panics when cfg.Service is nil,
// which is a wiring error.
func NewServer(cfg Config) *Server {
	if cfg.Service == nil {
		panic("http.NewServer: Config.Service is nil")
	}
	s := &Server{
		service:        cfg.Service,
		store:          cfg.Service.Store(),
		limiter:        cfg.RateLimiter,
		trustedProxies: cfg.TrustedProxies,
		oauth:          cfg.OAuth,
		graphql:        cfg.GraphQL,
		logger:         cfg.Logger,
		vendor:         strings.ToLower(cfg.Vendor),
		corsOrigins:    cfg.CORSOrigins,
		accessLog:      cfg.AccessLog,
		maxBody:        cfg.MaxBodyBytes,
		observer:       cfg.Observer,
		tracer:         cfg.Trace,
		metrics:        cfg.Metrics,
		version:        cfg.Version,
		ids:            newIDGenerator(),
		cursors:        NewCursors(cfg.CursorKey),
	}
	if cfg.EventStream != nil {
		s.events = newEventStreams(*cfg.EventStream)
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.vendor == "" {
		s.vendor = "example"
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	s.table = s.routes()
	doc, err := newOpenAPI(s.table, openAPIContext{vendor: s.vendor, oauth: s.oauth != nil,
		limited: s.limiter != nil, maxBody: s.maxBody, version: s.version})
	if err != nil {
		panic(err) // the declarations hold something the generator cannot describe
	}
	s.openapi = newAsset(doc, "application/json")
	s.handler = s.middleware(s.mux(s.table))
	return s
}

// Handler returns the http.Handler that serves the API, /healthz, /readyz,
// the OpenAPI document and the documentation page.
func (s *Server) Handler() http.Handler { return s.handler }

// middleware wraps the routes in the chain every request passes through,
// outermost first:
//
//   - requestID, so that everything after it, even a panic, can name the
//     request;
//   - trace (with Config.Trace), so that everything after it, the access
//     log included, runs in the request's span;
//   - observe (with an Observer), which measures every request as answered;
//   - logAccess, which sees the final status, the 500 of a panic included;
//   - recoverPanics, which can then still answer with CORS and API-Version
//     headers, set before the panic, and in the negotiated error format;
//   - cors, so that browsers can read error responses too;
//   - negotiateVersion, before anything that can write an error;
//   - compress, around everything that writes a body;
//   - rateLimit, which identifies the caller of /api and /graphql requests
//     (identify) to key their budget, and sets the rate-limit headers of
//     every response under /api, /graphql and /oauth.
//
// The /api routes then refuse requests without a valid credential
// (requireCaller, in routes.go).
func (s *Server) middleware(h http.Handler) http.Handler {
	h = s.rateLimit(h)
	h = s.compress(h)
	h = s.negotiateVersion(h)
	h = s.cors(h)
	h = s.recoverPanics(h)
	if s.accessLog != nil {
		h = s.logAccess(h)
	}
	if s.observer != nil {
		h = s.observe(h)
	}
	if s.tracer != nil {
		h = s.trace(h)
	}
	return s.requestID(h)
}

// healthz answers 200 while the process runs, for liveness probes.
func (s *Server) healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = noStore
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
}

// readyTimeout bounds the database ping of a readiness probe, so a stuck
// database fails the probe instead of hanging it.
const readyTimeout = 2 * time.Second

// readyz answers 200 when the database answers, else 503 UNAVAILABLE, for
// readiness probes and load balancers.
func (s *Server) readyz() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			// The client sees only the *Error; the log gets the cause too.
			return fmt.Errorf("%w: %w", resourceapi.Errorf(resourceapi.CodeUnavailable, "The database is not reachable"), err)
		}
		w.Header()["Cache-Control"] = noStore
		writeJSON(w, http.StatusOK, []byte(`{"status":"ready"}`))
		return nil
	})
}
