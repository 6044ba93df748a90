package http

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// minCompressSize is the smallest body worth compressing: below it the
// framing and the CPU cost more than the bytes saved.
const minCompressSize = 1024

// compressionLevel trades ratio for speed. JSON compresses well even at low
// levels, and an API spends its CPU on requests, not on squeezing bytes.
const compressionLevel = 4

// coding is a content coding the server can produce.
type coding int8

const (
	identity coding = iota
	codingGzip
	codingDeflate // HTTP "deflate" is the zlib format (RFC 9110 section 8.4.1.2)
)

func (c coding) String() string {
	switch c {
	case codingGzip:
		return "gzip"
	case codingDeflate:
		return "deflate"
	}
	return "identity"
}

var (
	gzipPool = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, compressionLevel) // the level is valid
		return w
	}}
	zlibPool = sync.Pool{New: func() any {
		w, _ := zlib.NewWriterLevel(nil, compressionLevel)
		return w
	}}
	compressWriterPool = sync.Pool{New: func() any {
		return &compressWriter{buf: make([]byte, 0, minCompressSize)}
	}}
)

// compress encodes responses of compressible types with gzip or deflate when
// the client accepts them (q-values honoured) and the body is at least
// minCompressSize, buffering up to that much to decide. The entity tag of a
// compressed response gets a coding suffix (see codingSuffixes).
//
// HEAD is answered exactly as GET would be, headers included (docs/api.md:
// same status and headers, no body): the handler writes the body it would
// send, which is compressed and then dropped by net/http, so Content-Encoding,
// Vary, the suffixed ETag and the Content-Length that net/http adds or not
// come out the same. A 304 carries the tag of the 200 it stands for, suffix
// included when that 200 would have been compressed; writeCacheable declares
// that 200's length for this.
func (s *Server) compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerValue(r.Header, "Upgrade") != "" {
			// A protocol switch (WebSocket) takes the connection over; a
			// wrapper that buffers or encodes has no place in it.
			next.ServeHTTP(w, r)
			return
		}
		c, force := negotiateCoding(r.Header["Accept-Encoding"])
		cw := compressWriterPool.Get().(*compressWriter)
		cw.w, cw.coding, cw.force, cw.head = w, c, force, r.Method == http.MethodHead
		// On a panic, finish is skipped and what was buffered is dropped, so
		// the recovery middleware can still send a clean error.
		defer cw.release()
		next.ServeHTTP(cw, r)
		cw.finish()
	})
}

// negotiateCoding chooses the coding for a response from the Accept-Encoding
// header lines (RFC 9110 section 12.5.3). force reports that the client
// refused identity (identity;q=0, or *;q=0 without an identity entry), so the
// body is compressed whatever its size; when no coding we have is acceptable
// either, identity is sent anyway, as a client that accepts nothing can still
// read it better than a 406.
func negotiateCoding(header []string) (c coding, force bool) {
	const unlisted = -1
	qGzip, qDeflate, qIdentity, qStar := float64(unlisted), float64(unlisted), float64(unlisted), float64(unlisted)
	// Items are cut off by hand rather than with strings.SplitSeq, whose
	// iterator allocates; this runs on every request.
	for _, line := range header {
		for rest := line; rest != ""; {
			var item string
			item, rest, _ = strings.Cut(rest, ",")
			name, params, _ := strings.Cut(item, ";")
			q, ok := qValue(params)
			if !ok {
				continue
			}
			switch name = strings.TrimSpace(name); {
			case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
				qGzip = max(qGzip, q)
			case strings.EqualFold(name, "deflate"):
				qDeflate = max(qDeflate, q)
			case strings.EqualFold(name, "identity"):
				qIdentity = max(qIdentity, q)
			case name == "*":
				qStar = max(qStar, q)
			}
		}
	}
	// A coding the client did not name is acceptable only through "*".
	if qGzip == unlisted {
		qGzip = qStar
	}
	if qDeflate == unlisted {
		qDeflate = qStar
	}
	if qIdentity == unlisted {
		qIdentity = qStar
	}
	force = qIdentity == 0
	best, qBest := identity, 0.0
	if qGzip > 0 && qGzip >= qDeflate {
		best, qBest = codingGzip, qGzip
	} else if qDeflate > 0 {
		best, qBest = codingDeflate, qDeflate
	}
	// Identity competes only when the client ranked it; "gzip;q=0.5" alone
	// still asks for gzip.
	if best != identity && qIdentity > qBest {
		return identity, false
	}
	return best, force && best != identity
}

// qValue returns the weight in a list item's parameters, 1 when absent; ok is
// false for a malformed weight, whose item is then ignored.
func qValue(params string) (q float64, ok bool) {
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 0, false
		}
		return q, true
	}
	return 1, true
}

