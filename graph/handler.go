// Package graph serves the GraphQL interface at /graphql (gqlgen,
// schema-first): queries and mutations over HTTP (GET and POST, per the
// GraphQL-over-HTTP specification), subscriptions over WebSocket (both the
// graphql-transport-ws and the legacy graphql-ws subprotocols), the schema
// at /graphql/schema.graphql, and GraphiQL for browsers. Its resolvers are
// thin: they call the rule layer (resourceapi.Service) with the request's
// caller, which package http puts in the context. See docs/graphql.md.
package graph

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/resourceapi/resourceapi"
)

// Defaults of Options's limits.
const (
	DefaultMaxQueueBytes    = 16 << 20
	DefaultMaxPerCaller     = 64
	DefaultMaxPerAddr       = 256
	DefaultComplexityLimit  = 1000
	DefaultMaxFields        = 1000
	DefaultMaxIntrospection = 10000
	DefaultMaxDepth         = 15
	DefaultMaxRecords       = 20000
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxQueryBytes    = 32 << 10
	DefaultMaxTokens        = 15000
	DefaultQueryCacheSize   = 1000
)

// Options is what a Handler is made from. Service is required.
type Options struct {
	// Service is the rule layer every field goes through.
	Service *resourceapi.Service
	// ParseCredential reads a credential from the values of the X-API-Key
	// and Authorization headers, or of the same keys of a WebSocket
	// connection_init payload (http.ParseCredential); the Service then
	// authenticates it (Service.Session). Without it, a connection_init
	// credential is refused and a connection runs as the caller package
	// http found on the upgrade request, unconfirmed.
	ParseCredential func(apiKey, authorization []string) (resourceapi.Credential, error)
	// ParseListQuery reads the list parameters of a request of REST
	// (http.ParseListQuery); the page fields of the declared resources
	// (usersPage, Article.comments...) hand it their arguments, which are
	// those parameters by the same names, so that a page follows the same
	// rules over both. Without it page fields fail with UNAVAILABLE.
	ParseListQuery func(*resourceapi.Resource, url.Values) (resourceapi.ListQuery, error)
	// Events delivers the committed writes subscriptions report; without
	// it subscriptions fail with UNAVAILABLE.
	Events resourceapi.Events
	// Logger receives the errors clients see only as internal; nil
	// discards them.
	Logger *slog.Logger
	// RequestID returns the id of the request a context belongs to, for
	// the log lines of internal errors (http.RequestID).
	RequestID func(context.Context) string
	// ClientIP returns the client address of a request, for the throttling
	// of password guesses in connection_init (http.ClientAddr).
	ClientIP func(*http.Request) string
	// Version is what adminData reports.
	Version string
	// Origins are the origins, besides the server's own, whose pages may
	// open a subscription WebSocket (the CORS origins); "*" allows any.
	Origins []string

	// ComplexityLimit is the most a document may cost (default 1000): each
	// field costs 1 plus its children, and a list field multiplies its
	// children by its limit argument, or by 10 without one. Introspection
	// is priced by MaxIntrospection instead.
	ComplexityLimit int
	// MaxFields bounds the selections (fields, fragment spreads, inline
	// fragments) of a document's operations once their fragments are
	// expanded, each spread counted as often as it is used (default 1000).
	// It is checked before validation; see documentLimit.
	MaxFields int
	// MaxIntrospection bounds the fields (and list elements) that the
	// introspection of an operation answers, counted exactly from the
	// schema before it runs (default 10000; the standard introspection
	// query of GraphiQL and client generators answers about 1,500).
	MaxIntrospection int
	// MaxDepth bounds how deeply selections nest (default 15), introspection
	// aside.
	MaxDepth int
	// MaxRecords bounds the records one response reads from the store
	// (default 20000), and MaxResponseBytes the encoded response (default
	// 4 MiB): every response (of a request, or of a subscription's event)
	// is counted as it is produced and stopped once it would pass either,
	// with RECORD_LIMIT_EXCEEDED or RESPONSE_TOO_LARGE (see budget.go).
	MaxRecords       int
	MaxResponseBytes int64
	// MaxBodyBytes bounds a POST body (default 1 MiB); MaxQueryBytes the
	// query document in it (default 32 KiB), and MaxTokens its tokens
	// (default 15000: a last guard for the parser; the limits above refuse
	// any document of that size that would cost more than it looks).
	MaxBodyBytes  int64
	MaxQueryBytes int
	MaxTokens     int
	// QueryCacheSize is how many parsed and validated documents are kept,
	// least recently used first out (default 1000; only documents of at
	// most 4 KiB are kept).
	QueryCacheSize int
	// UsersCacheTTL is the longest a response of users is kept (default
	// 60 s; negative: no cache), and UsersCacheBytes how many bytes of them
	// (default 16 MiB). Only a store that implements resourceapi.Versioner
	// (SQLite) gets the cache; see usercache.go and docs/graphql.md.
	UsersCacheTTL   time.Duration
	UsersCacheBytes int
	// WebSocket holds the limits of subscription connections.
	WebSocket WebSocketOptions
	// Observe, when set, is told of every operation once (package
	// metrics): its type (query, mutation, subscription, or unknown for a
	// document that did not parse), the code of its first error ("" for
	// none), and how long it took to its first response.
	Observe func(operation, code string, elapsed time.Duration)
	// Trace, when set, is called as every operation starts, with its type
	// and name: the operation runs in the context it returns, and the
	// function it returns is called with the code of its first error (""
	// for none) at its first response (package tracing: a span).
	Trace func(ctx context.Context, operation, name string) (context.Context, func(code string))
}

