package graph

import (
	"net/http"
	"strings"
)

// graphiqlCSP is the Content-Security-Policy of GraphiQL's page: everything
// from this server, nothing from elsewhere. connect-src names the WebSocket
// schemes, which 'self' covers only in newer browsers.
const graphiqlCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self' ws: wss:; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveGraphiQL answers a browser's GET /graphql with GraphiQL's page.
func (h *Handler) serveGraphiQL(w http.ResponseWriter, r *http.Request) {
	setGraphiQLHeaders(w)
	w.Header().Add("Vary", "Accept")
	r2 := *r
	u := *r.URL
	u.Path = "/"
	r2.URL = &u
	h.assets.ServeHTTP(w, &r2)
}

// serveAsset serves GraphiQL's scripts and styles, under /graphql/graphiql/.
func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.methodNotAllowed(w, "GET, HEAD, OPTIONS", r)
		return
	}
	setGraphiQLHeaders(w)
	r2 := *r
	u := *r.URL
	u.Path = strings.TrimPrefix(r.URL.Path, "/graphql/graphiql")
	r2.URL = &u
	h.assets.ServeHTTP(w, &r2)
}

func setGraphiQLHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", graphiqlCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
}