// compressible reports whether a response of the given Content-Type is worth
// compressing: text and JSON (or XML), but not event streams, which must
// reach the client as they are written. An unset type is decided by sniffing
// the body, so it counts as compressible until then.
func compressible(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case mt == "":
		return true
	case strings.EqualFold(mt, "text/event-stream"):
		return false
	case hasPrefixFold(mt, "text/"),
		strings.EqualFold(mt, "application/json"),
		strings.EqualFold(mt, "application/javascript"),
		strings.EqualFold(mt, "application/xml"),
		hasSuffixFold(mt, "+json"),
		hasSuffixFold(mt, "+xml"):
		return true
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// compressWriter states.
const (
	pending     = iota // nothing decided, nothing sent
	buffering          // status known, body buffered until it reaches minCompressSize
	passing            // headers sent; the body passes through as it is
	compressing        // headers sent; the body goes through the encoder
)

// compressWriter is the ResponseWriter of compress. It implements Unwrap and
// Flush, so http.ResponseController reaches the connection through it.
type compressWriter struct {
	w      http.ResponseWriter
	coding coding
	force  bool
	head   bool // a HEAD request: see finish
	wrote  bool // the encoder has been given body bytes
	state  int
	status int
	buf    []byte
	enc    interface {
		io.WriteCloser
		Flush() error
	}
}

func (cw *compressWriter) Header() http.Header { return cw.w.Header() }

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (cw *compressWriter) Unwrap() http.ResponseWriter { return cw.w }

func (cw *compressWriter) WriteHeader(code int) {
	if cw.state != pending {
		if cw.state != buffering {
			cw.w.WriteHeader(code) // let net/http report the superfluous call
		}
		return
	}
	if code < 200 {
		cw.w.WriteHeader(code) // informational; the final status is still to come
		return
	}
	cw.status = code
	h := cw.w.Header()
	if code == http.StatusNotModified {
		cw.notModified(h)
		return
	}
	cl := headerValue(h, "Content-Length")
	switch {
	case !cw.eligible(h):
		cw.pass()
	case cl != "":
		// The size is known up front (writeJSON always sets it): decide now
		// and skip buffering.
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && !cw.worthIt(n) {
			cw.pass()
		} else {
			cw.compress(nil)
		}
	case cw.force:
		cw.compress(nil)
	default:
		cw.state = buffering
	}
}

func (cw *compressWriter) Write(p []byte) (int, error) {
	if cw.state == pending {
		cw.WriteHeader(http.StatusOK)
	}
	switch cw.state {
	case buffering:
		if len(cw.buf)+len(p) < minCompressSize {
			cw.buf = append(cw.buf, p...)
			return len(p), nil
		}
		cw.compress(p)
		cw.wrote = true
		return cw.enc.Write(p)
	case compressing:
		cw.wrote = cw.wrote || len(p) > 0
		return cw.enc.Write(p)
	}
	return cw.w.Write(p)
}

// Flush sends what is buffered. A response that is flushed before it reached
// minCompressSize is a stream, and goes out uncompressed.
func (cw *compressWriter) Flush() {
	if cw.state == pending {
		cw.WriteHeader(http.StatusOK)
	}
	switch cw.state {
	case buffering:
		cw.pass()
	case compressing:
		cw.enc.Flush()
	}
	http.NewResponseController(cw.w).Flush()
}

// eligible reports whether the response may be compressed at all. For a
// 304 it tells whether the 200 it stands for could have been.
func (cw *compressWriter) eligible(h http.Header) bool {
	return cw.coding != identity && cw.status != http.StatusNoContent &&
		headerValue(h, "Content-Encoding") == "" && compressible(headerValue(h, "Content-Type"))
}

// worthIt reports whether an eligible body of n bytes is compressed: from
// minCompressSize on, or whatever its size when the client refused identity.
// An empty body stays empty.
func (cw *compressWriter) worthIt(n int64) bool {
	return n > 0 && (n >= minCompressSize || cw.force)
}

// notModified sends a 304 with the entity tag that the 200 it validates
// would carry: suffixed when that 200 would have been compressed (RFC 9110
// section 15.4.5 wants the 304 to hold the 200's ETag). writeCacheable
// declares the length of that 200's body in Content-Length; a 304 carries no
// Content-Length of its own (net/http drops it too), since that of a
// compressed 200 is not known without compressing it. Without a declared
// length the tag is left as it is.
func (cw *compressWriter) notModified(h http.Header) {
	if cl := headerValue(h, "Content-Length"); cl != "" {
		h.Del("Content-Length")
		n, err := strconv.ParseInt(cl, 10, 64)
		if tag := headerValue(h, "Etag"); err == nil && tag != "" && cw.eligible(h) && cw.worthIt(n) {
			h["Etag"] = []string{withCodingSuffix(tag, "-"+cw.coding.String())}
		}
	}
	cw.pass()
}

// varies reports whether the response would have been compressed for another
// Accept-Encoding, so caches must key it by that header.
func (cw *compressWriter) varies(h http.Header) bool {
	if cw.status == http.StatusNotModified {
		return true // it stands for a 200 that varies
	}
	return cw.status != http.StatusNoContent && headerValue(h, "Content-Encoding") == "" && compressible(headerValue(h, "Content-Type"))
}

// pass sends the headers and the buffered body as they are.
func (cw *compressWriter) pass() {
	h := cw.w.Header()
	if cw.varies(h) {
		addVary(h, "Accept-Encoding")
	}
	cw.state = passing
	cw.w.WriteHeader(cw.status)
	if len(cw.buf) > 0 {
		cw.w.Write(cw.buf)
		cw.buf = cw.buf[:0]
	}
}

// compress sends the headers of the encoded response and starts the encoder
// with what was buffered; next is the write that is about to follow, if any.
func (cw *compressWriter) compress(next []byte) {
	h := cw.w.Header()
	if headerValue(h, "Content-Type") == "" {
		// net/http does not sniff an encoded body, so sniff the plain one.
		sniff := cw.buf
		if len(sniff) == 0 {
			sniff = next
		}
		h.Set("Content-Type", http.DetectContentType(sniff))
	}
	h.Del("Content-Length")
	h.Set("Content-Encoding", cw.coding.String())
	addVary(h, "Accept-Encoding")
	if tag := headerValue(h, "Etag"); tag != "" {
		h["Etag"] = []string{withCodingSuffix(tag, "-"+cw.coding.String())}
	}
	cw.state = compressing
	cw.w.WriteHeader(cw.status)
	switch cw.coding {
	case codingGzip:
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(cw.w)
		cw.enc = gz
	case codingDeflate:
		zl := zlibPool.Get().(*zlib.Writer)
		zl.Reset(cw.w)
		cw.enc = zl
	}
	if len(cw.buf) > 0 {
		cw.enc.Write(cw.buf)
		cw.buf = cw.buf[:0]
		cw.wrote = true
	}
}

// finish completes the response once the handler has returned.
func (cw *compressWriter) finish() {
	if cw.state == pending && cw.head {
		// A HEAD handler that sent neither status nor body: decide from the
		// headers it set, as for the GET it stands for.
		cw.WriteHeader(http.StatusOK)
	}
	switch cw.state {
	case buffering:
		cw.pass()
	case compressing:
		if cw.head && !cw.wrote {
			// A HEAD handler that skipped its body: the encoder's framing
			// alone would make net/http announce its few bytes as the
			// Content-Length, so send nothing and let it announce none.
			return
		}
		cw.enc.Close()
	}
}

// release returns the writer and its encoder to their pools.
func (cw *compressWriter) release() {
	switch enc := cw.enc.(type) {
	case *gzip.Writer:
		enc.Reset(io.Discard) // drop the reference to the connection
		gzipPool.Put(enc)
	case *zlib.Writer:
		enc.Reset(io.Discard)
		zlibPool.Put(enc)
	}
	*cw = compressWriter{buf: cw.buf[:0]}
	if cap(cw.buf) <= 4*minCompressSize {
		compressWriterPool.Put(cw)
	}
}

// addVary adds a field name to Vary unless it is already listed. It runs on
// every response, so it reads the header map directly and reuses the shared
// values of the usual cases instead of allocating.
func addVary(h http.Header, name string) {
	vs := h["Vary"]
	for _, v := range vs {
		if v == name || v == "*" {
			return
		}
		for rest := v; rest != ""; {
			var f string
			f, rest, _ = strings.Cut(rest, ",")
			if f = strings.TrimSpace(f); f == "*" || strings.EqualFold(f, name) {
				return
			}
		}
	}
	if len(vs) > 0 {
		// Replacing a key's value goes through the map's insertion path,
		// which grows a map of eight keys (the small map's limit, and what
		// a GET of a record has by now) into a table, three allocations,
		// even though no key is added. A map with one key fewer does not.
		delete(h, "Vary")
	}
	switch {
	case len(vs) == 0 && name == "Accept-Encoding":
		h["Vary"] = varyAcceptEncoding
	case len(vs) == 0 && name == "Accept":
		h["Vary"] = varyAccept
	case len(vs) == 1 && vs[0] == "Accept" && name == "Accept-Encoding":
		h["Vary"] = varyAcceptBoth
	default:
		// A shared slice has no spare capacity, so append copies it.
		h["Vary"] = append(vs, name)
	}
}

// Shared Vary values; like the other shared header values (render.go) they
// are only ever replaced, never written into.
var (
	varyAccept         = []string{"Accept"}
	varyAcceptEncoding = []string{"Accept-Encoding"}
	varyAcceptBoth     = []string{"Accept, Accept-Encoding"} // one header line, not two
)
