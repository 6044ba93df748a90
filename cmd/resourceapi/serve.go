package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"runtime/debug"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	"github.com/resourceapi/resourceapi/graph"
	"github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/oauth"
	"github.com/resourceapi/resourceapi/postgres"
	"github.com/resourceapi/resourceapi/sqlite"
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
	Close() error
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStoreBeside opens the configured database for a management command,
// which may run beside a server (see sqlite.Options.Beside).
func openStoreBeside(ctx context.Context, cfg config) (store, error) {
	if cfg.postgres() {
		return postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: 2})
	}
	return sqlite.Open(ctx, cfg.sqlitePath(), sqlite.Options{Beside: true})
}

// openStore opens and migrates the configured database. log receives the
// store's warnings (a database outage).
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store, error) {
	if cfg.postgres() {
		return postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{Logger: log})
	}
	sync := sqlite.SyncFull
	if cfg.SQLiteSync == "normal" {
		sync = sqlite.SyncNormal
	}
	cache := cfg.SQLiteCache
	if cache == 0 {
		cache = -1 // sqlite.Options: negative turns the cache off
	}
	return sqlite.Open(ctx, cfg.sqlitePath(), sqlite.Options{Sync: sync, CacheRecords: cache})
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
	db, err := openStore(ctx, cfg, log)
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
	if err := bootstrapAdmin(ctx, cfg, service, stderr); err != nil {
		return err
	}
	id, err := newIdentity(ctx, cfg, db, hasher, log)
	if err != nil {
		return err
	}
	defer id.Close()
	// A change of one's own password or email is confirmed with the
	// current password, checked as a sign-in is (throttled).
	service.SetAuthenticator(id.auth)
	// Deferred after the identity and the database, so that it runs before
	// their Close: the relay's last round needs both.
	ev, err := startEvents(ctx, cfg, db, id.redis, log)
	if err != nil {
		return err
	}
	defer ev.Close()
	// events is what subscriptions read (GraphQL: the graph handler's
	// resourceapi.Events). Its subscriptions close when serve returns.
	var events resourceapi.Events = ev.hub
	if testHookServing != nil {
		testHookServing(events)
	}

	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = newLogger(cfg, out)
	}
	// The sign-in form's CSRF key, like the JWT secret, is generated once
	// and kept in the database, so that every instance accepts the forms
	// another served.
	csrfKey, err := db.Setting(ctx, "oauth_csrf_key", rand.Text()+rand.Text())
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
	gql := graph.New(graph.Options{
		Service:   service,
		Auth:      id.auth,
		Events:    events,
		Logger:    log,
		RequestID: http.RequestID,
		ClientIP: func(r *nethttp.Request) string {
			return http.ClientAddr(r, cfg.TrustedProxies).String()
		},
		Version: version(),
		Origins: cfg.CORSOrigins,
		WebSocket: graph.WebSocketOptions{
			MaxPerCaller: noCapIfZero(cfg.WSMaxPerUser),
			MaxPerAddr:   noCapIfZero(cfg.WSMaxPerAddr),
		},

		MaxResponseBytes: cfg.GraphQLMaxResponseBytes,
		MaxRecords:       cfg.GraphQLMaxRecords,
	})
	// The relay and the Redis stream's follower hand the hub a batch only
	// once the subscription connections can take it.
	ev.hub.SetPacer(gql.Ready)
	api := http.NewServer(http.Config{
		Service:        service,
		Auth:           id.auth,
		RateLimiter:    id.limiter,
		TrustedProxies: cfg.TrustedProxies,
		OAuth:          authServer.Handler(),
		GraphQL:        gql,
		Logger:         log,
		AccessLog:      accessLog,
		Vendor:         cfg.Vendor,
		CORSOrigins:    cfg.CORSOrigins,
	})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Long-lived requests (subscriptions) watch baseCtx: it ends after the
	// graceful shutdown has let ordinary requests finish.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &nethttp.Server{
		Handler:           api.Handler(),
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
	log.Info("listening", "addr", ln.Addr().String(), "database", cfg.describeDatabase())

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

// describeDatabase names the database for logs without its credentials.
func (c config) describeDatabase() string {
	if c.postgres() {
		return "postgres"
	}
	return "sqlite:" + c.sqlitePath()
}

// version returns the module version the binary was built from, or
// "(devel)" for a build from a work tree.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// noCapIfZero maps a setting's 0 (no cap) to graph's negative.
func noCapIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
