package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/graph"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/relay"
	"github.com/resourceapi/resourceapi/webhook"
)

// config is every setting of the program. It is read from the environment
// here and only here.
type config struct {
	Addr            string         // RESOURCEAPI_ADDR
	DatabaseURL     string         // RESOURCEAPI_DATABASE_URL: postgres://... or a SQLite path (see checkDatabaseURL)
	SQLiteSync      string         // RESOURCEAPI_SQLITE_SYNC: full or normal
	SQLiteCache     int            // RESOURCEAPI_SQLITE_CACHE: cache entries (records, list pages); 0 turns the cache off
	PostgresSolo    bool           // RESOURCEAPI_POSTGRES_SOLO: on or off; the record cache on PostgreSQL while this instance is the only writer
	AdminEmail      string         // RESOURCEAPI_ADMIN_EMAIL
	AdminEmailSet   bool           // RESOURCEAPI_ADMIN_EMAIL was set (not the default)
	AdminPassword   string         // RESOURCEAPI_ADMIN_PASSWORD
	Vendor          string         // RESOURCEAPI_API_VENDOR
	CORSOrigins     []string       // RESOURCEAPI_CORS_ORIGINS, comma-separated
	LogLevel        slog.Level     // RESOURCEAPI_LOG_LEVEL: debug, info, warn, error
	LogFormat       string         // RESOURCEAPI_LOG_FORMAT: text or json
	AccessLog       bool           // RESOURCEAPI_ACCESS_LOG
	ShutdownTimeout time.Duration  // RESOURCEAPI_SHUTDOWN_TIMEOUT
	JWTSecret       string         // RESOURCEAPI_JWT_SECRET: at least 32 bytes; else generated once and kept in the database
	RateLimit       int            // RESOURCEAPI_RATE_LIMIT: requests per window per caller; 0 disables
	RateWindow      time.Duration  // RESOURCEAPI_RATE_WINDOW
	RedisURL        string         // RESOURCEAPI_REDIS_URL: shared rate limits (and events) between instances
	TrustedProxies  []netip.Prefix // RESOURCEAPI_TRUSTED_PROXIES: comma-separated addresses or CIDR prefixes
	OAuthIssuer     string         // RESOURCEAPI_OAUTH_ISSUER: the authorization server's issuer URL; else derived from each request
	RefreshGrace    time.Duration  // RESOURCEAPI_OAUTH_REFRESH_REUSE_GRACE: how long a refresh token's reuse is taken for a client's race; 0, any reuse revokes

	GraphQLMaxResponseBytes int64 // RESOURCEAPI_GRAPHQL_MAX_RESPONSE_BYTES: the most one GraphQL response may hold; 0: the default
	GraphQLMaxRecords       int   // RESOURCEAPI_GRAPHQL_MAX_RECORDS: the most records one GraphQL response may read; 0: the default

	EventsRelay        bool          // RESOURCEAPI_EVENTS_RELAY: on or off; whether this instance publishes the outbox
	EventsPoll         time.Duration // RESOURCEAPI_EVENTS_POLL: how often the relay looks for events other processes committed
	EventsRetention    time.Duration // RESOURCEAPI_EVENTS_RETENTION: how long published events stay in the outbox
	EventsStream       string        // RESOURCEAPI_EVENTS_STREAM: the Redis stream's key
	EventsStreamLength int64         // RESOURCEAPI_EVENTS_STREAM_LENGTH: about how many events the Redis stream keeps

	WebhooksRetryPeriod  time.Duration // RESOURCEAPI_WEBHOOKS_RETRY_PERIOD: how long a webhook delivery is retried before it is dead-lettered
	IdempotencyRetention time.Duration // RESOURCEAPI_IDEMPOTENCY_RETENTION: how long Idempotency-Key responses are kept

	Metrics     bool   // RESOURCEAPI_METRICS: on or off; whether to measure the server (GET /metrics)
	MetricsAddr string // RESOURCEAPI_METRICS_ADDR: a listener serving /metrics without a credential, for a private network

	// OTel holds the standard OTEL_* variables that decide tracing (see
	// otelVariables); tracing is on when they name an OTLP endpoint.
	OTel map[string]string

	WebhooksDeliver      bool          // RESOURCEAPI_WEBHOOKS_DELIVER: whether this instance runs the webhook worker (fan-out, claims, attempts, housekeeping)
	WebhooksAllowHTTP    bool          // RESOURCEAPI_WEBHOOKS_ALLOW_HTTP: accept plain http endpoint URLs
	WebhooksAllowPrivate bool          // RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE: let deliveries reach loopback, private and link-local addresses
	WebhooksBackoff      time.Duration // RESOURCEAPI_WEBHOOKS_BACKOFF: the wait before the first retry (then doubled, with jitter)
	WebhooksBackoffMax   time.Duration // RESOURCEAPI_WEBHOOKS_BACKOFF_MAX: the longest wait between retries
	WebhooksTimeout      time.Duration // RESOURCEAPI_WEBHOOKS_TIMEOUT: one attempt's bound
	WebhooksLease        time.Duration // RESOURCEAPI_WEBHOOKS_LEASE: how long an instance holds a delivery it attempts
	WebhooksConcurrency  int           // RESOURCEAPI_WEBHOOKS_CONCURRENCY: attempts at once to one endpoint, per instance
	WebhooksOverlap      time.Duration // RESOURCEAPI_WEBHOOKS_ROTATION_OVERLAP: how long a rotated secret keeps signing

	WSMaxPerUser int // RESOURCEAPI_WS_MAX_PER_USER: subscription connections one user may hold on an instance; 0: no cap
	WSMaxPerAddr int // RESOURCEAPI_WS_MAX_PER_ADDR: subscription connections from one client address on an instance; 0: no cap
}

