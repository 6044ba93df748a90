// Package metrics measures the server for Prometheus
// (github.com/prometheus/client_golang): HTTP requests by route pattern,
// method and status with their durations, GraphQL operations, WebSocket
// connections and subscriptions, the events outbox and its relay, rate-limit
// refusals, refused credentials, caches, database pools, and the Go runtime
// and process. The transports report through hooks of their own
// (http.Observer, graph.Options.Observe) that a *Metrics satisfies; cmd
// wires them. Nothing here is global: each Metrics has its own registry.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/resourceapi/resourceapi"
)

// namespace prefixes every metric of the service's own.
const namespace = "resourceapi"

// Metrics is one registry of the service's metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	rateLimited  prometheus.Counter
	authFailures *prometheus.CounterVec
	operations   *prometheus.CounterVec
	opDuration   *prometheus.HistogramVec

	// byRequest keeps the children of requests and duration for each
	// label set already seen, so that a request costs a map lookup rather
	// than two label validations, hashes and a status formatted. Its size
	// is that of the label sets, bounded by the methods, routes and
	// statuses the server answers with (see http.Observer).
	mu        sync.RWMutex
	byRequest map[requestLabels]requestMetrics
	// byOperation does the same for operations and opDuration, whose
	// label sets are bounded by the operation types and the error codes.
	byOperation map[operationLabels]requestMetrics
}

type operationLabels struct{ operation, code string }

type requestLabels struct {
	method, route string
	status        int
}

type requestMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// New returns a registry with the service's metrics and the Go runtime's and
// the process's collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:         reg,
		byRequest:   map[requestLabels]requestMetrics{},
		byOperation: map[operationLabels]requestMetrics{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "http",
			Name: "requests_total",
			Help: "HTTP requests answered, by method, route pattern (never the raw path) and status code."},
			[]string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "http",
			Name:    "request_duration_seconds",
			Help:    "How long HTTP requests took to answer, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
			[]string{"method", "route"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace,
			Name: "rate_limited_total", Help: "Requests refused with 429 by the rate limiter."}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace,
			Name: "auth_failures_total",
			Help: "Credentials refused, by scheme (api_key, bearer, basic, or malformed for a header that is none)."},
			[]string{"scheme"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "graphql",
			Name: "operations_total",
			Help: "GraphQL operations, by type (query, mutation, subscription; unknown when the document did not parse) and error code (OK for none)."},
			[]string{"operation", "code"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "graphql",
			Name:    "operation_duration_seconds",
			Help:    "How long GraphQL operations took to their first response, by type.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
			[]string{"operation"}),
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited, m.authFailures, m.operations, m.opDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for tests (prometheus/testutil) and for
// collectors of other parts.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Request implements http.Observer.
func (m *Metrics) Request(method, route string, status int, elapsed time.Duration) {
	k := requestLabels{method, route, status}
	m.mu.RLock()
	rm, ok := m.byRequest[k]
	m.mu.RUnlock()
	if !ok {
		rm = requestMetrics{m.requests.WithLabelValues(method, route, strconv.Itoa(status)),
			m.duration.WithLabelValues(method, route)}
		m.mu.Lock()
		m.byRequest[k] = rm
		m.mu.Unlock()
	}
	rm.count.Inc()
	rm.duration.Observe(elapsed.Seconds())
}

// RateLimited implements http.Observer.
func (m *Metrics) RateLimited() { m.rateLimited.Inc() }

// AuthFailed implements http.Observer.
func (m *Metrics) AuthFailed(scheme string) { m.authFailures.WithLabelValues(scheme).Inc() }

// Operation records a GraphQL operation (graph.Options.Observe): its type,
// the code of its first error ("" for none) and how long it took to its
// first response.
func (m *Metrics) Operation(operation, code string, elapsed time.Duration) {
	if code == "" {
		code = "OK"
	}
	k := operationLabels{operation, code}
	m.mu.RLock()
	om, ok := m.byOperation[k]
	m.mu.RUnlock()
	if !ok {
		om = requestMetrics{m.operations.WithLabelValues(operation, code), m.opDuration.WithLabelValues(operation)}
		m.mu.Lock()
		m.byOperation[k] = om
		m.mu.Unlock()
	}
	om.count.Inc()
	om.duration.Observe(elapsed.Seconds())
}

