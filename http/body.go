package http

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// readBody reads the JSON body of a write into a pooled buffer, which the
// caller returns with putBuffer once the body is decoded. The body must be
// declared JSON (415 otherwise), not encoded (a compressed upload could
// expand past any limit), and at most s.maxBody bytes (413).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (*[]byte, error) {
	if !isJSON(r.Header.Get("Content-Type")) {
		if r.Method == http.MethodPatch {
			w.Header()["Accept-Patch"] = acceptPatch // RFC 5789 section 2.2
		}
		return nil, resourceapi.Errorf(resourceapi.CodeUnsupportedMediaType,
			"The request body must be JSON, sent with Content-Type: application/json")
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, resourceapi.Errorf(resourceapi.CodeUnsupportedMediaType,
			"Content-Encoding %q is not supported for request bodies", truncate(ce, 32))
	}
	if r.ContentLength > s.maxBody {
		return nil, s.tooLarge()
	}
	body := http.MaxBytesReader(w, r.Body, s.maxBody)
	buf := getBuffer()
	b := *buf
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*buf = b
			putBuffer(buf)
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return nil, s.tooLarge()
			}
			return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "The request body could not be read")
		}
	}
	*buf = b
	return buf, nil
}

func (s *Server) tooLarge() error {
	limit := strconv.FormatInt(s.maxBody, 10) + " bytes"
	if s.maxBody%(1<<20) == 0 {
		limit = strconv.FormatInt(s.maxBody>>20, 10) + " MiB"
	}
	return resourceapi.Errorf(resourceapi.CodePayloadTooLarge, "The request body must be at most %s", limit)
}

// isJSON accepts application/json and the structured-syntax JSON types
// (application/merge-patch+json and the like), case-insensitively, with
// parameters; a charset, if given, must be UTF-8, the only encoding of JSON
// (RFC 8259 section 8.1).
func isJSON(contentType string) bool {
	mt, params, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	if !strings.EqualFold(mt, "application/json") && !(hasPrefixFold(mt, "application/") && hasSuffixFold(mt, "+json")) {
		return false
	}
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "charset") {
			v = strings.Trim(strings.TrimSpace(v), `"`)
			if !strings.EqualFold(v, "utf-8") && !strings.EqualFold(v, "utf8") {
				return false
			}
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// acceptPatch is the Accept-Patch of every path that takes PATCH (RFC 5789):
// a JSON object of the fields to change, which is also a JSON Merge Patch
// (RFC 7396) of the record: a field sent replaces the stored value (a list
// wholly), null removes an optional field, a field not sent stays.
var acceptPatch = []string{"application/merge-patch+json, application/json"}
