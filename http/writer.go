package http

import "net/http"

// statusWriter records the status and size of a response as it goes out, for
// the access log and for recovery (which must know whether the headers are
// already gone). It implements Unwrap and Flush, so http.ResponseController
// reaches the connection through it (WebSocket, streaming).
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the final status is sent
	bytes  int64
}

// trackStatus returns w as a *statusWriter, wrapping it only when an outer
// middleware has not already done so, in the request's shared state.
func trackStatus(w http.ResponseWriter, r *http.Request) *statusWriter {
	if sw, ok := w.(*statusWriter); ok {
		return sw
	}
	if info := infoFrom(r); info.status.ResponseWriter == nil {
		info.status.ResponseWriter = w
		return &info.status
	}
	return &statusWriter{ResponseWriter: w}
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 && code >= 200 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(p []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	n, err := sw.ResponseWriter.Write(p)
	sw.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client, when the wrapped writer can.
func (sw *statusWriter) Flush() {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	http.NewResponseController(sw.ResponseWriter).Flush()
}

// headerValue returns the first value of the header key, "" without one:
// what h.Get(key) returns, without canonicalising key on every call (a
// scan of every byte and a check of each, on each of the dozen headers a
// request reads). key must be in canonical form, as every literal passed
// here is (TestHeaderValueKeysAreCanonical); net/http canonicalises the
// keys of a request's headers as it reads them, and Header.Set those of a
// response.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