// WebSocketOptions holds the limits of subscription connections; zero values
// take the defaults.
type WebSocketOptions struct {
	// InitTimeout is how long a connection may take to send
	// connection_init (default 10 s); then it is closed with 4408.
	InitTimeout time.Duration
	// PingInterval is how often the server pings an idle connection
	// (default 25 s): a WebSocket ping, which the client must answer within
	// PingInterval, and for graphql-ws also a "ka" message.
	PingInterval time.Duration
	// WriteTimeout bounds each message the server sends (default 10 s); a
	// client that does not read in time is disconnected.
	WriteTimeout time.Duration
	// MaxMessageBytes bounds a client's message (default 64 KiB).
	MaxMessageBytes int64
	// MaxSubscriptions bounds the subscriptions open at once on one
	// connection (default 20).
	MaxSubscriptions int
	// MaxQueueBytes bounds the events waiting to be sent on one connection
	// (default 16 MiB, each event counted at its estimated size as if no
	// other connection shared it); past it the connection is closed with
	// 1008. It is the last guard: the sources of events wait for clients
	// that read (see pace.go), so only a client that stops reading gets near
	// it, and WriteTimeout closes that one first unless events are huge.
	MaxQueueBytes int64
	// MaxPerCaller bounds the connections one user holds open at once on
	// this instance (default 64; negative: no cap); past it connection_init
	// is answered by a close with 4429.
	MaxPerCaller int
	// MaxPerAddr bounds the connections open at once from one client
	// address (default 256; negative: no cap); past it the upgrade is
	// refused with 429.
	MaxPerAddr int
}

// Handler serves /graphql and what is under it. It is an http.Handler for
// package http's Config.GraphQL.
type Handler struct {
	cfg    Options
	logger *slog.Logger
	// exec is gqlgen's executor with graph's extensions: every operation,
	// over HTTP or WebSocket, runs through it (see serve).
	exec   *executor.Executor
	sdl    []byte
	assets http.Handler
	users  *usersCache // nil: no users cache (see usercache.go)
	conns  wsConns     // open subscription connections
	// writers send what subscription connections have queued.
	writers writers
	// renders shares renderings of events among subscriptions.
	renders renders
	// converted is the last event the hub handed to subscriptions, as
	// the GraphQL value they all receive (see converted).
	converted atomic.Pointer[sharedEvent]
	// pace is what Ready waits for (pace.go).
	pace pace
	// subscriptions counts the subscriptions open on every connection.
	subscriptions atomic.Int64
	// costs is the complexity limit, with the costs it keeps.
	costs *complexityLimit
	// fields keeps the fields collected from the cached documents
	// (fields.go).
	fields *fieldsCache
	// root is the resolvers gqlgen calls, which the fast path (fast.go)
	// calls too; observer is the operation middleware, nil without
	// Options.Observe and Options.Trace.
	root     *resolver
	observer *observer
	fast     fastState
	// fastRoots are the fields of Query the fast path answers.
	fastRoots map[string]*fastRoot
	// plans are the documents the fast path answered (fastPlan).
	plans fastPlans
}

