package http

import (
	"net/http"
	"slices"

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
//
// The OpenAPI document (openapi.go) is generated from the same list, so
// nothing is served that it does not describe.
func (s *Server) routes() []route { return s.routesOf(resourceapi.Declared()) }

// routesOf is the surface of a server of the given resources.
func (s *Server) routesOf(resources []*resourceapi.Resource) []route {
	rs := []route{
		{method: "GET", path: "/healthz", kind: kindHealthz, handler: s.healthz()},
		{method: "GET", path: "/readyz", kind: kindReadyz, handler: s.readyz()},
		{method: "GET", path: "/api/openapi.json", kind: kindOpenAPI, handler: s.openAPI()},
		{method: "GET", path: "/docs", kind: kindDocs, handler: s.docsPage()},
		{method: "GET", path: "/docs/{file}", kind: kindDocsFile, handler: s.docsPage()},
	}
	rs = append(rs,
		route{method: "GET", path: "/{$}", kind: kindFront, handler: s.front()},
		route{method: "GET", path: "/favicon.ico", kind: kindFavicon, handler: s.faviconHandler()})
	if s.metrics != nil {
		rs = append(rs, route{method: "GET", path: "/metrics", kind: kindMetrics, handler: s.api(s.metricsPage())})
	}
	if s.oauth != nil {
		// The authorization server routes its own paths (package oauth).
		rs = append(rs,
			route{path: "/oauth/", kind: kindOAuth, handler: s.oauth},
			route{method: "GET", path: "/.well-known/oauth-authorization-server", kind: kindOAuth, handler: s.oauth})
	}
	if s.graphql != nil {
		// The GraphQL handler serves /graphql and everything under it.
		rs = append(rs,
			route{path: "/graphql", kind: kindGraphQL, handler: s.withIdentity(s.graphql)},
			route{path: "/graphql/", kind: kindGraphQL, handler: s.withIdentity(s.graphql)})
	}
	if slices.Contains(resources, resourceapi.Users) {
		// Ending a user's sessions (every refresh token and access token
		// issued to them) is an operation on the user, not a resource of
		// its own.
		for _, prefix := range apiPrefixes {
			rs = append(rs, route{method: "DELETE", prefix: prefix, path: "/users/{id}/sessions", kind: kindSessions,
				handler: s.api(s.endSessions())})
			// The caller's own user; the literal wins over /users/{id}.
			rs = append(rs, route{method: "GET", prefix: prefix, path: "/users/me", kind: kindMe,
				handler: s.api(s.me())})
		}
	}
	if s.events != nil {
		for _, prefix := range apiPrefixes {
			rs = append(rs, route{method: "GET", prefix: prefix, path: "/events", kind: kindEvents, handler: s.api(s.eventStream())})
		}
	}
	if _, ok := s.store.(resourceapi.WebhookStore); ok {
		for _, prefix := range apiPrefixes {
			rs = append(rs, s.webhookRoutes(prefix)...)
		}
	}
	for _, res := range resources {
		h := s.resource(res)
		for _, prefix := range apiPrefixes {
			collections := []string{"/" + res.Path}
			if p := res.ParentResource(); p != nil {
				collections = append(collections, "/"+p.Path+"/{parent}/"+res.Path)
			}
			for _, c := range collections {
				item := c + "/{id}"
				rs = append(rs,
					route{method: "GET", prefix: prefix, path: c, kind: kindList, res: res, handler: s.api(h.list())},
					route{method: "POST", prefix: prefix, path: c, kind: kindCreate, res: res, handler: s.api(h.create())},
					route{method: "GET", prefix: prefix, path: item, kind: kindGet, res: res, handler: s.api(h.get())},
					route{method: "PUT", prefix: prefix, path: item, kind: kindReplace, res: res, handler: s.api(h.replace())},
					route{method: "PATCH", prefix: prefix, path: item, kind: kindUpdate, res: res, handler: s.api(h.update())},
					route{method: "DELETE", prefix: prefix, path: item, kind: kindRemove, res: res, handler: s.api(h.remove())},
				)
			}
		}
	}
	return rs
}

// route is one entry of the HTTP surface: a ServeMux pattern and what it
// serves, described well enough for the OpenAPI document.
type route struct {
	// method is empty for a path handed to another package, which answers
	// every method itself (/oauth/, /graphql).
	method string
	// prefix is the API prefix (one of apiPrefixes) of a resource route;
	// "" elsewhere.
	prefix  string
	path    string
	kind    routeKind
	res     *resourceapi.Resource
	handler http.Handler
}

// pattern returns the route's ServeMux pattern: "GET /api/users/{id}".
func (rt route) pattern() string {
	if rt.method == "" {
		return rt.prefix + rt.path
	}
	return rt.method + " " + rt.prefix + rt.path
}

// routeKind says what a route does, for the OpenAPI document.
type routeKind int

const (
	kindList routeKind = iota + 1
	kindCreate
	kindGet
	kindReplace
	kindUpdate
	kindRemove
	kindHealthz
	kindReadyz
	kindOpenAPI
	kindDocs
	kindDocsFile
	kindOAuth
	kindGraphQL
	kindSessions
	kindMetrics
	kindEvents
	kindFront
	kindFavicon
	kindMe
	kindWebhooks
)

// mux registers the routes on a ServeMux, behind routeErrors.
func (s *Server) mux(rs []route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range rs {
		mux.Handle(rt.pattern(), rt.handler)
		if rt.kind == kindMe {
			// Without these, the methods of /users/{id} would answer
			// here too (as 404 for the id "me").
			for _, m := range []string{"PUT", "PATCH", "DELETE", "POST", "OPTIONS"} {
				mux.Handle(m+" "+rt.prefix+rt.path, s.onlyGet())
			}
		}
	}
	s.serveMux = mux
	return s.routeErrors(mux)
}

// api wraps every /api endpoint: it runs only for a caller with a valid
// credential (requireCaller); rate limiting has already counted the request
// (see Server.middleware).
func (s *Server) api(h http.Handler) http.Handler {
	return s.requireCaller(h)
}
