package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/resourceapi/resourceapi"
)

// requestInfo is the state that middleware share with the error writer for
// one request. It is put in the context once, by requestID, and filled in by
// the middleware that come after it, so that the chain pays for one context
// value rather than one per middleware, and so that an outer middleware
// (recovery) sees what an inner one (version negotiation) decided.
//
// It is the request's context value as the context itself: the request's
// context from requestID on is its requestInfo, which answers infoKey, and
// resourceapi.CallerKey once requireCaller has let the request through, so
// that neither costs a context value and a copy of the request.
type requestInfo struct {
	context.Context // the request's context before requestID

	id      string
	version int // the API version of an /api request; 0 elsewhere

	// What identify found: the caller of a valid credential, or why the
	// credential was refused (neither: no credential).
	identified bool
	caller     *resourceapi.Caller
	authErr    error
	// required: requireCaller let the request through with caller, which
	// the context now carries (resourceapi.CallerFrom).
	required bool

	// The router's choice, for observe: routed once the request reached
	// the router, and the ServeMux pattern that served it ("" for none).
	routed  bool
	pattern string

	// start is when observe began the request, which logAccess, inside
	// it, takes for its own start; zero without an observer.
	start time.Time

	// The writers that wrap every response live here, so that they come
	// with this one allocation instead of one each.
	status statusWriter
	route  routeWriter

	// vals holds the values of the headers that every GET of a record
	// sets, one each: X-Request-Id (vals[0], requestID) and ETag,
	// Last-Modified and Content-Length (writeCacheable). Each header gets a
	// sub-slice of capacity 1, so that Header.Add copies instead of
	// writing into the next.
	vals [4]string
	// limits are the values of the rate-limit headers (rateLimit).
	limits rateLimitHeaders

	// idBuf holds a generated request id (id is a string over it, never
	// written again), and cacheBuf the validators and length of a GET of a
	// record (writeCacheable, once per request: cacheBufUsed): two
	// allocations fewer per request than strings of their own.
	idBuf        [idLen]byte
	cacheBuf     [cacheableLen]byte
	cacheBufUsed bool
}

type infoKey struct{}

// Value implements context.Context: the request's shared state under
// infoKey, its caller under resourceapi.CallerKey once requireCaller has
// admitted it, and the parent's values otherwise.
func (info *requestInfo) Value(key any) any {
	switch key {
	case infoKey{}:
		return info
	case resourceapi.CallerKey{}:
		if info.required {
			return info.caller
		}
	}
	return info.Context.Value(key)
}

// infoFrom returns the request's shared state, or a blank one when the
// request did not pass through requestID (a handler under test on its own).
func infoFrom(r *http.Request) *requestInfo {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
}

// RequestID returns the id of the request that ctx belongs to, or "" outside
// a request served by a Server. Packages that log on behalf of a request
// (graph, oauth) use it to tie their lines to the access log.
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// maxRequestIDLen bounds a client-sent X-Request-ID; longer ones are replaced.
const maxRequestIDLen = 128

// requestID gives every request an id, reusing the client's X-Request-ID when
// it is safe to echo and log, and puts it in the response before anything
// else can answer, so that every response carries it.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := headerValue(r.Header, "X-Request-Id")
		info := &requestInfo{Context: r.Context(), id: id}
		if !validRequestID(id) {
			// A string over the info's own bytes, which nothing writes
			// again: the id costs no allocation of its own.
			b := s.ids.append(info.idBuf[:0])
			info.id = unsafe.String(unsafe.SliceData(b), len(b))
		}
		info.vals[0] = info.id
		w.Header()["X-Request-Id"] = info.vals[0:1:1]
		next.ServeHTTP(w, r.WithContext(info))
	})
}

// validRequestID accepts 1 to 128 characters from [A-Za-z0-9._-]: enough for
// UUIDs and trace ids, and nothing that could forge a log line or a header.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// idGenerator makes request ids unique across processes without a syscall
// per request: a random prefix drawn once, then a counter.
type idGenerator struct {
	prefix string
	n      atomic.Uint64
}

func newIDGenerator() *idGenerator {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return &idGenerator{prefix: hex.EncodeToString(b[:])}
}

// idLen is the longest id append appends: 16 hex digits, a dash and a
// uint64 in base 36 (13 digits).
const idLen = 16 + 1 + 13

// append appends a new id to b: "<prefix>-<counter in base 36>", e.g.
// "9f86d081884c7d65-1a".
func (g *idGenerator) append(b []byte) []byte {
	b = append(b, g.prefix...)
	b = append(b, '-')
	return strconv.AppendUint(b, g.n.Add(1), 36)
}
