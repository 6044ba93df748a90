package http_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

var strongETag = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

func TestCacheHeaders(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"Ann","email":"ann@example.com"}`)
		item := fmt.Sprintf("/api/users/%d", idOf(t, u))
		for _, path := range []string{item, "/api/users", "/api/users?fields=id", item + "?fields=name"} {
			r := c.get(path)
			r.mustStatus(t, http.StatusOK)
			if tag := r.Header.Get("ETag"); !strongETag.MatchString(tag) {
				t.Errorf("GET %s: ETag = %q, want a strong tag", path, tag)
			}
			if cc := r.Header.Get("Cache-Control"); cc != "private, no-cache" {
				t.Errorf("GET %s: Cache-Control = %q", path, cc)
			}
		}
		// Last-Modified is updated_at, on single records only.
		r := c.get(item)
		updated, _ := time.Parse(time.RFC3339, u["updated_at"].(string))
		if got, want := r.Header.Get("Last-Modified"), updated.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("Last-Modified = %q, want %q", got, want)
		}
		if lm := c.get("/api/users").Header.Get("Last-Modified"); lm != "" {
			t.Errorf("collection has Last-Modified %q", lm)
		}
		// The ETag is the full record's whatever fields are selected, so
		// it can be used to update.
		if a, b := r.Header.Get("ETag"), c.get(item+"?fields=name").Header.Get("ETag"); a != b {
			t.Errorf("ETag with fields = %s, without = %s; want the same", b, a)
		}
		// Write responses carry the new ETag, and it is the one GET gives.
		w := c.do("PATCH", item, `{"age":5}`)
		if got, want := w.Header.Get("ETag"), c.get(item).Header.Get("ETag"); got != want || got == r.Header.Get("ETag") {
			t.Errorf("PATCH ETag = %s, GET after = %s, before = %s", got, want, r.Header.Get("ETag"))
		}
		// A collection's tag follows its content.
		before := c.get("/api/users").Header.Get("ETag")
		c.mustUser("Bo", "bo@example.com")
		if after := c.get("/api/users").Header.Get("ETag"); after == before {
			t.Error("collection ETag did not change when a user was added")
		}
	})
}

func TestConditionalGet(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"Ann","email":"ann@example.com"}`)
		item := fmt.Sprintf("/api/users/%d", idOf(t, u))
		r := c.get(item)
		tag, lastMod := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
		lm, _ := http.ParseTime(lastMod)

		notModified := func(path string, headers ...string) {
			t.Helper()
			for _, method := range []string{"GET", "HEAD"} {
				r := c.do(method, path, "", headers...)
				r.mustStatus(t, http.StatusNotModified)
				if len(r.body) != 0 {
					t.Errorf("304 has a body: %q", r.body)
				}
				if r.Header.Get("ETag") == "" || r.Header.Get("Cache-Control") != "private, no-cache" || !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Accept-Encoding") {
					t.Errorf("304 headers: %v", r.Header)
				}
				if r.Header.Get("Content-Encoding") != "" {
					t.Errorf("304 has Content-Encoding %q", r.Header.Get("Content-Encoding"))
				}
			}
		}
		modified := func(path string, headers ...string) {
			t.Helper()
			c.get(path, headers...).mustStatus(t, http.StatusOK)
		}

		notModified(item, "If-None-Match", tag)
		notModified(item, "If-None-Match", "W/"+tag) // weak comparison
		notModified(item, "If-None-Match", `"other", `+tag)
		notModified(item, "If-None-Match", `"other"`, "If-None-Match", tag)
		notModified(item, "If-None-Match", "*")
		notModified(item+"?fields=id", "If-None-Match", tag)
		modified(item, "If-None-Match", `"other"`)
		modified(item, "If-None-Match", strings.Trim(tag, `"`)) // unquoted is not a tag

		notModified(item, "If-Modified-Since", lastMod)
		notModified(item, "If-Modified-Since", lm.Add(time.Hour).Format(http.TimeFormat))
		modified(item, "If-Modified-Since", lm.Add(-time.Second).Format(http.TimeFormat))
		modified(item, "If-Modified-Since", "not a date")
		// If-None-Match wins over If-Modified-Since.
		modified(item, "If-None-Match", `"other"`, "If-Modified-Since", lastMod)

		coll := c.get("/api/users")
		notModified("/api/users", "If-None-Match", coll.Header.Get("ETag"))
		// Collections do not answer If-Modified-Since.
		modified("/api/users", "If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))

		// After a change, the old tag no longer matches.
		c.do("PATCH", item, `{"name":"Ann B"}`).mustStatus(t, http.StatusOK)
		modified(item, "If-None-Match", tag)
		modified("/api/users", "If-None-Match", coll.Header.Get("ETag"))
	})
}

func TestIfMatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		item := fmt.Sprintf("/api/users/%d", id)
		tag := c.get(item).Header.Get("ETag")
		failed := func(method, path, body string, headers ...string) {
			t.Helper()
			c.do(method, path, body, headers...).mustError(t, http.StatusPreconditionFailed, resourceapi.CodePreconditionFailed)
		}

		for _, method := range []string{"PUT", "PATCH", "DELETE"} {
			body := `{"name":"X","email":"ann@example.com"}`
			if method == "DELETE" {
				body = ""
			}
			failed(method, item, body, "If-Match", `"0000000000000000"`)
			failed(method, item, body, "If-Match", "W/"+tag) // weak never matches If-Match
			failed(method, item, body, "If-Match", strings.Trim(tag, `"`))
			failed(method, item, body, "If-None-Match", "*")
			failed(method, item, body, "If-None-Match", tag)
			failed(method, item, body, "If-Unmodified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")
		}
		// Nothing was changed by the failures.
		if got := c.get(item).Header.Get("ETag"); got != tag {
			t.Fatalf("ETag changed to %s after failed preconditions", got)
		}

		r := c.do("PATCH", item, `{"name":"Ann B"}`, "If-Match", `"0000000000000000", `+tag)
		r.mustStatus(t, http.StatusOK)
		newTag := r.Header.Get("ETag")
		failed("PATCH", item, `{"name":"Lost update"}`, "If-Match", tag) // the old version
		c.do("PUT", item, `{"name":"Ann C","email":"ann@example.com"}`, "If-Match", newTag).mustStatus(t, http.StatusOK)
		c.do("PATCH", item, `{"age":3}`, "If-Match", "*").mustStatus(t, http.StatusOK)
		// If-Match is checked before If-Unmodified-Since, which it overrides.
		c.do("PATCH", item, `{"age":4}`, "If-Match", "*", "If-Unmodified-Since", "Mon, 01 Jan 2001 00:00:00 GMT").mustStatus(t, http.StatusOK)
		c.do("PATCH", item, `{"age":5}`, "If-Unmodified-Since", time.Now().Add(24*time.Hour).UTC().Format(http.TimeFormat)).mustStatus(t, http.StatusOK)

		// A tag from a fields= GET works too.
		tag = c.get(item + "?fields=id").Header.Get("ETag")
		c.do("PATCH", item, `{"age":6}`, "If-Match", tag).mustStatus(t, http.StatusOK)

		// If-Match on an absent record fails, even with *; If-None-Match: *
		// makes PUT create-only.
		absent := fmt.Sprintf("/api/users/%d", id+50)
		failed("PUT", absent, `{"name":"N","email":"n@example.com"}`, "If-Match", "*")
		failed("PUT", absent, `{"name":"N","email":"n@example.com"}`, "If-Match", tag)
		failed("PATCH", absent, `{"name":"N"}`, "If-Match", "*")
		c.do("PUT", absent, `{"name":"N","email":"n@example.com"}`, "If-None-Match", "*").mustStatus(t, http.StatusCreated)
		failed("PUT", absent, `{"name":"N","email":"n@example.com"}`, "If-None-Match", "*")

		tag = c.get(item).Header.Get("ETag")
		c.do("DELETE", item, "", "If-Match", tag).mustStatus(t, http.StatusNoContent)
	})
}