// defaultSQLitePath is where the embedded database lives when no database is
// configured.
const defaultSQLitePath = "./data/resourceapi.db"

func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		Addr:            ":8080",
		DatabaseURL:     defaultSQLitePath,
		SQLiteSync:      "full",
		SQLiteCache:     16384,
		PostgresSolo:    true,
		AdminEmail:      "admin@localhost",
		Vendor:          "example",
		LogFormat:       "text",
		AccessLog:       true,
		ShutdownTimeout: 30 * time.Second,
		RateLimit:       600,
		RateWindow:      time.Minute,

		EventsRelay:        true,
		Metrics:            true,
		EventsPoll:         relay.DefaultPoll,
		EventsRetention:    relay.DefaultRetention,
		EventsStream:       redis.DefaultStream,
		EventsStreamLength: redis.DefaultStreamLength,

		IdempotencyRetention: resourceapi.DefaultIdempotencyRetention,
		WebhooksDeliver:      true,
		WebhooksRetryPeriod:  webhook.DefaultBackoff.Period,
		WebhooksBackoff:      webhook.DefaultBackoff.First,
		WebhooksBackoffMax:   webhook.DefaultBackoff.Max,
		WebhooksTimeout:      webhook.DefaultTimeout,
		WebhooksLease:        webhook.DefaultLease,
		WebhooksConcurrency:  webhook.DefaultConcurrency,
		WebhooksOverlap:      24 * time.Hour,

		WSMaxPerUser: graph.DefaultMaxPerCaller,
		WSMaxPerAddr: graph.DefaultMaxPerAddr,
	}
	var errs []string
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	str("RESOURCEAPI_ADDR", &cfg.Addr)
	str("RESOURCEAPI_DATABASE_URL", &cfg.DatabaseURL)
	if why := checkDatabaseURL(cfg.DatabaseURL); why != "" {
		errs = append(errs, why)
	}
	str("RESOURCEAPI_ADMIN_EMAIL", &cfg.AdminEmail)
	cfg.AdminEmailSet = strings.TrimSpace(getenv("RESOURCEAPI_ADMIN_EMAIL")) != ""
	str("RESOURCEAPI_API_VENDOR", &cfg.Vendor)
	str("RESOURCEAPI_REDIS_URL", &cfg.RedisURL)
	cfg.AdminPassword = getenv("RESOURCEAPI_ADMIN_PASSWORD")
	if v := getenv("RESOURCEAPI_JWT_SECRET"); v != "" {
		if len(v) < 32 {
			errs = append(errs, "RESOURCEAPI_JWT_SECRET must be at least 32 bytes (for example: openssl rand -base64 48)")
		}
		cfg.JWTSecret = v
	}
	if v := getenv("RESOURCEAPI_RATE_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, "RESOURCEAPI_RATE_LIMIT must be a number of requests, 0 or more (0 disables rate limiting)")
		}
		cfg.RateLimit = n
	}
	if v := getenv("RESOURCEAPI_RATE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, "RESOURCEAPI_RATE_WINDOW must be a duration of at least 1s, such as 60s")
		}
		cfg.RateWindow = d
	}
	if v := getenv("RESOURCEAPI_TRUSTED_PROXIES"); v != "" {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			prefix, err := netip.ParsePrefix(p)
			if err != nil {
				addr, aerr := netip.ParseAddr(p)
				if aerr != nil {
					errs = append(errs, fmt.Sprintf("RESOURCEAPI_TRUSTED_PROXIES: %q is not an address or CIDR prefix", p))
					continue
				}
				prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
			}
			cfg.TrustedProxies = append(cfg.TrustedProxies, prefix.Masked())
		}
	}

	if v := strings.TrimSpace(getenv("RESOURCEAPI_OAUTH_ISSUER")); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, "RESOURCEAPI_OAUTH_ISSUER must be an absolute URL without query or fragment, such as https://api.example.com")
		}
		cfg.OAuthIssuer = strings.TrimSuffix(v, "/")
	}

	if v := strings.TrimSpace(getenv("RESOURCEAPI_OAUTH_REFRESH_REUSE_GRACE")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > resourceapi.MaxRefreshReuseGrace {
			errs = append(errs, "RESOURCEAPI_OAUTH_REFRESH_REUSE_GRACE must be a duration from 0s to 1m, such as 5s (0s: any reuse of a refresh token revokes its family)")
		}
		cfg.RefreshGrace = d
	}

	if v := getenv("RESOURCEAPI_SQLITE_SYNC"); v != "" {
		switch strings.ToLower(v) {
		case "full", "normal":
			cfg.SQLiteSync = strings.ToLower(v)
		default:
			errs = append(errs, "RESOURCEAPI_SQLITE_SYNC must be full or normal")
		}
	}
	if v := getenv("RESOURCEAPI_SQLITE_CACHE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, "RESOURCEAPI_SQLITE_CACHE must be a number of cache entries, 0 or more")
		}
		cfg.SQLiteCache = n
	}
	if v := getenv("RESOURCEAPI_CORS_ORIGINS"); v != "" {
		for o := range strings.SplitSeq(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				cfg.CORSOrigins = append(cfg.CORSOrigins, o)
			}
		}
	}
	if v := getenv("RESOURCEAPI_LOG_LEVEL"); v != "" {
		if err := cfg.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, "RESOURCEAPI_LOG_LEVEL must be debug, info, warn or error")
		}
	}
	if v := getenv("RESOURCEAPI_LOG_FORMAT"); v != "" {
		if v != "text" && v != "json" {
			errs = append(errs, "RESOURCEAPI_LOG_FORMAT must be text or json")
		}
		cfg.LogFormat = v
	}
	if v := getenv("RESOURCEAPI_ACCESS_LOG"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, "RESOURCEAPI_ACCESS_LOG must be true or false")
		}
		cfg.AccessLog = b
	}
	if v := getenv("RESOURCEAPI_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, "RESOURCEAPI_SHUTDOWN_TIMEOUT must be a positive duration such as 30s")
		}
		cfg.ShutdownTimeout = d
	}
	if v := strings.TrimSpace(getenv("RESOURCEAPI_POSTGRES_SOLO")); v != "" {
		switch strings.ToLower(v) {
		case "on", "true", "1":
			cfg.PostgresSolo = true
		case "off", "false", "0":
			cfg.PostgresSolo = false
		default:
			errs = append(errs, "RESOURCEAPI_POSTGRES_SOLO must be on or off")
		}
	}
	if v := strings.TrimSpace(getenv("RESOURCEAPI_EVENTS_RELAY")); v != "" {
		switch strings.ToLower(v) {
		case "on", "true", "1":
			cfg.EventsRelay = true
		case "off", "false", "0":
			cfg.EventsRelay = false
		default:
			errs = append(errs, "RESOURCEAPI_EVENTS_RELAY must be on or off")
		}
	}
	if v := getenv("RESOURCEAPI_EVENTS_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			errs = append(errs, "RESOURCEAPI_EVENTS_POLL must be a duration from 10ms to 1m, such as 250ms")
		}
		cfg.EventsPoll = d
	}
	if v := getenv("RESOURCEAPI_EVENTS_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, "RESOURCEAPI_EVENTS_RETENTION must be a duration of at least 1s, such as 1h")
		}
		cfg.EventsRetention = d
	}
	str("RESOURCEAPI_EVENTS_STREAM", &cfg.EventsStream)
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"RESOURCEAPI_WEBHOOKS_DELIVER", &cfg.WebhooksDeliver}, {"RESOURCEAPI_WEBHOOKS_ALLOW_HTTP", &cfg.WebhooksAllowHTTP},
		{"RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE", &cfg.WebhooksAllowPrivate}} {
		if v := strings.TrimSpace(getenv(b.name)); v != "" {
			on, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, b.name+" must be true or false")
			}
			*b.dst = on
		}
	}
	for _, d := range []struct {
		name     string
		dst      *time.Duration
		min, max time.Duration
		example  string
	}{
		{"RESOURCEAPI_WEBHOOKS_RETRY_PERIOD", &cfg.WebhooksRetryPeriod, time.Second, 30 * 24 * time.Hour, "24h"},
		{"RESOURCEAPI_WEBHOOKS_BACKOFF", &cfg.WebhooksBackoff, 10 * time.Millisecond, time.Hour, "5s"},
		{"RESOURCEAPI_WEBHOOKS_BACKOFF_MAX", &cfg.WebhooksBackoffMax, 10 * time.Millisecond, 24 * time.Hour, "1h"},
		{"RESOURCEAPI_WEBHOOKS_TIMEOUT", &cfg.WebhooksTimeout, 100 * time.Millisecond, 5 * time.Minute, "10s"},
		{"RESOURCEAPI_WEBHOOKS_LEASE", &cfg.WebhooksLease, time.Second, time.Hour, "1m"},
		{"RESOURCEAPI_WEBHOOKS_ROTATION_OVERLAP", &cfg.WebhooksOverlap, time.Second, 30 * 24 * time.Hour, "24h"},
	} {
		if v := strings.TrimSpace(getenv(d.name)); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil || t < d.min || t > d.max {
				errs = append(errs, fmt.Sprintf("%s must be a duration from %s to %s, such as %s", d.name, d.min, d.max, d.example))
			}
			*d.dst = t
		}
	}
	if cfg.WebhooksBackoffMax < cfg.WebhooksBackoff {
		errs = append(errs, "RESOURCEAPI_WEBHOOKS_BACKOFF_MAX must not be shorter than RESOURCEAPI_WEBHOOKS_BACKOFF")
	}
	if cfg.WebhooksLease <= cfg.WebhooksTimeout {
		errs = append(errs, "RESOURCEAPI_WEBHOOKS_LEASE must be longer than RESOURCEAPI_WEBHOOKS_TIMEOUT (an attempt ends within its lease)")
	}
	if v := strings.TrimSpace(getenv("RESOURCEAPI_WEBHOOKS_CONCURRENCY")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			errs = append(errs, "RESOURCEAPI_WEBHOOKS_CONCURRENCY must be a number from 1 to 64")
		}
		cfg.WebhooksConcurrency = n
	}
	if v := getenv("RESOURCEAPI_IDEMPOTENCY_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > 30*24*time.Hour {
			errs = append(errs, "RESOURCEAPI_IDEMPOTENCY_RETENTION must be a duration from 1m to 720h, such as 24h")
		}
		cfg.IdempotencyRetention = d
	}
	if v := strings.TrimSpace(getenv("RESOURCEAPI_METRICS")); v != "" {
		switch strings.ToLower(v) {
		case "on", "true", "1":
			cfg.Metrics = true
		case "off", "false", "0":
			cfg.Metrics = false
		default:
			errs = append(errs, "RESOURCEAPI_METRICS must be on or off")
		}
	}
	str("RESOURCEAPI_METRICS_ADDR", &cfg.MetricsAddr)
	for _, k := range otelVariables {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if cfg.OTel == nil {
				cfg.OTel = map[string]string{}
			}
			cfg.OTel[k] = v
		}
	}
	if cfg.MetricsAddr != "" && !cfg.Metrics {
		errs = append(errs, "RESOURCEAPI_METRICS_ADDR is set while RESOURCEAPI_METRICS is off")
	}
	if v := getenv("RESOURCEAPI_EVENTS_STREAM_LENGTH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 100 {
			errs = append(errs, "RESOURCEAPI_EVENTS_STREAM_LENGTH must be a number of events, 100 or more")
		}
		cfg.EventsStreamLength = n
	}
	for _, c := range []struct {
		name string
		dst  *int
	}{{"RESOURCEAPI_WS_MAX_PER_USER", &cfg.WSMaxPerUser}, {"RESOURCEAPI_WS_MAX_PER_ADDR", &cfg.WSMaxPerAddr}} {
		if v := getenv(c.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, c.name+" must be a number of connections, or 0 for no cap")
			}
			*c.dst = n
		}
	}
	if v := getenv("RESOURCEAPI_GRAPHQL_MAX_RESPONSE_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 4096 {
			errs = append(errs, "RESOURCEAPI_GRAPHQL_MAX_RESPONSE_BYTES must be a number of bytes, 4096 or more")
		}
		cfg.GraphQLMaxResponseBytes = n
	}
	if v := getenv("RESOURCEAPI_GRAPHQL_MAX_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			errs = append(errs, "RESOURCEAPI_GRAPHQL_MAX_RECORDS must be a number of records, 100 or more")
		}
		cfg.GraphQLMaxRecords = n
	}
	if len(errs) > 0 {
		return config{}, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return cfg, nil
}