// WebSockets reports the open subscription connections and the
// subscriptions on them, read at each scrape.
func (m *Metrics) WebSockets(connections, subscriptions func() int) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "graphql",
			Name: "websocket_connections", Help: "Subscription WebSocket connections open."},
			func() float64 { return float64(connections()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "graphql",
			Name: "subscriptions", Help: "GraphQL subscriptions open."},
			func() float64 { return float64(subscriptions()) }))
}

// Relay reports how many events this process's relay has published.
func (m *Metrics) Relay(published func() int64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Subsystem: "events",
		Name: "published_total", Help: "Events this instance's relay has published."},
		func() float64 { return float64(published()) }))
}

// Outbox reports, at each scrape, what the events outbox holds: the events
// committed (by every process: the database's count), those not yet
// published, and the age of the oldest of them (the relay's lag).
func (m *Metrics) Outbox(o resourceapi.OutboxStater) {
	m.reg.MustRegister(&outboxCollector{o: o})
}

// DB reports a connection pool (use, waits), whose statistics stats reads
// at each scrape, as the go_sql_* metrics of database/sql's pools, labelled
// db_name=name. A pool of another driver (pgx's) gives its figures in
// database/sql's terms.
func (m *Metrics) DB(name string, stats func() sql.DBStats) {
	m.reg.MustRegister(newPoolCollector(name, stats))
}

// Caches reports the hits and misses of the caches of every source
// (labelled cache=name), read at each scrape. Call it once; names must
// differ.
func (m *Metrics) Caches(sources ...func() []resourceapi.CacheStats) {
	m.reg.MustRegister(&cacheCollector{sources: sources})
}

var (
	committedDesc = prometheus.NewDesc(namespace+"_events_committed_total",
		"Events committed to the outbox, by any process (the id of the last one).", nil, nil)
	pendingDesc = prometheus.NewDesc(namespace+"_events_unpublished",
		"Events committed and not yet published.", nil, nil)
	lagDesc = prometheus.NewDesc(namespace+"_events_oldest_unpublished_age_seconds",
		"Age of the oldest unpublished event: the relay's lag (0 when none waits).", nil, nil)
	scrapeErrDesc = prometheus.NewDesc(namespace+"_events_outbox_up",
		"1 when the outbox could be read at this scrape, else 0.", nil, nil)
	cacheHitsDesc = prometheus.NewDesc(namespace+"_cache_hits_total",
		"Cache lookups answered from the cache, by cache.", []string{"cache"}, nil)
	cacheMissesDesc = prometheus.NewDesc(namespace+"_cache_misses_total",
		"Cache lookups that went to the source, by cache.", []string{"cache"}, nil)
)

// outboxTimeout bounds the outbox's statements at a scrape.
const outboxTimeout = 2 * time.Second

type outboxCollector struct{ o resourceapi.OutboxStater }

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- committedDesc
	ch <- pendingDesc
	ch <- lagDesc
	ch <- scrapeErrDesc
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
	defer cancel()
	st, err := c.o.OutboxState(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(committedDesc, prometheus.CounterValue, float64(st.Last))
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(st.Pending))
	lag := 0.0
	if !st.Oldest.IsZero() {
		lag = max(time.Since(st.Oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag)
}

type cacheCollector struct {
	sources []func() []resourceapi.CacheStats
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheHitsDesc
	ch <- cacheMissesDesc
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.sources {
		for _, st := range src() {
			ch <- prometheus.MustNewConstMetric(cacheHitsDesc, prometheus.CounterValue, float64(st.Hits), st.Name)
			ch <- prometheus.MustNewConstMetric(cacheMissesDesc, prometheus.CounterValue, float64(st.Misses), st.Name)
		}
	}
}
