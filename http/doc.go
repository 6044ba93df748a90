// Package http serves the REST API of resourceapi (docs/api.md) over
// net/http. A Server turns any resourceapi.Store into the API:
// the handlers are generic over resource declarations (routes.go lists the
// whole surface), and the middleware (request ids, access log, panic
// recovery, CORS, version negotiation, compression, authentication) are
// plain func(http.Handler) http.Handler. The package has no listener:
// cmd/resourceapi owns the http.Server, its timeouts and its shutdown, and
// mounts Server.Handler.
//
// Choices the specification leaves open, made here:
//
//   - Errors are written by one function (errors.go) from one code-to-status
//     table. Version 2 bodies are RFC 9457 problem details with type
//     "about:blank", so title is the HTTP status phrase and the stable,
//     machine-readable identity of a problem is its code member. A 401
//     carries WWW-Authenticate.
//   - An {id} that is not the canonical decimal form of an integer from 1 to
//     2^53-1 (the largest integer JSON clients hold exactly) is 404, like an
//     id that names no record: it is a URL of nothing, not a bad request.
//   - Entity tags are strong, a 64-bit checksum of the record's full
//     rendering (all visible fields, whatever fields selects), so a client
//     may GET with fields and update with If-Match. A collection's tag is
//     that of its body. A compressed response's tag gets a coding suffix
//     ("-gzip", "-deflate"), which every comparison strips. If-None-Match: *
//     on PUT creates only; If-Unmodified-Since is honoured when If-Match is
//     absent.
//   - The Accept header selects a version with
//     application/vnd.<vendor>.v<N>+json. Among several, the highest q wins
//     (the newest on a tie); naming only unknown versions is 406 unless
//     plain JSON is acceptable too. Unversioned /api responses carry
//     Vary: Accept.
//   - Compression honours q-values. "gzip;q=0.5" alone still means gzip:
//     identity competes only when the client ranks it. When identity is
//     refused, bodies are compressed whatever their size; when nothing is
//     acceptable, identity is sent anyway. HEAD gets the headers of the
//     compressed GET, and a 304 the tag of the 200 it stands for, suffix
//     included. Request bodies must not be encoded (415).
//   - Request bodies may be application/json or any application/*+json type;
//     a charset, if given, must be UTF-8.
//   - OPTIONS needs no route: on every path that has routes it is answered
//     200 with an empty body and Allow, and a CORS preflight gets the same
//     Allow as Access-Control-Allow-Methods. A path without routes is 404
//     for OPTIONS as for every method.
//   - A request whose client went away before it was answered (its context
//     cancelled) is logged with status 499, nginx's "client closed request",
//     not as a 500.
package http
