package http

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// API versions. Version 2 differs from version 1 only in its error bodies
// (RFC 9457 problem details), so both are served by the same handlers.
const (
	defaultVersion = 1
	latestVersion  = 2
)

// versionHeader holds the API-Version value of each version, built once.
var versionHeader = [latestVersion + 1][]string{1: {"1"}, 2: {"2"}}

// negotiateVersion decides the API version of an /api request: a version
// segment in the path (/api/v2/...) wins; otherwise the Accept header's
// application/vnd.<vendor>.v<N>+json selects it; otherwise version 1. An
// unknown version in the path is left to the router, which answers 404; in
// the Accept header it is 406. The response says which version answered in
// API-Version.
func (s *Server) negotiateVersion(next http.Handler) http.Handler {
	mediaPrefix := "application/vnd." + s.vendor + ".v"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/api")
		if !ok || (rest != "" && rest[0] != '/') {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		version, inPath := pathVersion(rest)
		var err error
		if !inPath {
			// The same URL answers differently by Accept, so caches must
			// know.
			addVary(h, "Accept")
			version, err = acceptVersion(r.Header["Accept"], mediaPrefix)
		}
		if version == 0 {
			version = defaultVersion // an unknown path version: the 404 speaks version 1
		}
		infoFrom(r).version = version
		h["Api-Version"] = versionHeader[version]
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathVersion reads a version segment from the path after /api. inPath
// reports that there is one ("v" and digits); version is 0 when it is not a
// version this server has.
func pathVersion(rest string) (version int, inPath bool) {
	seg := strings.TrimPrefix(rest, "/")
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	if len(seg) < 2 || seg[0] != 'v' {
		return 0, false
	}
	n, ok := parseVersion(seg[1:])
	if !ok {
		return 0, !strings.ContainsFunc(seg[1:], func(r rune) bool { return r < '0' || r > '9' })
	}
	return n, true
}

// parseVersion accepts the decimal form of a version this server has.
func parseVersion(s string) (int, bool) {
	if len(s) == 0 || len(s) > 3 || s[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > latestVersion {
		return 0, false
	}
	return n, true
}

// acceptVersion picks the version from the Accept header lines. Among our
// vendor media types with a non-zero q, the known version with the highest q
// wins (the newest on a tie). Naming only unknown versions is 406 unless the
// client also accepts plain JSON, which the default version is.
func acceptVersion(header []string, mediaPrefix string) (int, error) {
	best, bestQ := 0, 0.0
	var unknown string
	sawUnknown, plainJSON := false, false
	for _, line := range header {
		for rest := line; rest != ""; {
			var item string
			item, rest, _ = strings.Cut(rest, ",")
			mt, params, _ := strings.Cut(item, ";")
			mt = strings.TrimSpace(mt)
			q, ok := qValue(params)
			if !ok || q == 0 {
				continue
			}
			switch {
			case len(mt) >= len(mediaPrefix)+len("+json") && hasPrefixFold(mt, mediaPrefix) && hasSuffixFold(mt, "+json"):
				digits := mt[len(mediaPrefix) : len(mt)-len("+json")]
				n, ok := parseVersion(digits)
				if !ok {
					unknown, sawUnknown = digits, true
					continue
				}
				if q > bestQ || (q == bestQ && n > best) {
					best, bestQ = n, q
				}
			case strings.EqualFold(mt, mediaPrefix[:len(mediaPrefix)-2]+"+json"), // no version: the default
				strings.EqualFold(mt, "application/json"),
				strings.EqualFold(mt, "application/*"),
				mt == "*/*":
				plainJSON = true
			}
		}
	}
	switch {
	case best != 0:
		return best, nil
	case sawUnknown && !plainJSON:
		if len(unknown) > 16 {
			unknown = unknown[:16] + "..."
		}
		return 0, resourceapi.Errorf(resourceapi.CodeNotAcceptable,
			"API version %q is not available; use %sN+json with N from 1 to %d", unknown, mediaPrefix, latestVersion)
	}
	return defaultVersion, nil
}
