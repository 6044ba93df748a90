package http_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

func TestNegotiateCoding(t *testing.T) {
	tests := []struct {
		header []string
		want   string
		force  bool
	}{
		{nil, "identity", false},
		{[]string{""}, "identity", false},
		{[]string{"gzip"}, "gzip", false},
		{[]string{"GZIP"}, "gzip", false},
		{[]string{"x-gzip"}, "gzip", false},
		{[]string{"deflate"}, "deflate", false},
		{[]string{"gzip, deflate, br"}, "gzip", false},
		{[]string{"deflate, gzip"}, "gzip", false}, // equal q: gzip preferred
		{[]string{"gzip;q=0.5, deflate"}, "deflate", false},
		{[]string{"gzip;q=0.5"}, "gzip", false}, // identity does not compete unless named
		{[]string{"gzip;q=0.5, identity"}, "identity", false},
		{[]string{"gzip;q=0"}, "identity", false},
		{[]string{"gzip; q=0.000"}, "identity", false},
		{[]string{"gzip;Q=0, deflate;q=0.1"}, "deflate", false},
		{[]string{"gzip;q=0, deflate;q=0"}, "identity", false},
		{[]string{"*"}, "gzip", false},
		{[]string{"*;q=0.5, gzip;q=0"}, "deflate", false},
		{[]string{"br, *;q=0.1"}, "gzip", false},
		{[]string{"identity;q=0"}, "identity", false}, // nothing we have is acceptable: identity anyway
		{[]string{"gzip, identity;q=0"}, "gzip", true},
		{[]string{"*;q=0, deflate"}, "deflate", true},
		{[]string{"*;q=0"}, "identity", false},
		{[]string{"gzip;q=abc"}, "identity", false}, // malformed weight: item ignored
		{[]string{"gzip;q=2"}, "identity", false},
		{[]string{"br", "deflate"}, "deflate", false}, // several header lines
		{[]string{" gzip ; q=0.8 , deflate ; q=0.9 "}, "deflate", false},
	}
	for _, tt := range tests {
		c, force := rhttp.NegotiateCoding(tt.header)
		if c.Name() != tt.want || force != tt.force {
			t.Errorf("NegotiateCoding(%q) = %s, %v; want %s, %v", tt.header, c.Name(), force, tt.want, tt.force)
		}
	}
}

// bigList creates enough users that a list of them is over 1 KiB.
func bigList(t *testing.T, c *client) string {
	for i := range 12 {
		c.mustUser(fmt.Sprintf("user %d with a long enough name", i), fmt.Sprintf("user%d@example.com", i))
	}
	return "/api/users"
}