// otelVariables are the OpenTelemetry variables read here; the SDK reads
// the others it knows (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _CERTIFICATE,
// OTEL_RESOURCE_ATTRIBUTES...) itself.
var otelVariables = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
}

// otel reads the OpenTelemetry variables of the configuration.
func (c config) otel(k string) string { return c.OTel[k] }

// databaseForms is what RESOURCEAPI_DATABASE_URL accepts, for messages.
const databaseForms = "postgres://user:password@host:5432/name (or postgresql://...) for PostgreSQL; " +
	"a file path, sqlite:path, sqlite:///absolute/path or file:path for SQLite"

// urlScheme matches what RFC 3986 allows as a URL scheme before "://".
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// checkDatabaseURL returns why u is not a database URL the program serves,
// or "". A URL of another scheme (mysql://, a misspelt postgress://) is a
// mistake, never a SQLite file named after it.
func checkDatabaseURL(u string) string {
	m := urlScheme.FindString(u)
	if m == "" {
		return ""
	}
	switch m {
	case "postgres://", "postgresql://", "sqlite://", "file://":
		return ""
	}
	// Only the scheme: the rest may hold a password.
	return fmt.Sprintf("RESOURCEAPI_DATABASE_URL: %q is not a database this program serves; use %s", m, databaseForms)
}

