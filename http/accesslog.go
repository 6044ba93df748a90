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
// The line goes straight to the logger's handler, as a record without a
// source position: Logger.LogAttrs would look up its caller's program
// counter (runtime.Callers) for every request, to log a position that is
// always this function's and that no handler of the service shows. The end
// of the request is the record's time and ends its duration, one clock
// reading for both.
func (s *Server) logAccess(next http.Handler) http.Handler {
	h := s.accessLog.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := trackStatus(w, r)
		defer func() {
			// Deferred so that an aborted response is logged too; its
			// status is 0 when nothing was sent.
			ctx := r.Context()
			if !h.Enabled(ctx, slog.LevelInfo) {
				return
			}
			end := time.Now()
			rec := slog.NewRecord(end, slog.LevelInfo, "request", 0)
			rec.AddAttrs(
				slog.String("request_id", infoFrom(r).id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.status),
				slog.Int64("bytes", sw.bytes),
				slog.Duration("duration", end.Sub(start)),
				slog.String("remote", r.RemoteAddr),
				slog.String("user_agent", r.UserAgent()))
			_ = h.Handle(ctx, rec)
		}()
		next.ServeHTTP(sw, r)
	})
}
