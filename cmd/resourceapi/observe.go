package main

import (
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	"github.com/resourceapi/resourceapi/metrics"
)

// watchMetrics registers with m what is read at each scrape: the
// subscription connections, the relay, the outbox, the caches and the
// database pools.
func watchMetrics(m *metrics.Metrics, db store, id *identity, ev *events, gql *graph.Handler) {
	m.WebSockets(func() int { open, _, _ := gql.Connections(); return open }, gql.Subscriptions)
	if ev.relay != nil {
		m.Relay(ev.relay.Published)
	}
	if o, ok := db.(resourceapi.OutboxStater); ok {
		m.Outbox(o)
	}
	sources := []func() []resourceapi.CacheStats{id.auth.Caches, gql.Caches}
	if c, ok := db.(interface {
		Caches() []resourceapi.CacheStats
	}); ok {
		sources = append(sources, c.Caches)
	}
	m.Caches(sources...)
	if p, ok := db.(interface {
		Pools() map[string]func() sql.DBStats
	}); ok {
		for name, pool := range p.Pools() {
			m.DB(name, pool)
		}
	}
}

// metricsServer serves m at /metrics, without a credential, on the
// listener of RESOURCEAPI_METRICS_ADDR: for a scraper on a private network.
func metricsServer(m *metrics.Metrics, log *slog.Logger) *nethttp.Server {
	mux := nethttp.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &nethttp.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// listenMetrics opens the metrics listener, or returns nil when none is
// configured.
func listenMetrics(cfg config) (net.Listener, error) {
	if cfg.MetricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (RESOURCEAPI_METRICS_ADDR): %w", cfg.MetricsAddr, err)
	}
	return ln, nil
}

// logURLs names the server's pages for people, at the address it listens on
// (a wildcard address as localhost).
func logURLs(log *slog.Logger, addr net.Addr) {
	host := addr.String()
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		host = net.JoinHostPort("localhost", strconv.Itoa(a.Port))
	}
	base := "http://" + host
	log.Info("urls", "home", base+"/", "docs", base+"/docs", "graphiql", base+"/graphql",
		"oauth_metadata", base+"/.well-known/oauth-authorization-server", "health", base+"/healthz", "ready", base+"/readyz")
}