// postgres reports whether the database URL names a PostgreSQL server.
func (c config) postgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// sqlitePath returns the SQLite file of the database URL: a path, or a
// sqlite: or file: URL of one.
func (c config) sqlitePath() string {
	p := c.DatabaseURL
	for _, prefix := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest
		}
	}
	return p
}

// describeDatabase names the database for people, without credentials:
// the absolute path of a SQLite file, or a PostgreSQL server's host, port
// and database.
func (c config) describeDatabase() string {
	if c.postgres() {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil {
			return "PostgreSQL"
		}
		return "PostgreSQL " + (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	}
	return "SQLite " + absPath(c.sqlitePath())
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// requireSQLiteFile fails unless the SQLite file of the configuration
// exists: every command but serve and migrate works on an existing database
// and never creates one, which would be a database no server uses.
func (c config) requireSQLiteFile() error {
	path := c.sqlitePath()
	_, err := os.Stat(path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("database: %w", err)
	}
	where := "RESOURCEAPI_DATABASE_URL=" + c.DatabaseURL
	if c.DatabaseURL == defaultSQLitePath {
		where = "the default " + defaultSQLitePath + ", in the working directory"
	}
	return fmt.Errorf("no SQLite database at %s (%s); this command works on an existing database and never creates one. "+
		"Set RESOURCEAPI_DATABASE_URL to the server's database (%s), or create this one with 'resourceapi migrate'",
		absPath(path), where, databaseForms)
}

// outboxRetention is how long published events stay in the outbox: long
// enough for a Server-Sent Events client to resume (EventsRetention) and
// for a webhook delivery to be retried (WebhooksRetryPeriod), whichever is
// longer.
func (c config) outboxRetention() time.Duration {
	return max(c.EventsRetention, c.WebhooksRetryPeriod)
}
