package http

import (
	"log/slog"
	"net/http"
	"time"
)

// logAccess logs one line per request once it is answered. It logs the path
// but not the query string, which may carry search terms, and never bodies,
// which may carry passwords.
func (s *Server) logAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := trackStatus(w, r)
		defer func() {
			// Deferred so that an aborted response is logged too; its
			// status is 0 when nothing was sent.
			s.accessLog.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", infoFrom(r).id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.status),
				slog.Int64("bytes", sw.bytes),
				slog.Duration("duration", time.Since(start)),
				slog.String("remote", r.RemoteAddr),
				slog.String("user_agent", r.UserAgent()))
		}()
		next.ServeHTTP(sw, r)
	})
}
