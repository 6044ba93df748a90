package http

import (
	"net/http"

	"github.com/resourceapi/resourceapi"
)

// OpenAPIDocument returns the document the server serves at
// /api/openapi.json.
func (s *Server) OpenAPIDocument() []byte { return s.openapi.body }

// RoutePatterns returns the ServeMux patterns of the server's routes.
func (s *Server) RoutePatterns() []string {
	var out []string
	for _, rt := range s.table {
		out = append(out, rt.pattern())
	}
	return out
}

// OpenAPIOf returns the document of a server that would serve res (declared
// or not yet), with default settings and OAuth and GraphQL mounted.
func OpenAPIOf(res ...*resourceapi.Resource) ([]byte, error) {
	s := &Server{vendor: "example", maxBody: DefaultMaxBodyBytes, oauth: struct{ http.Handler }{}, graphql: struct{ http.Handler }{}}
	return newOpenAPI(s.routesOf(res), openAPIContext{vendor: s.vendor, oauth: true, limited: true, maxBody: s.maxBody})
}