func TestCompression(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		path := bigList(t, c)
		plain := c.get(path)
		plain.mustStatus(t, http.StatusOK)
		if len(plain.body) < 1024 {
			t.Fatalf("list is %d bytes; the test needs at least 1 KiB", len(plain.body))
		}
		if plain.Header.Get("Content-Encoding") != "" || !hasVary(plain, "Accept-Encoding") {
			t.Errorf("no Accept-Encoding: Content-Encoding %q, Vary %q", plain.Header.Get("Content-Encoding"), plain.Header.Values("Vary"))
		}
		plainTag := plain.Header.Get("ETag")

		for _, tt := range []struct{ accept, coding string }{
			{"gzip", "gzip"}, {"deflate", "deflate"}, {"gzip;q=0.2, deflate;q=0.9", "deflate"}, {"*", "gzip"},
		} {
			r := c.get(path, "Accept-Encoding", tt.accept)
			r.mustStatus(t, http.StatusOK)
			if got := r.Header.Get("Content-Encoding"); got != tt.coding {
				t.Fatalf("Accept-Encoding %q: Content-Encoding = %q, want %s", tt.accept, got, tt.coding)
			}
			if !bytes.Equal(r.decoded(t), plain.body) {
				t.Errorf("Accept-Encoding %q: decoded body differs from the plain one", tt.accept)
			}
			if len(r.body) >= len(plain.body) {
				t.Errorf("Accept-Encoding %q: %d bytes compressed, %d plain", tt.accept, len(r.body), len(plain.body))
			}
			if !hasVary(r, "Accept-Encoding") {
				t.Errorf("compressed response Vary = %q", r.Header.Values("Vary"))
			}
			if got, want := r.Header.Get("ETag"), strings.TrimSuffix(plainTag, `"`)+"-"+tt.coding+`"`; got != want {
				t.Errorf("compressed ETag = %s, want %s", got, want)
			}
			if r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("compressed Content-Type = %q", r.Header.Get("Content-Type"))
			}
			// Either tag revalidates either variant.
			for _, tag := range []string{plainTag, r.Header.Get("ETag")} {
				c.get(path, "Accept-Encoding", tt.accept, "If-None-Match", tag).mustStatus(t, http.StatusNotModified)
				c.get(path, "If-None-Match", tag).mustStatus(t, http.StatusNotModified)
			}
		}
		for _, refuse := range []string{"gzip;q=0", "gzip;q=0, deflate;q=0", "br", "identity"} {
			r := c.get(path, "Accept-Encoding", refuse)
			if r.Header.Get("Content-Encoding") != "" {
				t.Errorf("Accept-Encoding %q: got Content-Encoding %q", refuse, r.Header.Get("Content-Encoding"))
			}
		}

		// Small bodies are not compressed, but still vary.
		small := c.get("/api/users?limit=1", "Accept-Encoding", "gzip")
		if small.Header.Get("Content-Encoding") != "" || len(small.body) >= 1024 || !hasVary(small, "Accept-Encoding") {
			t.Errorf("small body: %d bytes, Content-Encoding %q, Vary %q", len(small.body), small.Header.Get("Content-Encoding"), small.Header.Values("Vary"))
		}
		// ... unless identity is refused.
		forced := c.get("/api/users?limit=1", "Accept-Encoding", "gzip, identity;q=0")
		if forced.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(forced.decoded(t), small.body) {
			t.Errorf("identity;q=0: Content-Encoding %q", forced.Header.Get("Content-Encoding"))
		}
		// An empty body stays empty.
		opts := c.do("OPTIONS", path, "", "Accept-Encoding", "gzip, identity;q=0")
		if opts.Header.Get("Content-Encoding") != "" || len(opts.body) != 0 {
			t.Errorf("OPTIONS: Content-Encoding %q, body %q", opts.Header.Get("Content-Encoding"), opts.body)
		}
		// Errors are small JSON too.
		e := c.get("/api/users?limit=0", "Accept-Encoding", "gzip")
		if e.Header.Get("Content-Encoding") != "" || !hasVary(e, "Accept-Encoding") {
			t.Errorf("error: Content-Encoding %q, Vary %q", e.Header.Get("Content-Encoding"), e.Header.Values("Vary"))
		}
		// HEAD is compressed as GET is, with no body (TestHeadCompressed
		// compares every header).
		head := c.do("HEAD", path, "", "Accept-Encoding", "gzip")
		if get := c.get(path, "Accept-Encoding", "gzip"); head.Header.Get("Content-Encoding") != "gzip" ||
			head.Header.Get("Content-Length") != get.Header.Get("Content-Length") || len(head.body) != 0 {
			t.Errorf("HEAD: Content-Encoding %q, Content-Length %q (GET: %q), %d bytes of body",
				head.Header.Get("Content-Encoding"), head.Header.Get("Content-Length"), get.Header.Get("Content-Length"), len(head.body))
		}
		// 204 neither.
		del := c.do("DELETE", "/api/users/2", "", "Accept-Encoding", "gzip, identity;q=0")
		del.mustStatus(t, http.StatusNoContent)
		if del.Header.Get("Content-Encoding") != "" {
			t.Errorf("204 has Content-Encoding %q", del.Header.Get("Content-Encoding"))
		}
	})
}

func TestCompressedETagUpdates(t *testing.T) {
	// A client that GETs a compressed user and sends its ETag back in
	// If-Match must succeed: the tag names the version, not the coding.
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"` + strings.Repeat("n", 100) + `","email":"ann@example.com"}`)
		item := fmt.Sprintf("/api/users/%d", idOf(t, u))
		// A single user is under 1 KiB, so force compression.
		r := c.get(item, "Accept-Encoding", "gzip, identity;q=0")
		if r.Header.Get("Content-Encoding") != "gzip" || !strings.HasSuffix(r.Header.Get("ETag"), `-gzip"`) {
			t.Fatalf("GET: Content-Encoding %q, ETag %q", r.Header.Get("Content-Encoding"), r.Header.Get("ETag"))
		}
		w := c.do("PATCH", item, `{"age":40}`, "If-Match", r.Header.Get("ETag"))
		w.mustStatus(t, http.StatusOK)
		// The old compressed tag is now stale, under either coding.
		c.do("PATCH", item, `{"age":41}`, "If-Match", r.Header.Get("ETag")).
			mustError(t, http.StatusPreconditionFailed, resourceapi.CodePreconditionFailed)

		d := c.get(item, "Accept-Encoding", "deflate;q=1, identity;q=0")
		if d.Header.Get("Content-Encoding") != "deflate" {
			t.Fatalf("Content-Encoding = %q, want deflate", d.Header.Get("Content-Encoding"))
		}
		c.do("PUT", item, `{"name":"Ann","email":"ann@example.com"}`, "If-Match", d.Header.Get("ETag")).mustStatus(t, http.StatusOK)
	})
}

func hasVary(r *reply, name string) bool {
	for _, v := range r.Header.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), name) {
				return true
			}
		}
	}
	return false
}

