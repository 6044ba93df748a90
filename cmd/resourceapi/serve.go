package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	"github.com/resourceapi/resourceapi/graph"
	"github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/metrics"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/tracing"
)

// store is what the program needs of a database: resources, identities,
// the authorization server's state, settings, and connections to release.
type store interface {
	resourceapi.Store
	resourceapi.IdentityStore
	resourceapi.FirstCreator
	resourceapi.OAuthStore
	resourceapi.SettingStore
	resourceapi.Outbox
	resourceapi.EventLog
	Close() error
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return withTraceIDs(cfg, h)
}

// newAccessLogger is newLogger for the access log: the same lines, written
// by the access log's own formatter where it can stand for slog's handler
// (http.NewAccessLogHandler), that is unless trace ids are added to them.
func newAccessLogger(cfg config, w io.Writer) *slog.Logger {
	h := http.NewAccessLogHandler(w, &slog.HandlerOptions{Level: cfg.LogLevel}, cfg.LogFormat == "json")
	return withTraceIDs(cfg, h)
}

// withTraceIDs is the logger of h, whose lines carry their request's trace
// and span ids when tracing is on.
func withTraceIDs(cfg config, h slog.Handler) *slog.Logger {
	if tracing.Enabled(cfg.otel) {
		// A request's lines carry its trace and span ids.
		h = tracing.LogHandler(h)
	}
	return slog.New(h)
}

// openStore opens and migrates the configured database. log receives the
// store's warnings (a database outage).
func openStore(ctx context.Context, cfg config, log *slog.Logger, tr *tracer) (store, error) {
	if cfg.postgres() {
		return postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{Logger: log, Trace: tr.statement("postgresql"),
			Solo: cfg.PostgresSolo})
	}
	sync := sqlite.SyncFull
	if cfg.SQLiteSync == "normal" {
		sync = sqlite.SyncNormal
	}
	cache := cfg.SQLiteCache
	if cache == 0 {
		cache = -1 // sqlite.Options: negative turns the cache off
	}
	return sqlite.Open(ctx, cfg.sqlitePath(), sqlite.Options{Sync: sync, CacheRecords: cache, Trace: tr.statement("sqlite")})
}

var serveCommand = &command{
	name:    "serve",
	summary: "run the server (the default command)",
	about: `Run the server until SIGINT or SIGTERM: REST under /api, GraphQL at
/graphql, the OAuth 2.0 server under /oauth, on RESOURCEAPI_ADDR (:8080).

On a database without an admin (the first start) it creates the first admin
user and prints, once, to stderr, its email, password (generated unless
RESOURCEAPI_ADMIN_PASSWORD is set) and an API key. It creates a SQLite
database that does not exist, with its directory, and brings the schema
up to date. It takes no flags or arguments: the configuration comes from
RESOURCEAPI_* environment variables.`,
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, e *invocation, args []string) error {
			cfg, err := loadConfig(e.getenv)
			if err != nil {
				return err
			}
			return serve(ctx, cfg, e.stderr)
		}
	},
}

var migrateCommand = &command{
	name:    "migrate",
	summary: "create the database or bring its schema up to date, and exit",
	about: `Create the database (a SQLite file and its directory) if it does not exist,
bring its schema up to date, and exit. serve does the same when it starts;
migrate lets a deployment do it as a separate step. It refuses a SQLite file
that a server holds: stop the server first.`,
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, e *invocation, args []string) error {
			cfg, err := loadConfig(e.getenv)
			if err != nil {
				return err
			}
			return migrate(ctx, cfg, e.stderr)
		}
	},
}

func migrate(ctx context.Context, cfg config, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	var err error
	if cfg.postgres() {
		err = postgres.Migrate(ctx, cfg.DatabaseURL)
	} else {
		err = sqlite.Migrate(ctx, cfg.sqlitePath())
	}
	if err != nil {
		return err
	}
	log.Info("database schema is up to date", "database", cfg.describeDatabase())
	return nil
}

// testHookServing, set only by tests, is given the instance's events as
// serve starts, as a subscriber (GraphQL) is.
var testHookServing func(resourceapi.Events)