func TestHead(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		for _, path := range []string{fmt.Sprintf("/api/users/%d", id), "/api/users", "/api/v2/users?fields=id", "/healthz", "/api/users/999", "/api/users?limit=0"} {
			get, head := c.get(path, "Accept-Encoding", "gzip"), c.do("HEAD", path, "", "Accept-Encoding", "gzip")
			if head.StatusCode != get.StatusCode {
				t.Errorf("HEAD %s: status %d, GET %d", path, head.StatusCode, get.StatusCode)
			}
			if len(head.body) != 0 {
				t.Errorf("HEAD %s has a body", path)
			}
			sameHeaders(t, "HEAD "+path, head, get)
		}
	})
}

// TestHeadCompressed sends HEAD and GET for bodies of 1 KiB and more, which
// GET compresses: HEAD must describe the same response, encoding, tag and
// length included (docs/api.md: same status and headers as GET, no body).
func TestHeadCompressed(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := mustManyUsers(t, c, 100)
		item := fmt.Sprintf("/api/users/%d", id)
		for _, tt := range []struct {
			path, accept, coding string
		}{
			// 100 records compress to more than net/http buffers, so GET
			// streams them; 8 records compress to less, so GET gets a
			// Content-Length. HEAD must match either way.
			{"/api/users?limit=100", "gzip", "gzip"},
			{"/api/users?limit=100", "deflate", "deflate"},
			{"/api/v2/users?limit=100&sort=name", "gzip;q=0.5, deflate;q=0.2", "gzip"},
			{"/api/users?limit=8", "gzip", "gzip"},
			{"/api/users?limit=8", "deflate", "deflate"},
			{item, "gzip, identity;q=0", "gzip"},
			{item, "gzip", ""}, // under 1 KiB: not compressed
			{"/api/users?limit=100", "identity", ""},
		} {
			name := fmt.Sprintf("%s (Accept-Encoding: %s)", tt.path, tt.accept)
			get := c.get(tt.path, "Accept-Encoding", tt.accept)
			get.mustStatus(t, http.StatusOK)
			if got := get.Header.Get("Content-Encoding"); got != tt.coding {
				t.Fatalf("GET %s: Content-Encoding = %q, want %q", name, got, tt.coding)
			}
			head := c.do("HEAD", tt.path, "", "Accept-Encoding", tt.accept)
			head.mustStatus(t, http.StatusOK)
			if len(head.body) != 0 {
				t.Errorf("HEAD %s has a body", name)
			}
			sameHeaders(t, "HEAD "+name, head, get)
		}
	})
}

// TestNotModifiedCompressed checks that a 304 carries the ETag of the 200 it
// stands for (RFC 9110 section 15.4.5): with the coding suffix when that 200
// would have been compressed, without it otherwise. Either tag revalidates.
func TestNotModifiedCompressed(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := mustManyUsers(t, c, 100)
		item := fmt.Sprintf("/api/users/%d", id)
		for _, tt := range []struct {
			path, accept, suffix string
		}{
			{"/api/users?limit=100", "gzip", "-gzip"},
			{"/api/users?limit=100", "deflate", "-deflate"},
			{"/api/users?limit=100", "deflate;q=0.9, gzip;q=0.1", "-deflate"},
			{"/api/users?limit=100", "", ""},
			{"/api/users?limit=100", "gzip;q=0, deflate;q=0", ""},
			{item, "gzip", ""}, // under 1 KiB: the 200 is not compressed
			{item, "gzip, identity;q=0", "-gzip"},
			{item, "deflate, identity;q=0", "-deflate"},
		} {
			name := fmt.Sprintf("%s (Accept-Encoding: %s)", tt.path, tt.accept)
			ok := c.get(tt.path, "Accept-Encoding", tt.accept)
			ok.mustStatus(t, http.StatusOK)
			tag := ok.Header.Get("ETag")
			plain := c.get(tt.path).Header.Get("ETag")
			if want := strings.TrimSuffix(plain, `"`) + tt.suffix + `"`; tag != want {
				t.Fatalf("GET %s: ETag = %s, want %s", name, tag, want)
			}
			for _, method := range []string{"GET", "HEAD"} {
				for _, inm := range []string{tag, plain} {
					r := c.do(method, tt.path, "", "Accept-Encoding", tt.accept, "If-None-Match", inm)
					r.mustStatus(t, http.StatusNotModified)
					if got := r.Header.Get("ETag"); got != tag {
						t.Errorf("%s %s, If-None-Match %s: 304 ETag = %s, want the 200's %s", method, name, inm, got, tag)
					}
					for _, h := range []string{"Cache-Control", "Last-Modified", "Vary", "API-Version"} {
						if got, want := r.Header.Values(h), ok.Header.Values(h); !slices.Equal(got, want) {
							t.Errorf("%s %s: 304 %s = %q, the 200 has %q", method, name, h, got, want)
						}
					}
					for _, h := range []string{"Content-Encoding", "Content-Length", "Content-Type"} {
						if got := r.Header.Get(h); got != "" {
							t.Errorf("%s %s: 304 has %s %q", method, name, h, got)
						}
					}
				}
			}
		}
	})
}

