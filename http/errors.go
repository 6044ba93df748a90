package http

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/resourceapi/resourceapi"
)

// statusOf is the one table from error codes to HTTP statuses. A code missing
// here is a programming error and is served as 500.
var statusOf = map[resourceapi.Code]int{
	resourceapi.CodeBadRequest:           http.StatusBadRequest,
	resourceapi.CodeValidation:           http.StatusBadRequest,
	resourceapi.CodeUnauthenticated:      http.StatusUnauthorized,
	resourceapi.CodeInvalidToken:         http.StatusForbidden,
	resourceapi.CodeForbidden:            http.StatusForbidden,
	resourceapi.CodeNotFound:             http.StatusNotFound,
	resourceapi.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	resourceapi.CodeNotAcceptable:        http.StatusNotAcceptable,
	resourceapi.CodeConflict:             http.StatusConflict,
	resourceapi.CodePreconditionFailed:   http.StatusPreconditionFailed,
	resourceapi.CodePayloadTooLarge:      http.StatusRequestEntityTooLarge,
	resourceapi.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	resourceapi.CodeUnprocessable:        http.StatusUnprocessableEntity,
	resourceapi.CodeRateLimited:          http.StatusTooManyRequests,
	resourceapi.CodeInternal:             http.StatusInternalServerError,
	resourceapi.CodeUnavailable:          http.StatusServiceUnavailable,
}

// statusClientClosedRequest is the status of a request whose client went
// away before it was answered: nginx's 499 "client closed request". It only
// reaches the access log; the connection it is written to is gone.
const statusClientClosedRequest = 499

// writeError is the one way an error reaches a client. A *resourceapi.Error
// (anywhere in err's chain) is shown as it is; anything else, and any error
// of status 500 or more, is logged with the request id, and the client gets
// only the code and a generic message. A request that failed because its
// client went away is not a server error: it is answered 499 and logged at
// debug level only. Nor is UNAVAILABLE (503): a dependency that does not
// answer, which its component logs once per outage (the store does), so
// each request only logs it at debug level; it carries Retry-After.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		s.logFailure(r, slog.LevelDebug, statusClientClosedRequest, err)
		h := w.Header()
		h.Del("ETag")
		h.Del("Last-Modified")
		h.Del("Location")
		h["Cache-Control"] = noStore
		h.Set("Content-Length", "0")
		w.WriteHeader(statusClientClosedRequest)
		return
	}
	e := resourceapi.ErrorOf(err)
	status, known := statusOf[e.Code]
	if !known {
		// A code without a status is a programming error; the client
		// learns no more of it than of any internal failure.
		e, status = resourceapi.ErrorOf(nil), http.StatusInternalServerError
	}
	switch {
	case e.Code == resourceapi.CodeUnavailable:
		s.logFailure(r, slog.LevelDebug, status, err)
	case status >= 500:
		s.logFailure(r, slog.LevelError, status, err)
	}
	s.respondError(w, r, status, e)
}

// logFailure logs why a request failed, with what ties it to its access line.
func (s *Server) logFailure(r *http.Request, level slog.Level, status int, err error) {
	s.logger.LogAttrs(r.Context(), level, "request failed",
		slog.String("request_id", infoFrom(r).id),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.String("err", err.Error()))
}

// respondError writes e as the body of an error response in the format of
// the request's API version: version 2 speaks RFC 9457 problem details,
// version 1 (and everything outside /api) the {"error": {...}} envelope.
func (s *Server) respondError(w http.ResponseWriter, r *http.Request, status int, e *resourceapi.Error) {
	info := infoFrom(r)
	h := w.Header()
	// Headers set for a success that did not happen must not describe the
	// error body.
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Del("Location")
	h["Cache-Control"] = noStore
	switch {
	case status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "":
		// RFC 9110 requires a challenge on 401: every scheme the API takes.
		h.Set("WWW-Authenticate", `Bearer realm="`+s.vendor+`", Basic realm="`+s.vendor+`", charset="UTF-8"`)
	case e.Code == resourceapi.CodeInvalidToken:
		h.Set("WWW-Authenticate", `Bearer realm="`+s.vendor+`", error="invalid_token"`)
	}
	switch {
	case e.RetryAfter > 0:
		h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(e.RetryAfter.Seconds())), 10))
	case e.Code == resourceapi.CodeUnavailable:
		h.Set("Retry-After", "1") // an UNAVAILABLE that says no better
	}

	buf := getBuffer()
	defer putBuffer(buf)
	b := *buf
	if info.version >= 2 {
		h["Content-Type"] = contentTypeProblem
		// about:blank makes title the status phrase (RFC 9457 section 4.2.1);
		// the stable machine-readable identity of the problem is code.
		b = append(b, `{"type":"about:blank","title":`...)
		b = resourceapi.AppendJSONString(b, http.StatusText(status))
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"detail":`...)
		b = resourceapi.AppendJSONString(b, e.Message)
		b = append(b, `,"code":`...)
		b = resourceapi.AppendJSONString(b, string(e.Code))
		b = append(b, `,"request_id":`...)
		b = resourceapi.AppendJSONString(b, info.id)
		b = append(b, `,"errors":`...)
		b = appendDetails(b, e.Details)
		b = append(b, '}')
	} else {
		h["Content-Type"] = contentTypeJSON
		b = append(b, `{"error":{"code":`...)
		b = resourceapi.AppendJSONString(b, string(e.Code))
		b = append(b, `,"message":`...)
		b = resourceapi.AppendJSONString(b, e.Message)
		b = append(b, `,"details":`...)
		b = appendDetails(b, e.Details)
		b = append(b, `,"request_id":`...)
		b = resourceapi.AppendJSONString(b, info.id)
		b = append(b, `}}`...)
	}
	*buf = b
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// appendDetails renders field errors as an array, [] when there are none.
func appendDetails(b []byte, details []resourceapi.FieldError) []byte {
	b = append(b, '[')
	for i, d := range details {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"field":`...)
		b = resourceapi.AppendJSONString(b, d.Field)
		b = append(b, `,"message":`...)
		b = resourceapi.AppendJSONString(b, d.Message)
		b = append(b, '}')
	}
	return append(b, ']')
}
