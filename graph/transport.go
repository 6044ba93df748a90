package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/resourceapi/resourceapi"
)

// Media types of GraphQL responses.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// httpTransport serves queries and mutations over HTTP as the
// GraphQL-over-HTTP specification says:
//
//   - POST with an application/json body {query, operationName, variables,
//     extensions}; GET with the same as URL parameters (variables and
//     extensions JSON-encoded), for queries only: a mutation over GET is 405
//     with Allow: POST.
//   - The response is application/graphql-response+json or application/json,
//     as Accept prefers (application/json without Accept or for */*; 406
//     when Accept allows neither).
//   - A request that is not well-formed (bad JSON, parameters of the wrong
//     type, no query) is 400. With application/graphql-response+json, a
//     request error (the document does not parse or validate, the operation
//     is unknown, a variable does not coerce, a limit refuses it) is 400 as
//     well, and a response with data 200; with application/json every
//     well-formed request is 200.
//
// Subscriptions are served over WebSocket only.
type httpTransport struct{ h *Handler }

var _ graphql.Transport = httpTransport{}

func (t httpTransport) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodPost
}

// requestError is a request that is not well-formed: always 400 (or the
// status given).
type requestError struct {
	status int
	code   string
	msg    string
}

func (t httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	t.do(r.Context(), w, r, exec)
}

// do is Do with the request's context given apart (Handler.serve).
func (t httpTransport) do(ctx context.Context, w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	h := w.Header()
	media, ok := negotiate(r.Header.Values("Accept"))
	// Cache-Control, Vary (added to) and Content-Type (every answer from
	// here on is of the media negotiated) in one allocation, each value a
	// slice of capacity 1, so that adding to one cannot write into another.
	vals := make([]string, 3)
	vals[0], vals[1], vals[2] = "no-store", "Accept", contentType(media)
	h["Cache-Control"] = vals[0:1:1]
	if vary := h["Vary"]; len(vary) > 0 {
		h["Vary"] = append(vary, "Accept")
	} else {
		h["Vary"] = vals[1:2:2]
	}
	if !ok {
		writeRequestError(w, http.StatusNotAcceptable, mediaJSON, "NOT_ACCEPTABLE",
			"Accept allows neither application/graphql-response+json nor application/json")
		return
	}
	h["Content-Type"] = vals[2:3:3]
	// The parameters stay on the stack unless gqlgen is handed them.
	var p graphql.RawParams
	var plan *fastPlan
	var vars []byte // the variables' text, when p.Variables are not decoded yet
	var rerr *requestError
	if r.Method == http.MethodGet {
		rerr = t.fromURL(r, &p)
	} else {
		plan, vars, rerr = t.fromBody(w, r, &p)
	}
	if rerr == nil && len(p.Query) > t.h.cfg.MaxQueryBytes {
		rerr = &requestError{http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE",
			"The query document is longer than " + strconv.Itoa(t.h.cfg.MaxQueryBytes) + " bytes"}
	}
	if rerr != nil {
		writeRequestError(w, rerr.status, media, rerr.code, rerr.msg)
		return
	}
	p.Headers = r.Header
	p.ReadTime.Start = graphql.Now()
	p.ReadTime.End = p.ReadTime.Start
	if plan == nil && r.Method == http.MethodGet {
		plan = t.h.plans.get(p.Query)
	}
	// A document the fast path answered before, with variables it reads as
	// gqlgen would coerce them, is answered without preparing it again
	// (fastPlan).
	if resp, ok := t.h.dispatchPlan(ctx, plan, &p, vars); ok {
		writeBody(w, http.StatusOK, media, t.h.encodeCapped(resp))
		return
	}
	if vars != nil {
		p.Variables = decodeVariables(vars)
	}
	// The operation's start, which CreateOperationContext reads
	// (graphql.StartOperationTrace, as gqlgen's handler.Server sets it).
	ctx = graphql.StartOperationTrace(ctx)
	params := new(graphql.RawParams)
	*params = p
	opCtx, errs := exec.CreateOperationContext(ctx, params)
	if errs == nil {
		switch {
		case opCtx.Operation.Operation == ast.Mutation && r.Method == http.MethodGet:
			h.Set("Allow", "POST")
			writeRequestError(w, http.StatusMethodNotAllowed, media, "METHOD_NOT_ALLOWED", "Mutations are sent with POST, not GET")
			return
		case opCtx.Operation.Operation == ast.Subscription:
			err := gqlerror.Errorf("Subscriptions are served over WebSocket at /graphql (graphql-transport-ws or graphql-ws)")
			err.Extensions = map[string]any{"code": codeBadRequest}
			errs = gqlerror.List{err}
		}
	}
	if errs != nil {
		// A request error: no data.
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		status := http.StatusOK
		if media == mediaGraphQLResponse {
			status = http.StatusBadRequest
		}
		writeResponse(w, status, media, resp)
		return
	}
	// The users cache (usercache.go): a query of users by a caller is
	// answered from it while the store says nothing changed.
	var key [32]byte
	var before uint64
	keep := false
	if uc := t.h.users; uc != nil && cacheable(opCtx.Operation) && resourceapi.CredentialErrorFrom(ctx) == nil {
		var ok bool
		if key, ok = uc.key(opCtx, resourceapi.CallerFrom(ctx)); ok {
			if body, hit := uc.get(key); hit {
				writeBody(w, http.StatusOK, media, body)
				return
			}
			before, keep = uc.version()
		}
	}
	// A query of one user's scalar fields is answered without gqlgen's
	// per-field execution, as it would answer it (fast.go).
	resp, fast := t.h.dispatchFast(ctx, opCtx)
	if !fast {
		responses, ctx := exec.DispatchOperation(ctx, opCtx)
		resp = responses(ctx)
	}
	body := encodeResponse(resp)
	if int64(len(body)) > t.h.cfg.MaxResponseBytes {
		body, keep = t.h.capResponse(body), false
	}
	if keep && len(resp.Errors) == 0 && resp.Data != nil {
		t.h.users.put(key, before, body)
	}
	writeBody(w, http.StatusOK, media, body)
}