// mustManyUsers creates n users whose names and emails compress poorly, so
// that a page of them is well over 1 KiB even compressed, and returns the id
// of the last.
func mustManyUsers(t *testing.T, c *client, n int) int64 {
	t.Helper()
	var id int64
	for i := range n {
		x := strconv.FormatUint(uint64(i+1)*0x9e3779b97f4a7c15, 36)
		id = c.mustUser("User "+x, "u"+x+"@example.com", fmt.Sprintf(`,"age":%d`, i%150))
	}
	return id
}

// sameHeaders reports every header in which a differs from b, except those
// that differ between any two responses (Date, X-Request-Id).
func sameHeaders(t *testing.T, name string, a, b *reply) {
	t.Helper()
	for h := range a.Header {
		if h != "Date" && h != "X-Request-Id" && !slices.Equal(a.Header[h], b.Header[h]) {
			t.Errorf("%s: %s = %q, GET has %q", name, h, a.Header[h], b.Header[h])
		}
	}
	for h := range b.Header {
		if _, ok := a.Header[h]; !ok && h != "Date" && h != "X-Request-Id" {
			t.Errorf("%s: no %s, GET has %q", name, h, b.Header[h])
		}
	}
	if a.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: no X-Request-ID", name)
	}
}

// TestGetFromMemo: a GET of a record the store shares is rendered once and
// then sent from the record's memo (resourceapi.Memo). Every GET of it sends
// the bytes a fresh rendering would (the same record with every field
// selected, rendered anew), and after a write the new record's, never the
// memo of the old.
func TestGetFromMemo(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		item := fmt.Sprintf("/api/users/%d", id)
		all := item + "?fields=" + strings.Join(resourceapi.Users.VisibleFields(), ",")
		check := func(what, wantBody string) {
			t.Helper()
			fresh := c.get(all)
			fresh.mustStatus(t, http.StatusOK)
			if wantBody == "" {
				wantBody = string(fresh.body)
			}
			for i := range 3 { // a miss, the memo's fill, its hit
				r := c.get(item)
				r.mustStatus(t, http.StatusOK)
				if string(r.body) != wantBody || string(r.body) != string(fresh.body) {
					t.Fatalf("%s: GET %d = %s, want %s (rendered anew: %s)", what, i, r.body, wantBody, fresh.body)
				}
				for _, h := range []string{"ETag", "Last-Modified", "Cache-Control", "Content-Type"} {
					if got, want := r.Header.Get(h), fresh.Header.Get(h); got != want {
						t.Errorf("%s: GET %d: %s = %q, want %q", what, i, h, got, want)
					}
				}
				if got, want := r.Header.Get("Content-Length"), strconv.Itoa(len(wantBody)); got != want {
					t.Errorf("%s: GET %d: Content-Length = %q, want %q", what, i, got, want)
				}
				h := c.do("HEAD", item, "")
				if h.Header.Get("ETag") != r.Header.Get("ETag") || h.Header.Get("Content-Length") != r.Header.Get("Content-Length") || len(h.body) != 0 {
					t.Errorf("%s: HEAD %d: %v, body %q", what, i, h.Header, h.body)
				}
			}
		}
		check("created", "")
		w := c.do("PATCH", item, `{"name":"Ann B"}`)
		w.mustStatus(t, http.StatusOK)
		check("after a PATCH", string(w.body))
		w = c.do("PUT", item, `{"name":"Ann C","email":"ann@example.com"}`)
		w.mustStatus(t, http.StatusOK)
		check("after a PUT", string(w.body))
	})
}
