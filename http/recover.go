package http

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/resourceapi/resourceapi"
)

// recoverPanics turns a panic in a handler into a 500 INTERNAL response, so
// one bad request cannot take the connection (or, unrecovered in a goroutine
// of its own, the process) down. The panic value and stack are logged with
// the request id; the client learns nothing about them. When the response
// has already begun, the connection is aborted instead, so the client sees a
// broken response rather than a truncated one that looks whole.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := trackStatus(w, r)
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // a deliberate abort, which net/http handles quietly
			}
			s.logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
				slog.String("request_id", infoFrom(r).id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			if sw.status != 0 {
				panic(http.ErrAbortHandler)
			}
			// The client gets what it gets of any internal failure:
			// nothing about the cause.
			s.respondError(sw, r, http.StatusInternalServerError, resourceapi.ErrorOf(nil))
		}()
		next.ServeHTTP(sw, r)
	})
}