//go:embed schema/*.graphqls
var schemaFiles embed.FS

//go:embed all:graphiql
var graphiqlFiles embed.FS

// New returns the handler for cfg. It panics when cfg.Service is nil, a
// wiring error.
func New(cfg Options) *Handler {
	if cfg.Service == nil {
		panic("graph.New: Options.Service is nil")
	}
	setDefaults(&cfg)
	h := &Handler{cfg: cfg, logger: cfg.Logger}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	h.sdl = schemaText()
	h.users = newUsersCache(cfg.Service, cfg.UsersCacheTTL, cfg.UsersCacheBytes)
	sub, err := fs.Sub(graphiqlFiles, "graphiql")
	if err != nil {
		panic(err)
	}
	h.assets = http.FileServerFS(sub)

	costs := complexity()
	h.root = &resolver{h}
	es := NewExecutableSchema(Config{Resolvers: h.root, Complexity: costs})
	h.fastRoots = fastRootsOf(es.Schema())
	srv := executor.New(es)
	cache := newQueryCache(cfg.QueryCacheSize)
	srv.SetQueryCache(cache)
	srv.SetParserTokenLimit(cfg.MaxTokens)
	srv.SetErrorPresenter(h.presenter)
	srv.SetRecoverFunc(h.recoverPanic)
	h.costs = newComplexityLimit(cfg.ComplexityLimit, costs, 2*cfg.QueryCacheSize)
	h.fields = newFieldsCache(2 * cfg.QueryCacheSize)
	h.plans.max = 2 * cfg.QueryCacheSize
	use := func(e graphql.HandlerExtension) {
		if _, ok := e.(graphql.FieldInterceptor); ok {
			panic(fmt.Sprintf("graph.New: %T is a field middleware, which fieldBudget would leave out", e))
		}
		srv.Use(e)
	}
	// The cost of a document is bounded before any resolver runs (see
	// limits.go): its expanded size before validation, then its
	// complexity, depth and introspection.
	use(documentLimit{max: cfg.MaxFields, tokens: cfg.MaxTokens, cache: cache})
	use(extension.Introspection{})
	use(h.costs)
	use(depthLimit{max: cfg.MaxDepth})
	use(introspectionLimit{max: cfg.MaxIntrospection, schema: es.Schema()})
	// What each response reads and holds is bounded as it runs (budget.go).
	// The fast path (fast.go) runs an operation within the same two
	// middlewares, in the same order: these are the only operation and
	// response middlewares.
	srv.AroundResponses(h.aroundResponse)
	if cfg.Observe != nil || cfg.Trace != nil {
		h.observer = &observer{observe: cfg.Observe, trace: cfg.Trace}
		use(*h.observer)
	}
	// Every field of every operation runs through aroundField (budget.go),
	// as the operation's only field middleware.
	use(fieldBudget{h.aroundField})
	h.exec = srv
	return h
}