// fromURL reads the parameters of a GET into p.
func (t httpTransport) fromURL(r *http.Request, p *graphql.RawParams) *requestError {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequest("The URL's query string is malformed")
	}
	one := func(name string) (string, bool, *requestError) {
		vs, ok := values[name]
		if len(vs) > 1 {
			return "", false, badRequest("The parameter " + name + " is given more than once")
		}
		if !ok {
			return "", false, nil
		}
		return vs[0], true, nil
	}
	query, ok, rerr := one("query")
	if rerr != nil {
		return rerr
	}
	if !ok || query == "" {
		return badRequest("The query parameter is missing")
	}
	p.Query = query
	if p.OperationName, _, rerr = one("operationName"); rerr != nil {
		return rerr
	}
	for _, jp := range []struct {
		name string
		dst  *map[string]any
	}{{"variables", &p.Variables}, {"extensions", &p.Extensions}} {
		s, ok, rerr := one(jp.name)
		if rerr != nil {
			return rerr
		}
		if !ok || s == "" || s == "null" {
			continue
		}
		if err := decodeObject([]byte(s), jp.dst); err != nil {
			return badRequest("The " + jp.name + " parameter must be a JSON object")
		}
	}
	return nil
}

// fromBody reads the parameters of a POST into p, and returns the fast
// path's plan of its document when there is one (fastPlans).
func (t httpTransport) fromBody(w http.ResponseWriter, r *http.Request, p *graphql.RawParams) (*fastPlan, []byte, *requestError) {
	// The usual Content-Type is read without mime's parsing (and its map).
	if ct := r.Header.Get("Content-Type"); !strings.EqualFold(ct, mediaJSON) {
		mt, mparams, err := mime.ParseMediaType(ct)
		if ct == "" || err != nil || mt != mediaJSON {
			return nil, nil, &requestError{http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE",
				"The body must be application/json"}
		}
		if cs, ok := mparams["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return nil, nil, &requestError{http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE",
				"The body must be encoded in UTF-8"}
		}
	}
	body, err := readBody(w, r, t.h.cfg.MaxBodyBytes)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, nil, &requestError{http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE",
				"The body is larger than " + strconv.FormatInt(t.h.cfg.MaxBodyBytes, 10) + " bytes"}
		}
		return nil, nil, badRequest("The body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, badRequest("The body is empty; send {\"query\": ...}")
	}
	if !utf8.Valid(body) {
		// encoding/json would read invalid bytes in the document's strings
		// as U+FFFD, and store text other than the client sent.
		return nil, nil, badRequest("The body is not valid UTF-8")
	}
	if !isObject(body) {
		return nil, nil, badRequest("The body is not a JSON object")
	}
	if query, vars, ok := parseEnvelope(body, p); ok {
		// The common body, read without reflection (envelope.go); the
		// text of a document with a plan is the plan's, and its variables
		// are decoded once it is known whether the plan reads them.
		plan := t.h.plans.getBytes(query)
		if plan != nil {
			p.Query = plan.query
		} else {
			p.Query = string(query)
		}
		return plan, vars, nil
	}
	*p = graphql.RawParams{}
	// One pass over the body, each member into its type: a member of
	// another type is a type error that names it (the first one in the
	// body), anything else that does not decode a body that is not JSON.
	// Numbers of variables and extensions stay json.Number, as gqlgen's own
	// transports keep them, so that large integers keep their digits.
	var env struct {
		Query         *string        `json:"query"`
		OperationName *string        `json:"operationName"`
		Variables     map[string]any `json:"variables"`
		Extensions    map[string]any `json:"extensions"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err = dec.Decode(&env)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		switch typeErr.Field {
		case "query":
			return nil, nil, badRequest("The query parameter must be a string")
		case "operationName":
			return nil, nil, badRequest("The operationName parameter must be a string or null")
		case "variables", "extensions":
			return nil, nil, badRequest("The " + typeErr.Field + " parameter must be a JSON object or null")
		}
		return nil, nil, badRequest("The body is not a JSON object")
	case err != nil || len(bytes.TrimSpace(body[dec.InputOffset():])) > 0:
		return nil, nil, badRequest("The body is not a JSON object")
	case env.Query == nil:
		return nil, nil, badRequest("The query parameter must be a string")
	case *env.Query == "":
		return nil, nil, badRequest("The query parameter is missing")
	}
	*p = graphql.RawParams{Query: *env.Query, Variables: env.Variables, Extensions: env.Extensions}
	if env.OperationName != nil {
		p.OperationName = *env.OperationName
	}
	return t.h.plans.get(p.Query), nil, nil
}

// readBody reads r's body, of at most max bytes (an *http.MaxBytesError
// past it). A body whose length the request declares within max is read
// into one buffer of that length; the server's body never gives more than
// it declares, and a body that does (another caller's) is read on as any
// other.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > max {
		return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return nil, err
	}
	var more [1]byte
	switch k, err := r.Body.Read(more[:]); {
	case k > 0 && n == max:
		return nil, &http.MaxBytesError{Limit: max}
	case k > 0:
		rest, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max-n-1))
		return append(append(body, more[0]), rest...), err
	case err != nil && err != io.EOF:
		return nil, err
	}
	return body, nil
}

func badRequest(msg string) *requestError {
	return &requestError{http.StatusBadRequest, codeBadRequest, msg}
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// decodeObject decodes a JSON object, with numbers as json.Number (as
// gqlgen's own transports do, so that large integers keep their digits).
func decodeObject(b []byte, dst *map[string]any) error {
	if !isObject(b) {
		return errors.New("not an object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(dst)
}

// negotiate picks the response's media type from the Accept header values:
// the acceptable one with the highest quality, the more specific match
// winning, application/graphql-response+json on a tie between named types
// and application/json for wildcards; application/json without Accept. ok
// is false when Accept allows neither.
func negotiate(accept []string) (media string, ok bool) {
	if len(accept) == 0 {
		return mediaJSON, true
	}
	type score struct {
		q           float64
		specificity int // 2 exact, 1 application/*, 0 */*
		seen        bool
	}
	var scores [2]score // mediaGraphQLResponse, mediaJSON
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if qs, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(qs, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
			for i, name := range [2]string{mediaGraphQLResponse, mediaJSON} {
				spec := -1
				switch mt {
				case name:
					spec = 2
				case "application/*":
					spec = 1
				case "*/*":
					spec = 0
				}
				if spec < 0 {
					continue
				}
				s := &scores[i]
				if !s.seen || spec > s.specificity {
					*s = score{q: q, specificity: spec, seen: true}
				}
			}
		}
	}
	g, j := scores[0], scores[1]
	gq, jq := g.q, j.q
	if !g.seen {
		gq = 0
	}
	if !j.seen {
		jq = 0
	}
	switch {
	case gq == 0 && jq == 0:
		return "", false
	case gq > jq:
		return mediaGraphQLResponse, true
	case jq > gq:
		return mediaJSON, true
	case g.specificity == 2 && j.specificity < 2:
		return mediaGraphQLResponse, true
	case g.specificity == 2 && j.specificity == 2:
		return mediaGraphQLResponse, true
	}
	return mediaJSON, true
}

// encodeCapped encodes resp, or RESPONSE_TOO_LARGE when its encoding is
// longer than the limit: the response's budget stops it before it gets
// this large (budget.go); this is the check on what is sent.
func (h *Handler) encodeCapped(resp *graphql.Response) []byte {
	return h.capResponse(encodeResponse(resp))
}

// wireResponse is a response as sent: a request error has no data entry
// at all (an executed operation's data is never empty: at least null).
type wireResponse struct {
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

func writeResponse(w http.ResponseWriter, status int, media string, resp *graphql.Response) {
	writeBody(w, status, media, encodeResponse(resp))
}

// encodeResponse encodes resp. The common response, data alone, is put
// together around gqlgen's data as it is: encoding/json would check and
// compact it once more.
func encodeResponse(resp *graphql.Response) []byte {
	if len(resp.Errors) == 0 && len(resp.Extensions) == 0 && len(resp.Data) > 0 {
		b := make([]byte, 0, len(resp.Data)+10)
		b = append(b, `{"data":`...)
		b = append(b, resp.Data...)
		return append(b, '}')
	}
	b, err := json.Marshal(wireResponse{Errors: resp.Errors, Data: resp.Data, Extensions: resp.Extensions})
	if err != nil {
		return []byte(`{"errors":[{"message":"Internal server error","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`)
	}
	return b
}

func writeBody(w http.ResponseWriter, status int, media string, body []byte) {
	ct := contentType(media)
	if h := w.Header(); len(h["Content-Type"]) != 1 || h["Content-Type"][0] != ct {
		h.Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	w.Write(body)
}

// contentType is the Content-Type of a response of media.
func contentType(media string) string {
	switch media {
	case mediaJSON:
		return mediaJSON + "; charset=utf-8"
	case mediaGraphQLResponse:
		return mediaGraphQLResponse + "; charset=utf-8"
	}
	return media + "; charset=utf-8"
}

// writeRequestError answers a request that was not executed with one error.
func writeRequestError(w http.ResponseWriter, status int, media, code, msg string) {
	writeResponse(w, status, media, &graphql.Response{Errors: gqlerror.List{{
		Message: msg, Extensions: map[string]any{"code": code}}}})
}
