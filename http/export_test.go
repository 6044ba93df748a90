package http

import (
	"net/http"

	"github.com/resourceapi/resourceapi"
)

// Internals exposed to the black-box tests of package http_test, which test
// them directly where going through a server would not reach every case.
var (
	AppendString     = resourceapi.AppendJSONString
	AppendTime       = appendTime
	AppendValue      = appendValue
	NegotiateCoding  = negotiateCoding
	MatchTags        = matchTags
	ETagOf           = etagOf
	WithCodingSuffix = withCodingSuffix
	ValidRequestID   = validRequestID
	IsJSON           = isJSON
	AcceptVersion    = acceptVersion
)

// Coding names the result of NegotiateCoding for tests.
func (c coding) Name() string { return c.String() }

// Compress is the compression middleware on its own.
func Compress(h http.Handler) http.Handler { return (&Server{}).compress(h) }

// Middleware wraps h in the middleware chain of a Server made from cfg, so
// tests can put handlers behind it that the API does not have (one that
// panics).
func Middleware(cfg Config, h http.Handler) http.Handler { return NewServer(cfg).middleware(h) }

// RenderRecord renders rec as the API shows it (only fields, when not nil).
func RenderRecord(res *resourceapi.Resource, rec resourceapi.Record, fields []string) ([]byte, error) {
	return newView(res).appendRecord(nil, rec, fields)
}

// RecordETag is the entity tag of rec's full representation.
func RecordETag(res *resourceapi.Resource, rec resourceapi.Record) (string, error) {
	return newView(res).etag(rec)
}
