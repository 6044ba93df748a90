package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpCollector is an OTLP/HTTP endpoint that keeps the spans it receives.
type otlpCollector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Method != "POST" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Write(out)
}

// TestTracing serves with OTEL_EXPORTER_OTLP_ENDPOINT naming an OTLP
// endpoint the test serves, sends a REST and a GraphQL request with a W3C
// traceparent, and checks the spans it receives: the request's server span
// is the child of the incoming span, the rule layer's span the request's
// (or the GraphQL operation's) child, and the SQL statements children of
// the rule layer's; the write's events are published under a span of
// their own; no attribute holds the credential; the request's log line
// names its trace. With RESOURCEAPI_TEST_REDIS_URL, the server shares its
// rate limits in that Redis, and the request's rate-limit check is a Redis
// span, child of the request's.
func TestTracing(t *testing.T) {
	col := &otlpCollector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	kv := map[string]string{
		"RESOURCEAPI_DATABASE_URL": filepath.Join(t.TempDir(), "t.db"), "RESOURCEAPI_ADDR": "127.0.0.1:0",
		"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL, "OTEL_SERVICE_NAME": "resourceapi-test",
	}
	redisURL := os.Getenv("RESOURCEAPI_TEST_REDIS_URL")
	if redisURL != "" {
		kv["RESOURCEAPI_REDIS_URL"] = redisURL
	} else {
		t.Log("RESOURCEAPI_TEST_REDIS_URL is not set: the Redis spans are not checked")
	}
	stop, output := mustServeOutput(t, kv)
	addr := regexp.MustCompile(`msg=listening addr=(\S+)`).FindStringSubmatch(output())
	key := regexp.MustCompile(`API key:\s+(\S+)`).FindStringSubmatch(output())
	if addr == nil || key == nil {
		t.Fatalf("no address or admin API key in serve's output:\n%s", output())
	}
	const (
		restTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		graphTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
		writeTrace = "6bf92f3577b34da6a3ce929d0e0e4738"
		parentSpan = "00f067aa0ba902b7"
	)
	send := func(method, path, body, traceID string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr[1]+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key[1])
		req.Header.Set("Traceparent", "00-"+traceID+"-"+parentSpan+"-01")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s = %d", method, path, resp.StatusCode)
		}
	}
	send("GET", "/api/users/1", "", restTrace)
	send("POST", "/graphql", `{"query":"query Everyone { users(limit: 2) { id name } }"}`, graphTrace)
	send("POST", "/api/posts", `{"title":"Traced","content":"A post whose event is published.","author_id":1}`, writeTrace)
	log := stop() // the shutdown exports what is buffered

	col.mu.Lock()
	spans := col.spans
	col.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), key[1]) || strings.Contains(a.Value.String(), key[1][:12]) {
				t.Errorf("span %q holds the API key in %s", s.Name, a.Key)
			}
		}
	}
	// find returns the span of traceID named name whose parent is parent.
	find := func(traceID, name string, parent []byte) *tracepb.Span {
		t.Helper()
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == traceID && s.Name == name && bytes.Equal(s.ParentSpanId, parent) {
				return s
			}
		}
		var names []string
		for _, s := range spans {
			if hex.EncodeToString(s.TraceId) == traceID {
				p := byID[hex.EncodeToString(s.ParentSpanId)]
				pn := "-"
				if p != nil {
					pn = p.Name
				}
				names = append(names, s.Name+" <- "+pn+" "+s.Attributes[len(s.Attributes)-1].Value.String())
			}
		}
		t.Fatalf("no span %q of trace %s with the expected parent; the trace has %q", name, traceID, names)
		return nil
	}
	incoming, _ := hex.DecodeString(parentSpan)
	server := find(restTrace, "GET /api/users/{id}", incoming)
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span kind = %v, want server", server.Kind)
	}
	get := find(restTrace, "Service.Get users", server.SpanId)
	find(restTrace, "SELECT users", get.SpanId)

	gqlServer := find(graphTrace, "POST /graphql", incoming)
	op := find(graphTrace, "graphql query", gqlServer.SpanId)
	list := find(graphTrace, "Service.List users", op.SpanId)
	find(graphTrace, "SELECT users", list.SpanId)

	// The write: its statements under the rule layer's span, and its event
	// published by the relay under a producer span.
	write := find(writeTrace, "POST /api/posts", incoming)
	create := find(writeTrace, "Service.Create posts", write.SpanId)
	find(writeTrace, "INSERT posts", create.SpanId)
	published := false
	for _, s := range spans {
		if s.Name == "events publish" && s.Kind == tracepb.Span_SPAN_KIND_PRODUCER {
			published = true
		}
	}
	if !published {
		t.Error("no span of the events' publication (events publish, a producer span)")
	}

	if redisURL != "" {
		// The rate limit's check is one script (EVALSHA, or EVAL the first
		// time the script is loaded), run under the request's span.
		found := false
		for _, s := range spans {
			if strings.HasPrefix(s.Name, "eval") && bytes.Equal(s.ParentSpanId, server.SpanId) {
				found = true
				if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("Redis span kind = %v, want client", s.Kind)
				}
			}
		}
		if !found {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Errorf("no Redis span (eval...) under the request's span; the spans are %q", names)
		}
	}

	if !regexp.MustCompile(`msg=request .*path=/api/users/1 .*trace_id=` + restTrace).MatchString(log) {
		t.Errorf("the access log line of the request does not name its trace:\n%s", log)
	}
}
