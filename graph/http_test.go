package graph_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi/graph"
	rhttp "github.com/resourceapi/resourceapi/http"
	"github.com/resourceapi/resourceapi/inmem"
)

// The GraphQL-over-HTTP rules: methods, media types, status codes.
func TestOverHTTP(t *testing.T) {
	s := mustServer(t, backends()[0].open(t, nil), func(_ *graph.Options, c *rhttp.Config) {
		c.RateLimiter = inmem.NewRateLimiter(1000, time.Minute, inmem.Options{})
	})
	get := func(query string, headers ...string) *response {
		return s.send(http.MethodGet, "/graphql?query="+url.QueryEscape(query), s.admin, nil, headers...)
	}
	postRaw := func(body string, headers ...string) *response {
		return s.send(http.MethodPost, "/graphql", s.admin, strings.NewReader(body),
			append([]string{"Content-Type", "application/json"}, headers...)...)
	}
	for _, tc := range []struct {
		name       string
		r          *response
		status     int
		media      string
		code       string
		wantData   bool
		wantAllow  string
		wantNoData bool
	}{
		{name: "GET query", r: get("{ hello }"), status: 200, media: "application/json", wantData: true},
		{name: "GET query, graphql-response+json", r: get("{ hello }", "Accept", "application/graphql-response+json"),
			status: 200, media: "application/graphql-response+json", wantData: true},
		{name: "both named: graphql-response+json", r: get("{ hello }", "Accept", "application/graphql-response+json, application/json"),
			status: 200, media: "application/graphql-response+json", wantData: true},
		{name: "json preferred by q", r: get("{ hello }", "Accept", "application/graphql-response+json;q=0.5, application/json"),
			status: 200, media: "application/json", wantData: true},
		{name: "*/*", r: get("{ hello }", "Accept", "*/*"), status: 200, media: "application/json", wantData: true},
		{name: "not acceptable", r: get("{ hello }", "Accept", "text/plain"), status: 406, media: "application/json", code: "NOT_ACCEPTABLE"},
		{name: "GET mutation", r: get(`mutation { deleteUser(id: "2") }`), status: 405, media: "application/json",
			code: "METHOD_NOT_ALLOWED", wantAllow: "POST"},
		{name: "GET without query", r: s.send(http.MethodGet, "/graphql", s.admin, nil), status: 400, media: "application/json", code: "BAD_REQUEST"},
		{name: "POST", r: postRaw(`{"query":"{ hello }"}`), status: 200, media: "application/json", wantData: true},
		{name: "POST, null parameters", r: postRaw(`{"query":"{ hello }","operationName":null,"variables":null,"extensions":null}`),
			status: 200, media: "application/json", wantData: true},
		{name: "POST, charset", r: postRaw(`{"query":"{ hello }"}`, "Content-Type", "application/json; charset=utf-8"),
			status: 200, media: "application/json", wantData: true},
		{name: "POST, bad JSON", r: postRaw(`{"query":`), status: 400, media: "application/json", code: "BAD_REQUEST"},
		{name: "POST, query not a string", r: postRaw(`{"query":{}}`), status: 400, media: "application/json", code: "BAD_REQUEST"},
		{name: "POST, variables not an object", r: postRaw(`{"query":"{ hello }","variables":"x"}`), status: 400, media: "application/json", code: "BAD_REQUEST"},
		{name: "POST, no content type", r: s.send(http.MethodPost, "/graphql", s.admin, strings.NewReader(`{"query":"{ hello }"}`)),
			status: 415, media: "application/json", code: "UNSUPPORTED_MEDIA_TYPE"},
		{name: "parse error, json", r: postRaw(`{"query":"{ hello"}`), status: 200, media: "application/json",
			code: "GRAPHQL_PARSE_FAILED", wantNoData: true},
		{name: "parse error, graphql-response+json", r: postRaw(`{"query":"{ hello"}`, "Accept", "application/graphql-response+json"),
			status: 400, media: "application/graphql-response+json", code: "GRAPHQL_PARSE_FAILED", wantNoData: true},
		{name: "validation error", r: postRaw(`{"query":"{ nope }"}`, "Accept", "application/graphql-response+json"),
			status: 400, media: "application/graphql-response+json", code: "GRAPHQL_VALIDATION_FAILED", wantNoData: true},
		{name: "field error keeps 200", r: postRaw(`{"query":"{ user(id: \"x\") { id } }"}`, "Accept", "application/graphql-response+json"),
			status: 200, media: "application/graphql-response+json", code: "BAD_USER_INPUT", wantData: true},
		{name: "subscription over HTTP", r: postRaw(`{"query":"subscription { userCreated { id } }"}`, "Accept", "application/graphql-response+json"),
			status: 400, media: "application/graphql-response+json", code: "BAD_REQUEST", wantNoData: true},
		{name: "PUT", r: s.send(http.MethodPut, "/graphql", s.admin, nil), status: 405, media: "application/json",
			code: "METHOD_NOT_ALLOWED", wantAllow: "GET, POST, OPTIONS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if got := r.header.Get("Content-Type"); got != tc.media+"; charset=utf-8" {
				t.Fatalf("Content-Type = %q, want %s; charset=utf-8", got, tc.media)
			}
			if tc.code != "" {
				wantError(t, r, tc.code, "")
			} else if len(r.Errors) > 0 {
				t.Fatalf("errors = %+v", r.Errors)
			}
			if tc.wantData && len(r.Data) == 0 {
				t.Fatalf("no data: %s", r.raw)
			}
			if tc.wantNoData && len(r.Data) != 0 {
				t.Fatalf("data = %s, want none", r.Data)
			}
			if tc.wantAllow != "" && r.header.Get("Allow") != tc.wantAllow {
				t.Fatalf("Allow = %q, want %q", r.header.Get("Allow"), tc.wantAllow)
			}
			if r.header.Get("X-RateLimit-Limit") == "" || r.header.Get("X-Request-Id") == "" {
				t.Fatalf("headers = %v, want X-RateLimit-* and X-Request-Id", r.header)
			}
		})
	}

	t.Run("schema", func(t *testing.T) {
		r := s.send(http.MethodGet, "/graphql/schema.graphql", "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
			!strings.Contains(string(r.raw), "type Query {") || !strings.Contains(string(r.raw), "adminData: AdminData") {
			t.Fatalf("schema: %d %s\n%s", r.status, r.header.Get("Content-Type"), r.raw)
		}
	})
	t.Run("introspection", func(t *testing.T) {
		var d struct {
			Schema struct{ QueryType struct{ Name string } } `json:"__schema"`
		}
		s.mustData("", "{ __schema { queryType { name } } }", nil, &d)
		if d.Schema.QueryType.Name != "Query" {
			t.Fatalf("introspection: %+v", d)
		}
	})
	t.Run("OPTIONS", func(t *testing.T) {
		r := s.send(http.MethodOptions, "/graphql", "", nil)
		if r.status != 204 || r.header.Get("Allow") != "GET, POST, OPTIONS" {
			t.Fatalf("OPTIONS: %d Allow %q", r.status, r.header.Get("Allow"))
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		if r := s.send(http.MethodGet, "/graphql/nope", "", nil); r.status != 404 {
			t.Fatalf("status = %d, want 404", r.status)
		}
	})
	t.Run("body too large", func(t *testing.T) {
		big := `{"query":"{ hello }","variables":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`
		if r := postRaw(big); r.status != 413 {
			t.Fatalf("status = %d, want 413", r.status)
		}
	})
	t.Run("document too large", func(t *testing.T) {
		q := "{ " + strings.Repeat("hello ", 10000) + "}"
		if r := postRaw(`{"query":"` + q + `"}`); r.status != 413 {
			t.Fatalf("status = %d, want 413", r.status)
		}
	})
}

// The complexity model of decisions §6, the depth limit, and that a refused
// document runs no resolver.
func TestLimits(t *testing.T) {
	var statements atomic.Int64
	s := mustServer(t, backends()[0].open(t, &statements))
	for _, tc := range []struct {
		name, query string
		code        string
	}{
		// 1 + 20 × (1 + 1 + (1 + 10 × 1)) = 261
		{"list of lists", "{ users(limit: 20) { id name posts { title } } }", ""},
		// 1 + 100 × (1 + (1 + 10 × 1)) = 1201
		{"over the limit", "{ users(limit: 100) { id posts { title } } }", "COMPLEXITY_LIMIT_EXCEEDED"},
		// 1 + 10 × (1 + 10 × (1 + (1 + 10 × (1 + 1)))) = 2211
		{"nested defaults", "{ users { posts { author { posts { id title } } } } }", "COMPLEXITY_LIMIT_EXCEEDED"},
		// 1 + 10 × (1 + 10 × (1 + (1 + 1 × (1 + 1)))) = 411
		{"nested with a limit", "{ users { posts { author { posts(limit: 1) { id title } } } } }", ""},
		// 1 + 9 × ((1 + 1 × 1) + 109 × 1) = 1000; the ids are aliased, as
		// repeating one field a hundred times is refused before validation.
		{"exactly 1000", "{ users(limit: 9) { posts(limit: 1) { id } " + aliases("id", 109) + "} }", ""},
		{"deep", deepQuery(8), "DEPTH_LIMIT_EXCEEDED"},
		{"deep enough", deepQuery(6), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := statements.Load()
			r := s.post(s.admin, tc.query, nil, "Accept", "application/graphql-response+json")
			if tc.code == "" {
				if len(r.Errors) > 0 && r.code() != "" && strings.Contains(r.code(), "LIMIT") {
					t.Fatalf("refused: %+v", r.Errors)
				}
				return
			}
			wantError(t, r, tc.code, "")
			if r.status != 400 || len(r.Data) != 0 {
				t.Fatalf("status %d, data %s; want 400 and no data", r.status, r.Data)
			}
			// Authentication of the API key reads the store; no resolver did.
			if n := statements.Load() - before; n > 1 {
				t.Fatalf("%d statements ran for a refused document", n)
			}
		})
	}
}

// aliases returns n aliases of field: "a0: field a1: field ...".
func aliases(field string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: %s ", i, field)
	}
	return b.String()
}

// deepQuery nests n levels of posts and author under user 1: 2n+2 levels,
// each list limited to 1, so that only the depth limit refuses it.
func deepQuery(n int) string {
	return `{ user(id: "1") { ` + strings.Repeat("posts(limit: 1) { author { ", n) + "id" + strings.Repeat(" } }", n) + " } }"
}
