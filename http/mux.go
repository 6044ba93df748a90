package http

import (
	"net/http"
	"slices"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// methodOrder is the order in which Allow lists methods: reads, then writes
// from create to delete, then OPTIONS. ServeMux sorts them alphabetically.
var methodOrder = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// routeErrors wraps the router so that its own answers, plain-text 404 and
// 405, become the JSON error envelope, and so that OPTIONS is answered
// without a route of its own on every path that has routes: 200, empty body,
// and the Allow list the router computes from them (the router answers such
// an OPTIONS with 405; on a path without routes it stays 404). The router
// marks its own answers by leaving r.Pattern empty; a handler it chose
// always has one.
func (s *Server) routeErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoFrom(r)
		rw := &info.route
		*rw = routeWriter{ResponseWriter: w, s: s, r: r}
		// The router sets r.Pattern on this request as it chooses; the
		// route is kept for observe, even when the handler panics.
		info.routed = true
		defer func() { info.pattern = r.Pattern }()
		mux.ServeHTTP(rw, r)
	})
}

// routeWriter intercepts the status the router writes when no route matched.
type routeWriter struct {
	http.ResponseWriter
	s        *Server
	r        *http.Request
	answered bool // the router's own body is discarded
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (rw *routeWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Flush sends buffered data to the client, when the wrapped writer can.
func (rw *routeWriter) Flush() { http.NewResponseController(rw.ResponseWriter).Flush() }

func (rw *routeWriter) WriteHeader(code int) {
	if rw.answered {
		return
	}
	if rw.r.Pattern != "" || (code != http.StatusNotFound && code != http.StatusMethodNotAllowed) {
		rw.ResponseWriter.WriteHeader(code)
		return
	}
	rw.answered = true
	h := rw.Header()
	h.Del("X-Content-Type-Options")
	if code == http.StatusNotFound {
		rw.s.respondError(rw.ResponseWriter, rw.r, code,
			resourceapi.Errorf(resourceapi.CodeNotFound, "Nothing is found at %s", truncate(rw.r.URL.Path, 200)))
		return
	}
	allow := allowList(h.Get("Allow"))
	h.Set("Allow", allow)
	if strings.Contains(allow, http.MethodPatch) {
		h["Accept-Patch"] = acceptPatch
	}
	if rw.r.Method == http.MethodOptions {
		h.Del("Content-Type")
		h.Set("Content-Length", "0")
		rw.ResponseWriter.WriteHeader(http.StatusOK)
		return
	}
	rw.s.respondError(rw.ResponseWriter, rw.r, code,
		resourceapi.Errorf(resourceapi.CodeMethodNotAllowed, "Method %s is not allowed here; allowed: %s", truncate(rw.r.Method, 20), allow))
}

func (rw *routeWriter) Write(p []byte) (int, error) {
	if rw.answered {
		return len(p), nil
	}
	return rw.ResponseWriter.Write(p)
}

// allowList returns the router's comma-separated methods, with OPTIONS (which
// routeErrors answers on every path that has routes) and in methodOrder.
func allowList(routerAllow string) string {
	methods := []string{http.MethodOptions}
	for rest := routerAllow; rest != ""; {
		var m string
		m, rest, _ = strings.Cut(rest, ",")
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(methods, m) {
			methods = append(methods, m)
		}
	}
	rank := func(m string) int {
		if i := slices.Index(methodOrder, m); i >= 0 {
			return i
		}
		return len(methodOrder)
	}
	slices.SortStableFunc(methods, func(a, b string) int { return rank(a) - rank(b) })
	return strings.Join(methods, ", ")
}
