package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/argon2id"
	rauth "github.com/resourceapi/resourceapi/auth"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/metrics"
	"github.com/resourceapi/resourceapi/sqlite"
	"github.com/resourceapi/resourceapi/token"
	"github.com/resourceapi/resourceapi/tracing"
)

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkObserved serves GET one user and the first list page with
// nothing measured, with metrics, and with metrics and tracing sampled at
// 100% and 1% (spans made and dropped by the exporter), in one run, so that
// what measuring costs is compared on the same machine at the same moment.
func BenchmarkObserved(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db"), sqlite.Options{Sync: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	hasher := &argon2id.Hasher{Memory: 8, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 16}
	svc := resourceapi.NewService(db, hasher)
	for i := range 100 {
		if _, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.Users, 0, resourceapi.Record{
			"name": fmt.Sprintf("User %d", i), "email": fmt.Sprintf("u%d@example.com", i)}); err != nil {
			b.Fatal(err)
		}
	}
	k, err := svc.Create(ctx, resourceapi.SystemCaller(), resourceapi.APIKeys, 0, resourceapi.Record{"user_id": int64(1)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.Update(ctx, resourceapi.SystemCaller(), resourceapi.Users, resourceapi.Address{ID: 1},
		resourceapi.Record{"roles": []string{"admin"}}, nil); err != nil {
		b.Fatal(err)
	}
	key := k["key"].(string)
	tokens, _ := token.New([]byte("0123456789abcdef0123456789abcdef"), token.Options{})
	auth, err := rauth.New(rauth.Config{Store: db, Hasher: hasher, Tokens: tokens})
	if err != nil {
		b.Fatal(err)
	}
	handler := func(withMetrics bool, ratio string) http.Handler {
		s := resourceapi.NewService(db, hasher)
		s.SetAuthenticator(auth)
		cfg := rhttp.Config{Service: s}
		if withMetrics {
			m := metrics.New()
			cfg.Observer, cfg.Metrics = m, m.Handler()
		}
		if ratio != "" {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}
			tr, err := tracing.New(ctx, tracing.Config{Getenv: func(k string) string { return env[k] }, Exporter: discard{}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { tr.Shutdown(context.Background()) })
			cfg.Trace = tr.Request
			s.SetTracer(tr.Service)
		}
		return rhttp.NewServer(cfg).Handler()
	}
	for _, v := range []struct {
		name    string
		metrics bool
		ratio   string
	}{{"off", false, ""}, {"metrics", true, ""}, {"metrics+trace100", true, "1"}, {"metrics+trace1", true, "0.01"}} {
		h := handler(v.metrics, v.ratio)
		for _, path := range []string{"/api/users/7", "/api/users?page=1"} {
			b.Run(v.name+path, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req := httptest.NewRequest("GET", path, nil)
						req.Header.Set("X-API-Key", key)
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != 200 {
							b.Errorf("status %d: %s", rec.Code, rec.Body)
							return
						}
					}
				})
			})
		}
	}
}