func serve(ctx context.Context, cfg config, stderr io.Writer) error {
	// Everything serve writes to stderr goes through one writer, so that the
	// lines of the main logger and of the buffered access log never splice.
	out := newLogWriter(stderr, logBufferSize, flushInterval)
	defer out.Close()
	stderr = out.Unbuffered()
	log := newLogger(cfg, stderr)
	b := readBuild()
	log.Info("starting", "version", b.String(), "database", cfg.describeDatabase())
	// Everything that can fail comes before the first admin is created and
	// its password and key printed "once": the admin's settings, the
	// address, the database, Redis. Only then does bootstrapAdmin run.
	firstAdmin, err := firstAdminRecord(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (RESOURCEAPI_ADDR): %w", cfg.Addr, err)
	}
	defer ln.Close()
	metricsLn, err := listenMetrics(cfg)
	if err != nil {
		return err
	}
	tr, err := startTracing(ctx, cfg, b.String(), log)
	if err != nil {
		return err
	}
	if tr != nil {
		defer tr.stop()
	}
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	db, err := openStore(ctx, cfg, log, tr)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("close database", "err", err)
		}
	}()
	hasher := argon2id.New()
	service := resourceapi.NewService(db, hasher)
	if tr != nil {
		service.SetTracer(tr.Service)
	}
	id, err := newIdentity(ctx, cfg, db, hasher, log)
	if err != nil {
		return err
	}
	defer id.Close()
	tr.redis(id.redis)
	// A change of one's own password or email is confirmed with the
	// current password, checked as a sign-in is (throttled).
	service.SetAuthenticator(id.auth)
	service.SetIdempotencyRetention(cfg.IdempotencyRetention)
	// Deferred after the identity and the database, so that it runs before
	// their Close: the relay's last round needs both.
	ev, err := startEvents(ctx, cfg, db, id.redis, log, tr.publish())
	if err != nil {
		return err
	}
	defer ev.Close()
	// events is what subscriptions read (GraphQL: the graph handler's
	// resourceapi.Events). Its subscriptions close when serve returns.
	var events resourceapi.Events = ev.hub
	// Webhooks: the rule layer's settings, and the worker that delivers
	// from the outbox, stopped before the events and the database close.
	setWebhookPolicy(cfg, service)
	defer startWebhooks(ctx, cfg, db, service, events, log)()
	if testHookServing != nil {
		testHookServing(events)
	}

	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = newAccessLogger(cfg, out)
	}
	// The sign-in form's CSRF key, like the JWT secret, is generated once
	// and kept in the database, so that every instance accepts the forms
	// another served.
	csrfKey, err := db.Setting(ctx, "oauth_csrf_key", rand.Text()+rand.Text())
	if err != nil {
		return err
	}
	// List cursors are signed with a key kept there too, so that a cursor
	// from one instance is accepted by every other.
	cursorKey, err := db.Setting(ctx, "list_cursor_key", rand.Text()+rand.Text())
	if err != nil {
		return err
	}
	authServer := oauth.NewServer(oauth.Config{
		Store:   db,
		Auth:    id.auth,
		Tokens:  id.tokens,
		Issuer:  cfg.OAuthIssuer,
		Logger:  log,
		CSRFKey: []byte(csrfKey),
		ClientIP: func(r *nethttp.Request) string {
			return http.ClientAddr(r, cfg.TrustedProxies).String()
		},
		RefreshReuseGrace: cfg.RefreshGrace,
	})
	// The measurements, when on, are taken by the transports' hooks.
	var m *metrics.Metrics
	var observeOperation func(string, string, time.Duration)
	var observer http.Observer
	var metricsPage nethttp.Handler
	if cfg.Metrics {
		m = metrics.New()
		observeOperation, observer, metricsPage = m.Operation, m, m.Handler()
	}
	gql := graph.New(graph.Options{
		Service:         service,
		ParseCredential: http.ParseCredential,
		ParseListQuery:  http.ParseListQuery,
		Events:          events,
		Logger:          log,
		RequestID:       http.RequestID,
		ClientIP: func(r *nethttp.Request) string {
			return http.ClientAddr(r, cfg.TrustedProxies).String()
		},
		Version: b.String(),
		Origins: cfg.CORSOrigins,
		WebSocket: graph.WebSocketOptions{
			MaxPerCaller: noCapIfZero(cfg.WSMaxPerUser),
			MaxPerAddr:   noCapIfZero(cfg.WSMaxPerAddr),
		},

		MaxResponseBytes: cfg.GraphQLMaxResponseBytes,
		MaxRecords:       cfg.GraphQLMaxRecords,
		Observe:          observeOperation,
		Trace:            tr.operation(),
	})
	if m != nil {
		watchMetrics(m, db, id, ev, gql)
	}
	// The relay and the Redis stream's follower hand the hub a batch only
	// once the subscription connections can take it.
	ev.hub.SetPacer(gql.Ready)
	api := http.NewServer(http.Config{
		Service:        service,
		RateLimiter:    id.limiter,
		TrustedProxies: cfg.TrustedProxies,
		OAuth:          authServer.Handler(),
		GraphQL:        gql,
		Logger:         log,
		AccessLog:      accessLog,
		Vendor:         cfg.Vendor,
		CORSOrigins:    cfg.CORSOrigins,
		Observer:       observer,
		Trace:          tr.request(),
		Version:        b.String(),
		Metrics:        metricsPage,
		// Server-Sent Events, under the caps of subscription connections.
		EventStream: &http.EventStreamConfig{Events: events, Log: db,
			MaxPerCaller: noCapIfZero(cfg.WSMaxPerUser), MaxPerAddr: noCapIfZero(cfg.WSMaxPerAddr)},
		CursorKey: []byte(cursorKey),
	})
	// Long-lived requests (subscriptions) watch baseCtx: it ends after the
	// graceful shutdown has let ordinary requests finish.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &nethttp.Server{
		Handler:           crashHook(api.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// net/http does not track hijacked connections: the subscriptions'
	// are closed when the shutdown begins.
	srv.RegisterOnShutdown(gql.Shutdown)
	if err := bootstrapAdmin(ctx, cfg, firstAdmin, service, hasher, stderr, log); err != nil {
		return err
	}
	if metricsLn != nil {
		msrv := metricsServer(m, log)
		go msrv.Serve(metricsLn) //nolint:errcheck // ends with Close below
		defer msrv.Close()
		log.Info("metrics listening", "addr", metricsLn.Addr().String())
	}
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.describeDatabase(), "version", b.String())
	logURLs(log, ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	cancelBase()
	if err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, nethttp.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// noCapIfZero maps a setting's 0 (no cap) to graph's negative.
func noCapIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
