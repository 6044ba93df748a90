package http

import (
	"log/slog"
	"net/http"
	"time"
)

// logAccess logs one line per request once it is answered. It logs the path
// but not the query string, which may carry search terms, and never bodies,
// which may carry passwords.
//
// When the logger's handler is NewAccessLogHandler's, the line is written by
// the access log's own formatter, byte for byte what slog's handler would
// write (accesslogline.go). Otherwise it goes to the logger's handler as a
// record without a source position: Logger.LogAttrs would look up its
// caller's program counter (runtime.Callers) for every request, to log a
// position that is always this function's and that no handler of the
// service shows. The end of the request is the record's time and ends its
// duration, one clock reading for both.
func (s *Server) logAccess(next http.Handler) http.Handler {
	h := s.accessLog.Handler()
	own := ownAccessLine(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// observe, right around this, has read the clock for the start
		// of the same request: one reading for both.
		start := infoFrom(r).start
		if start.IsZero() {
			start = time.Now()
		}
		sw := trackStatus(w, r)
		defer func() {
			// Deferred so that an aborted response is logged too; its
			// status is 0 when nothing was sent.
			ctx := r.Context()
			if !h.Enabled(ctx, slog.LevelInfo) {
				return
			}
			end := time.Now()
			f := accessFields{
				id:       infoFrom(r).id,
				method:   r.Method,
				path:     r.URL.Path,
				status:   sw.status,
				bytes:    sw.bytes,
				duration: end.Sub(start),
				remote:   r.RemoteAddr,
				agent:    headerValue(r.Header, "User-Agent"),
			}
			if own != nil {
				_ = own.writeAccess(ctx, end, &f)
				return
			}
			_ = h.Handle(ctx, f.record(end))
		}()
		next.ServeHTTP(sw, r)
	})
}