// TestCompressWriter drives the compressing ResponseWriter with handlers that
// do what the API's own never do: no Content-Length, many small writes,
// flushes, no Content-Type.
func TestCompressWriter(t *testing.T) {
	serve := func(h http.HandlerFunc, accept string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		rhttp.Compress(h).ServeHTTP(rec, req)
		return rec
	}
	chunk := strings.Repeat(`{"k":"value"},`, 10) // 140 bytes

	t.Run("streamed writes cross the threshold", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("ETag", `"abc"`)
			for range 20 {
				io.WriteString(w, chunk)
			}
		}, "gzip")
		if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("ETag") != `"abc-gzip"` {
			t.Fatalf("headers = %v", rec.Header())
		}
		if got := mustGunzip(t, rec.Body.Bytes()); got != strings.Repeat(chunk, 20) {
			t.Errorf("decoded body is %d bytes, want %d", len(got), 20*len(chunk))
		}
	})
	t.Run("small writes stay plain", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, chunk)
			io.WriteString(w, chunk)
		}, "gzip")
		if rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != chunk+chunk {
			t.Errorf("headers %v, body %q", rec.Header(), rec.Body.String())
		}
		if got := rec.Header().Values("Vary"); len(got) != 1 || got[0] != "Accept-Encoding" {
			t.Errorf("Vary = %q", got)
		}
	})
	t.Run("no Content-Type is sniffed from the plain body", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>"+strings.Repeat("x", 2000))
		}, "deflate")
		if rec.Header().Get("Content-Encoding") != "deflate" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Errorf("headers = %v", rec.Header())
		}
	})
	t.Run("a flush before the threshold streams plain", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "first")
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("Flush: %v", err)
			}
			io.WriteString(w, strings.Repeat("x", 3000))
		}, "gzip")
		if rec.Header().Get("Content-Encoding") != "" || !rec.Flushed || rec.Body.Len() != 3005 {
			t.Errorf("headers %v, flushed %v, %d bytes", rec.Header(), rec.Flushed, rec.Body.Len())
		}
	})
	t.Run("a flush while compressing flushes the encoder", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("y", 3000))
			http.NewResponseController(w).Flush()
			io.WriteString(w, "tail")
		}, "gzip")
		if got := mustGunzip(t, rec.Body.Bytes()); got != strings.Repeat("y", 3000)+"tail" || !rec.Flushed {
			t.Errorf("decoded %d bytes, flushed %v", len(got), rec.Flushed)
		}
	})
	t.Run("incompressible types pass", func(t *testing.T) {
		for _, ct := range []string{"image/png", "text/event-stream", "application/octet-stream"} {
			rec := serve(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Write(bytes.Repeat([]byte{1}, 4000))
			}, "gzip")
			if rec.Header().Get("Content-Encoding") != "" || rec.Body.Len() != 4000 || len(rec.Header().Values("Vary")) != 0 {
				t.Errorf("%s: headers %v, %d bytes", ct, rec.Header(), rec.Body.Len())
			}
		}
	})
	t.Run("already encoded passes", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "br")
			w.Write(bytes.Repeat([]byte{'a'}, 4000))
		}, "gzip")
		if rec.Header().Get("Content-Encoding") != "br" || rec.Body.Len() != 4000 {
			t.Errorf("headers %v, %d bytes", rec.Header(), rec.Body.Len())
		}
	})
	t.Run("HEAD without a body announces no length", func(t *testing.T) {
		// A handler may skip the body of a HEAD. The encoder must then not
		// send its empty stream's framing, which net/http would announce as
		// the Content-Length.
		srv := httptest.NewServer(rhttp.Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4000")
			if r.Method != http.MethodHead {
				w.Write(bytes.Repeat([]byte{'a'}, 4000))
			}
		})))
		defer srv.Close()
		c := &client{tb: t, base: srv.URL, hc: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
		r := c.do("HEAD", "/", "", "Accept-Encoding", "gzip")
		if r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Length") != "" {
			t.Errorf("HEAD: Content-Encoding %q, Content-Length %q; want gzip and none",
				r.Header.Get("Content-Encoding"), r.Header.Get("Content-Length"))
		}
	})
	t.Run("Unwrap reaches the connection", func(t *testing.T) {
		var reached bool
		h := rhttp.Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// SetWriteDeadline is only on the real connection's writer, so
			// success proves ResponseController got through the wrapper.
			reached = http.NewResponseController(w).SetWriteDeadline(time.Time{}) == nil
		}))
		srv := httptest.NewServer(h)
		defer srv.Close()
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !reached {
			t.Error("ResponseController could not reach the connection through the compress writer")
		}
	})
}

func mustGunzip(t *testing.T, b []byte) string {
	t.Helper()
	r := &reply{Response: &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}}}, body: b}
	return string(r.decoded(t))
}
