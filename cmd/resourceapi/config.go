package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// config is every setting of the program. It is read from the environment
// here and only here.
type config struct {
	Addr            string        // RESOURCEAPI_ADDR
	DatabaseURL     string        // RESOURCEAPI_DATABASE_URL: postgres://... or a SQLite path
	SQLiteSync      string        // RESOURCEAPI_SQLITE_SYNC: full or normal
	SQLiteCache     int           // RESOURCEAPI_SQLITE_CACHE: cache entries (records, list pages); 0 turns the cache off
	AdminEmail      string        // RESOURCEAPI_ADMIN_EMAIL
	AdminPassword   string        // RESOURCEAPI_ADMIN_PASSWORD
	Vendor          string        // RESOURCEAPI_API_VENDOR
	CORSOrigins     []string      // RESOURCEAPI_CORS_ORIGINS, comma-separated
	LogLevel        slog.Level    // RESOURCEAPI_LOG_LEVEL: debug, info, warn, error
	LogFormat       string        // RESOURCEAPI_LOG_FORMAT: text or json
	AccessLog       bool          // RESOURCEAPI_ACCESS_LOG
	ShutdownTimeout time.Duration // RESOURCEAPI_SHUTDOWN_TIMEOUT
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
		AdminEmail:      "admin@localhost",
		Vendor:          "example",
		LogFormat:       "text",
		AccessLog:       true,
		ShutdownTimeout: 30 * time.Second,
	}
	var errs []string
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	str("RESOURCEAPI_ADDR", &cfg.Addr)
	str("RESOURCEAPI_DATABASE_URL", &cfg.DatabaseURL)
	str("RESOURCEAPI_ADMIN_EMAIL", &cfg.AdminEmail)
	str("RESOURCEAPI_API_VENDOR", &cfg.Vendor)
	cfg.AdminPassword = getenv("RESOURCEAPI_ADMIN_PASSWORD")

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
	if len(errs) > 0 {
		return config{}, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return cfg, nil
}

// postgres reports whether the database URL names a PostgreSQL server.
func (c config) postgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// sqlitePath returns the SQLite file of the database URL: a path, or a
// sqlite: or file: URL of one.
func (c config) sqlitePath() string {
	p := c.DatabaseURL
	for _, prefix := range []string{"sqlite://", "sqlite:", "file:"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest
		}
	}
	return p
}
