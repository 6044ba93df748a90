package http

import (
	"net/http"

	"github.com/resourceapi/resourceapi"
)

// resources lists the collections served over REST. A new resource is its
// declaration in the domain and one entry here.
var resources = []*resourceapi.Resource{
	resourceapi.Users,
}

// apiPrefixes are where the API is mounted: /api is version 1, and each
// version also has its own prefix. Versions differ only in how errors are
// written (see negotiateVersion), so they share handlers; an unknown version
// (/api/v3/...) matches no route and is 404.
var apiPrefixes = []string{"/api", "/api/v1", "/api/v2"}

// routes is the whole HTTP surface. GET routes answer HEAD too; routeErrors
// answers OPTIONS on the paths these routes have, and 404 and 405.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.healthz())
	mux.Handle("GET /readyz", s.readyz())

	for _, res := range resources {
		h := s.resource(res)
		for _, prefix := range apiPrefixes {
			collection := prefix + "/" + res.Name
			item := collection + "/{id}"
			mux.Handle("GET "+collection, s.api(h.list()))
			mux.Handle("POST "+collection, s.api(h.create()))
			mux.Handle("GET "+item, s.api(h.get()))
			mux.Handle("PUT "+item, s.api(h.replace()))
			mux.Handle("PATCH "+item, s.api(h.update()))
			mux.Handle("DELETE "+item, s.api(h.remove()))
		}
	}
	return s.routeErrors(mux)
}

// api wraps every /api endpoint: the caller is resolved first, then (a later
// issue) rate limited per caller, then served.
func (s *Server) api(h http.Handler) http.Handler {
	// Rate limiting goes here: s.authenticate(s.rateLimit(h)), so that the
	// limit is keyed by the caller and its X-RateLimit-* headers are set
	// before the handler writes.
	return s.authenticate(h)
}
