// Package tracing traces requests with the OpenTelemetry Go SDK and exports
// the spans over OTLP/HTTP, configured by the standard OTEL_* variables
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER and its _ARG,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES...). Without an
// endpoint it is off, and nothing is traced: the hooks it gives the
// transports, the rule layer and the stores stay nil.
//
// Spans: one per HTTP request (a W3C traceparent received is its parent),
// per GraphQL operation, per call of the rule layer, per SQL statement and
// Redis command of a traced request, and per publication of events. Their attributes never hold a credential, a
// query string, a body or a value bound to a statement: the route, the
// method, the status, the resource, the statement's text (with
// placeholders), the request id.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Enabled reports whether getenv configures an OTLP endpoint for traces,
// and OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none does not turn it off.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "", "otlp":
	default:
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Tracing is a tracer provider that exports over OTLP/HTTP.
type Tracing struct {
	requestID func(context.Context) string
	provider  *sdktrace.TracerProvider
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
}

// Config configures New.
type Config struct {
	// Getenv reads the OTEL_* variables that decide the endpoint, the
	// sampler and the service's name; the SDK reads the others (headers,
	// timeouts, certificates) from the process's environment.
	Getenv func(string) string
	// Version is the service's version (service.version).
	Version string
	// Exporter, when set, replaces the OTLP exporter: for tests.
	Exporter sdktrace.SpanExporter
	// RequestID returns the id of the request a context belongs to
	// (http.RequestID), for the request's span.
	RequestID func(context.Context) string
}

// New returns the tracing that cfg's environment configures. Call it only
// when Enabled; Shutdown flushes it.
func New(ctx context.Context, cfg Config) (*Tracing, error) {
	getenv := cfg.Getenv
	exp := cfg.Exporter
	if exp == nil {
		var opts []otlptracehttp.Option
		if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		} else if u := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); u != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(u, "/")+"/v1/traces"))
		}
		var err error
		if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
	}
	sampler, err := samplerFrom(getenv)
	if err != nil {
		return nil, err
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "resourceapi"
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", name), attribute.String("service.version", cfg.Version)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler), sdktrace.WithResource(res))
	return &Tracing{requestID: cfg.RequestID, provider: tp, tracer: tp.Tracer("github.com/resourceapi/resourceapi"),
		prop: propagation.TraceContext{}}, nil
}

// samplerFrom reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the
// specification says; the default is parentbased_always_on.
func samplerFrom(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, such as 0.01")
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not one of always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off, parentbased_traceidratio", name)
}

// Shutdown exports the spans still buffered and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// end ends span with err's status.
func end(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
		// The error's type only: its text may name what a client sent.
		span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
	span.End()
}

// Request is the hook of package http (http.Config.Trace): a server span
// per request, the child of the traceparent the request carries, named
// for its route once it is known.
func (t *Tracing) Request(r *http.Request) (context.Context, func(route string, status int)) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
	return ctx, func(route string, status int) {
		span.SetName(r.Method + " " + route)
		if t.requestID != nil {
			span.SetAttributes(attribute.String("http.request.id", t.requestID(r.Context())))
		}
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

// Operation is the hook of package graph (graph.Options.Trace): a span per
// GraphQL operation, with its type and name (never its document or
// variables).
func (t *Tracing) Operation(ctx context.Context, operation, name string) (context.Context, func(code string)) {
	ctx, span := t.tracer.Start(ctx, "graphql "+operation, trace.WithAttributes(
		attribute.String("graphql.operation.type", operation), attribute.String("graphql.operation.name", name)))
	return ctx, func(code string) {
		if code != "" {
			span.SetAttributes(attribute.String("graphql.error.code", code))
			span.SetStatus(codes.Error, code)
		}
		span.End()
	}
}

// Service is the hook of the rule layer (resourceapi.Service.SetTracer): a
// span per call, named for the method and the resource.
func (t *Tracing) Service(ctx context.Context, method, res string) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, "Service."+method+" "+res,
		trace.WithAttributes(attribute.String("resourceapi.resource", res)))
	return ctx, func(err error) { end(span, err) }
}

// Statement is the hook of the stores (sqlite.Options.Trace,
// postgres.Options.Trace): a client span per SQL statement, with its text
// (values are bound, never in it).
func (t *Tracing) Statement(system string) func(ctx context.Context, query string) (context.Context, func(error)) {
	return func(ctx context.Context, query string) (context.Context, func(error)) {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return ctx, func(error) {} // a statement of no traced request: background work
		}
		ctx, span := t.tracer.Start(ctx, statementName(query), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("db.system.name", system), attribute.String("db.query.text", query)))
		return ctx, func(err error) { end(span, err) }
	}
}

// Command is the hook of the Redis client (redis.Trace): a client span per
// command or pipeline, named by the command ("evalsha", "pipeline xadd
// xadd"), never with its arguments, which hold keys and event bodies.
func (t *Tracing) Command(ctx context.Context, command string) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(error) {} // a command of no traced request: the stream's background reads
	}
	name, _, _ := strings.Cut(command, " ")
	ctx, span := t.tracer.Start(ctx, command, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", name)))
	return ctx, func(err error) { end(span, err) }
}

// statementName is a statement's first word and its table, such as
// "SELECT users" (the first FROM, INTO or UPDATE outside parentheses): low
// cardinality, as span names must be.
func statementName(q string) string {
	words := strings.Fields(q)
	if len(words) == 0 {
		return "SQL"
	}
	op := strings.ToUpper(words[0])
	if op == "UPDATE" && len(words) > 1 {
		return op + " " + strings.Trim(words[1], `"`)
	}
	depth := 0
	for i, w := range words {
		if depth == 0 && i+1 < len(words) {
			switch strings.ToUpper(w) {
			case "FROM", "INTO":
				if next := strings.Trim(words[i+1], `"`); !strings.HasPrefix(next, "(") {
					return op + " " + strings.TrimRight(next, ",;)")
				}
			}
		}
		depth += strings.Count(w, "(") - strings.Count(w, ")")
	}
	return op
}

// Publish is the hook of the relay (relay.Config.Trace): a producer span
// per batch of events published.
func (t *Tracing) Publish(ctx context.Context, events int) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, "events publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("messaging.batch.message_count", events)))
	return ctx, func(err error) { end(span, err) }
}

// LogHandler adds the trace and span ids of a record's context to every
// line logged with one (slog's ...Context methods), so that a request's log
// lines lead to its trace.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}
func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }
