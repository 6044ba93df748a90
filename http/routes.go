package http

import (
	"net/http"

	"github.com/resourceapi/resourceapi"
)

// apiPrefixes are where the API is mounted: /api is version 1, and each
// version also has its own prefix. Versions differ only in how errors are
// written (see negotiateVersion), so they share handlers; an unknown version
// (/api/v3/...) matches no route and is 404.
var apiPrefixes = []string{"/api", "/api/v1", "/api/v2"}

// routes is the whole HTTP surface. Every declared resource
// (resourceapi.Declared) gets its collection and item routes under each API
// prefix, and, when it has a parent, the same nested under the parent's item
// (/api/users/{parent}/api-keys). GET routes answer HEAD too; routeErrors
// answers OPTIONS on the paths these routes have, and 404 and 405.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.healthz())
	mux.Handle("GET /readyz", s.readyz())
	if s.oauth != nil {
		mux.Handle("/oauth/", s.oauth)
		mux.Handle("GET /.well-known/oauth-authorization-server", s.oauth)
	}
	if s.graphql != nil {
		mux.Handle("/graphql", s.withIdentity(s.graphql))
		mux.Handle("/graphql/", s.withIdentity(s.graphql))
	}

	for _, res := range resourceapi.Declared() {
		h := s.resource(res)
		for _, prefix := range apiPrefixes {
			collections := []string{prefix + "/" + res.Path}
			if p := res.ParentResource(); p != nil {
				collections = append(collections, prefix+"/"+p.Path+"/{parent}/"+res.Path)
			}
			for _, collection := range collections {
				item := collection + "/{id}"
				mux.Handle("GET "+collection, s.api(h.list()))
				mux.Handle("POST "+collection, s.api(h.create()))
				mux.Handle("GET "+item, s.api(h.get()))
				mux.Handle("PUT "+item, s.api(h.replace()))
				mux.Handle("PATCH "+item, s.api(h.update()))
				mux.Handle("DELETE "+item, s.api(h.remove()))
			}
		}
	}
	return s.routeErrors(mux)
}

// api wraps every /api endpoint: it runs only for a caller with a valid
// credential (requireCaller); rate limiting has already counted the request
// (see Server.middleware).
func (s *Server) api(h http.Handler) http.Handler {
	return s.requireCaller(h)
}
