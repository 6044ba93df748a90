package main

import (
	"context"
	"log/slog"
	nethttp "net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/redis"
	"github.com/resourceapi/resourceapi/tracing"
)

// tracer is the server's tracing, when the OTEL_* variables turn it on. Its
// methods on a nil *tracer return nil hooks: nothing is traced, at no cost.
type tracer struct {
	*tracing.Tracing
}

// testHookTracing, set only by tests, configures the tracing it returns
// (an exporter of the test's) in place of the OTLP exporter.
var testHookTracing func(*tracing.Config)

// startTracing starts tracing when the configuration names an OTLP
// endpoint, else returns nil.
func startTracing(ctx context.Context, cfg config, version string, log *slog.Logger) (*tracer, error) {
	if !tracing.Enabled(cfg.otel) {
		return nil, nil
	}
	tc := tracing.Config{Getenv: cfg.otel, Version: version, RequestID: http.RequestID}
	if testHookTracing != nil {
		testHookTracing(&tc)
	}
	t, err := tracing.New(ctx, tc)
	if err != nil {
		return nil, err
	}
	endpoint := cfg.otel("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = cfg.otel("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	log.Info("tracing", "endpoint", endpoint, "sampler", cfg.otel("OTEL_TRACES_SAMPLER"))
	return &tracer{t}, nil
}

// stop exports the spans still buffered, within 5 seconds.
func (t *tracer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.Shutdown(ctx) //nolint:errcheck // an exporter that does not answer loses the last spans
}

func (t *tracer) request() func(*nethttp.Request) (context.Context, func(string, int)) {
	if t == nil {
		return nil
	}
	return t.Request
}

func (t *tracer) operation() func(context.Context, string, string) (context.Context, func(string)) {
	if t == nil {
		return nil
	}
	return t.Operation
}

func (t *tracer) statement(system string) func(context.Context, string) (context.Context, func(error)) {
	if t == nil {
		return nil
	}
	return t.Statement(system)
}

func (t *tracer) publish() func(context.Context, int) (context.Context, func(error)) {
	if t == nil {
		return nil
	}
	return t.Publish
}

// redis traces the commands rdb sends (nil without RESOURCEAPI_REDIS_URL)
// for traced requests and publications.
func (t *tracer) redis(rdb *goredis.Client) {
	if t == nil || rdb == nil {
		return
	}
	redis.Trace(rdb, t.Command)
}