func setDefaults(cfg *Options) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.ComplexityLimit, DefaultComplexityLimit)
	def(&cfg.MaxFields, DefaultMaxFields)
	def(&cfg.MaxIntrospection, DefaultMaxIntrospection)
	def(&cfg.MaxDepth, DefaultMaxDepth)
	def(&cfg.MaxRecords, DefaultMaxRecords)
	cfg.MaxRecords = max(cfg.MaxRecords, resourceapi.MaxLimit) // one page of a list
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	def(&cfg.MaxQueryBytes, DefaultMaxQueryBytes)
	def(&cfg.MaxTokens, DefaultMaxTokens)
	def(&cfg.QueryCacheSize, DefaultQueryCacheSize)
	if cfg.UsersCacheTTL == 0 {
		cfg.UsersCacheTTL = 60 * time.Second
	}
	def(&cfg.UsersCacheBytes, 16<<20)
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	ws := &cfg.WebSocket
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defd(&ws.InitTimeout, 10*time.Second)
	defd(&ws.PingInterval, 25*time.Second)
	defd(&ws.WriteTimeout, 10*time.Second)
	if ws.MaxMessageBytes <= 0 {
		ws.MaxMessageBytes = 64 << 10
	}
	def(&ws.MaxSubscriptions, 20)
	if ws.MaxQueueBytes <= 0 {
		ws.MaxQueueBytes = DefaultMaxQueueBytes
	}
	if ws.MaxPerCaller == 0 {
		ws.MaxPerCaller = DefaultMaxPerCaller
	}
	if ws.MaxPerAddr == 0 {
		ws.MaxPerAddr = DefaultMaxPerAddr
	}
}

// schemaText returns the schema's files as one document: the
// specification's (schema.graphqls) first, then the others (what
// internal/graphgen writes, which extends it) by name.
func schemaText() []byte {
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		panic(err)
	}
	slices.SortStableFunc(entries, func(a, b fs.DirEntry) int {
		return cmp.Compare(b2i(a.Name() != "schema.graphqls"), b2i(b.Name() != "schema.graphqls"))
	})
	var out []byte
	for _, e := range entries {
		b, err := fs.ReadFile(schemaFiles, "schema/"+e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, b...)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ServeHTTP implements http.Handler: /graphql (GraphQL over HTTP, the
// WebSocket upgrade, GraphiQL for browsers), /graphql/schema.graphql and
// GraphiQL's assets.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; {
	case path == "/graphql/schema.graphql":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.methodNotAllowed(w, "GET, HEAD, OPTIONS", r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(h.sdl)
		return
	case strings.HasPrefix(path, "/graphql/graphiql/"):
		h.serveAsset(w, r)
		return
	case path != "/graphql":
		writeRequestError(w, http.StatusNotFound, "application/json", "NOT_FOUND", "No such GraphQL endpoint; the API is at /graphql")
		return
	}
	switch r.Method {
	case http.MethodGet:
		if wantsHTML(r) && !isUpgrade(r) { // an upgrade goes to wsTransport

			h.serveGraphiQL(w, r)
			return
		}
		h.serve(w, r)
	case http.MethodPost:
		h.serve(w, r)
	default:
		h.methodNotAllowed(w, "GET, POST, OPTIONS", r)
	}
}

// serve runs a GET or POST of /graphql through gqlgen's executor, as
// gqlgen's handler.Server would with wsTransport and httpTransport as its
// transports: the operation's start time in the context
// (graphql.StartOperationTrace), the upgrade to wsTransport and anything
// else to httpTransport, and a panic that escapes either answered 500 with
// the error presented. httpTransport is handed the context rather than a
// copy of the request that holds it, and sets the start time itself once
// it has read the request, when it hands the operation to gqlgen (an
// operation of a fastPlan does not read it).
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if err := recover(); err != nil {
			err := h.exec.PresentRecoveredError(r.Context(), err)
			gqlErr, _ := err.(*gqlerror.Error)
			b, _ := json.Marshal(&graphql.Response{Errors: gqlerror.List{gqlErr}})
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(b)
		}
	}()
	if ws := (wsTransport{h}); ws.Supports(r) {
		ws.Do(w, r.WithContext(graphql.StartOperationTrace(r.Context())), h.exec)
		return
	}
	httpTransport{h}.do(r.Context(), w, r, h.exec)
}

func (h *Handler) methodNotAllowed(w http.ResponseWriter, allow string, r *http.Request) {
	w.Header().Set("Allow", allow)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeRequestError(w, http.StatusMethodNotAllowed, "application/json", "METHOD_NOT_ALLOWED", "Method not allowed; use "+allow)
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// wantsHTML reports whether a GET comes from a browser navigating to
// /graphql (Accept names text/html), which gets GraphiQL.
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}
