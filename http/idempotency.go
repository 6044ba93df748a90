package http

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) on POST and
// PATCH: the handler reads the key and the request's fingerprint, and gives
// the rule layer a resourceapi.Idempotency whose Response renders the
// response it would send; the store keeps that response with the key in the
// write's transaction. A retry gets it back (replay), marked with
// Idempotency-Replayed: true.

const (
	headerIdempotencyKey      = "Idempotency-Key"
	headerIdempotencyReplayed = "Idempotency-Replayed"
)

var replayed = []string{"true"}

// ParseIdempotencyKey reads the Idempotency-Key fields of h: "" when there
// is none, else the key, which is a Structured Field string ("..."), as the
// draft defines it, or, as many clients send it, the bare characters. A key
// is 1 to resourceapi.MaxIdempotencyKeyLen printable ASCII characters;
// anything else, or more than one field, is CodeBadRequest.
func ParseIdempotencyKey(h http.Header) (string, error) {
	values := h.Values(headerIdempotencyKey)
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", badKey("send one Idempotency-Key, not %d", len(values))
	}
	v := strings.Trim(values[0], " \t")
	if v == "" {
		return "", badKey("the key is empty")
	}
	if len(v) > resourceapi.MaxIdempotencyKeyLen+2 {
		return "", badKey("the key is longer than %d characters", resourceapi.MaxIdempotencyKeyLen)
	}
	var key string
	if v[0] == '"' {
		// sf-string (RFC 9651 section 3.3.3): printable ASCII, with \" and
		// \\ the only escapes, and nothing after the closing quote.
		var b strings.Builder
		i := 1
		for ; i < len(v); i++ {
			c := v[i]
			if c == '\\' {
				i++
				if i == len(v) || (v[i] != '"' && v[i] != '\\') {
					return "", badKey("a quoted key may escape only \" and \\")
				}
				b.WriteByte(v[i])
				continue
			}
			if c == '"' {
				break
			}
			if c < 0x20 || c > 0x7e {
				return "", badKey("the key may hold only printable ASCII characters")
			}
			b.WriteByte(c)
		}
		if i >= len(v) || i != len(v)-1 {
			return "", badKey("a quoted key must end with its closing quote")
		}
		key = b.String()
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= 0x20 || c > 0x7e || c == '"' {
				return "", badKey("the key may hold only printable ASCII characters, without spaces unless it is quoted")
			}
		}
		key = v
	}
	if key == "" {
		return "", badKey("the key is empty")
	}
	if len(key) > resourceapi.MaxIdempotencyKeyLen {
		return "", badKey("the key is longer than %d characters", resourceapi.MaxIdempotencyKeyLen)
	}
	return key, nil
}

func badKey(format string, args ...any) error {
	return &resourceapi.Error{Code: resourceapi.CodeBadRequest, Message: "Idempotency-Key is not valid: " + fmt.Sprintf(format, args...),
		Details: []resourceapi.FieldError{{Field: headerIdempotencyKey, Message: fmt.Sprintf(format, args...)}}}
}

// fingerprint identifies a write request by what decides the write: its
// method, path and body.
func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.Path))
	h.Write([]byte{0})
	h.Write(body)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// storedResponse is how a response is kept with its key.
type storedResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   string              `json:"body,omitempty"`
}

// capture is the http.ResponseWriter a response is rendered into to be
// kept.
type capture struct {
	header http.Header
	status int
	body   []byte
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body = append(c.body, p...)
	return len(p), nil
}

// idempotency returns the context of a write request: with a
// resourceapi.Idempotency when it has an Idempotency-Key, whose response is
// what render writes. body is the request's body.
func idempotency(r *http.Request, key string, body []byte, render func(w http.ResponseWriter, rec resourceapi.Record) error) *resourceapi.Idempotency {
	return &resourceapi.Idempotency{
		Key:         key,
		Fingerprint: fingerprint(r, body),
		Response: func(rec resourceapi.Record) ([]byte, error) {
			c := &capture{header: make(http.Header)}
			if err := render(c, rec); err != nil {
				return nil, err
			}
			return json.Marshal(storedResponse{Status: c.status, Header: c.header, Body: string(c.body)})
		},
	}
}

// replay sends the response err holds when it is a *resourceapi.Replay, and
// reports whether it was one.
func replay(w http.ResponseWriter, err error) (bool, error) {
	rp, ok := errors.AsType[*resourceapi.Replay](err)
	if !ok {
		return false, err
	}
	var sr storedResponse
	if err := json.Unmarshal(rp.Response, &sr); err != nil || sr.Status < 200 || sr.Status > 299 {
		return true, fmt.Errorf("replay: a stored response that is not one (%v)", err)
	}
	h := w.Header()
	for name, v := range sr.Header {
		h[http.CanonicalHeaderKey(name)] = v
	}
	h[headerIdempotencyReplayed] = replayed
	w.WriteHeader(sr.Status)
	w.Write([]byte(sr.Body))
	return true, nil
}
