package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The HTTP tests check every exchange they make against the OpenAPI document
// the server under test serves (GET /api/openapi.json): the request, when
// the server accepted it, and the response, always. A request, response,
// status or header the document does not describe fails the test. So the
// document is held to what the server does by every test there is, and a
// resource declared tomorrow is checked by the tests that go over every
// resource, without a line here.
//
// Requests that the server refused (status 400 and up) are not checked:
// tests send malformed requests on purpose (bad JSON, wrong content types,
// missing credentials), and the document describes the requests a client
// should send, not every one the server survives. Their responses are
// checked all the same. A test that sends a request off the contract that
// the server still accepts (a tolerance, such as read-only fields in a body)
// says so with client.offContract.

// contract is a loaded document, its router, and the options every check
// uses.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// contracts caches loaded documents by their bytes: most test servers serve
// the same document, and loading one costs more than a test request.
var contracts sync.Map // string(document) -> *contract or error

// loadContract parses and validates a served document.
func loadContract(body []byte) (*contract, error) {
	if v, ok := contracts.Load(string(body)); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*contract), nil
	}
	c, err := parseContract(body)
	if err != nil {
		contracts.Store(string(body), err)
		return nil, err
	}
	contracts.Store(string(body), c)
	return c, nil
}

func parseContract(body []byte) (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(body)
	if err != nil {
		return nil, fmt.Errorf("load document: %w", err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation(), openapi3.EnableSchemaPatternValidation()); err != nil {
		return nil, fmt.Errorf("document is not valid OpenAPI: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route document: %w", err)
	}
	return &contract{doc: doc, router: router}, nil
}

// contractRef is the document of one test server, loaded on first use and
// shared by every client of that server. It is the document the server
// serves at /api/openapi.json (TestOpenAPIDocument checks that), taken from
// the server rather than over HTTP so that fetching it spends none of the
// rate limit budget that tests measure.
type contractRef struct {
	doc  []byte
	once sync.Once
	c    *contract
	err  error
}

// get returns the loaded document.
func (r *contractRef) get() (*contract, error) {
	r.once.Do(func() { r.c, r.err = loadContract(r.doc) })
	return r.c, r.err
}

// authenticate checks that a request carries the credential of the scheme
// the document names: the server checks the credential itself.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	ok := false
	switch in.SecuritySchemeName {
	case "apiKey":
		ok = h.Get("X-API-Key") != ""
	case "bearer", "oauth2":
		ok = hasPrefixFold(h.Get("Authorization"), "Bearer ")
	case "basic":
		ok = hasPrefixFold(h.Get("Authorization"), "Basic ")
	}
	if !ok {
		return fmt.Errorf("no %s credential", in.SecuritySchemeName)
	}
	return nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// exchange is one request and its response, bodies read (the response's
// decoded, when it was compressed).
type exchange struct {
	req      *http.Request
	reqBody  []byte
	resp     *http.Response
	respBody []byte
	// offContract skips the check of the request.
	offContract bool
}

// check reports every way the exchange departs from the document.
func (c *contract) check(x exchange) error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	status := x.resp.StatusCode

	route, params, err := c.router.FindRoute(withBody(x.req, x.reqBody))
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		// Nothing is described here: the server must say so, as the
		// document's 404 does.
		if status != http.StatusNotFound {
			bad("the document has no path %s, but the server answered %d", x.req.URL.Path, status)
		}
		c.checkComponent(x, "404", bad)
		return joinProblems(x, problems)
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if status != http.StatusMethodNotAllowed {
			bad("the document has no %s on %s, but the server answered %d", x.req.Method, x.req.URL.Path, status)
		}
		c.checkComponent(x, "405", bad)
		return joinProblems(x, problems)
	case err != nil:
		bad("find route: %v", err)
		return joinProblems(x, problems)
	}

	opts := &openapi3filter.Options{AuthenticationFunc: authenticate, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: withBody(x.req, x.reqBody), PathParams: params, Route: route, Options: opts}
	if status < 400 && !x.offContract {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			bad("request: %v", err)
		}
	}
	// ValidateResponse skips HEAD and 304 altogether: their status and
	// headers are checked here.
	resp := route.Operation.Responses.Status(status)
	if resp == nil {
		bad("status %d is not one the document gives %s %s", status, x.req.Method, route.Path)
	} else if x.req.Method == http.MethodHead || status == http.StatusNotModified {
		checkHeaders(resp.Value, x.resp.Header, bad)
	}
	if resp != nil {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status,
			Header: x.resp.Header, Options: opts}
		out.SetBodyBytes(x.respBody)
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			bad("response: %v", err)
		}
	}
	return joinProblems(x, problems)
}

// checkComponent checks a response against one of the document's error
// responses (components/responses/Error<status>).
func (c *contract) checkComponent(x exchange, status string, bad func(string, ...any)) {
	name := "Error" + status
	if p := x.req.URL.Path; p != "/api" && !strings.HasPrefix(p, "/api/") {
		name = "Root" + name
	}
	if x.req.Method == http.MethodHead {
		name += "Head"
	}
	ref := c.doc.Components.Responses[name]
	if ref == nil {
		bad("the document has no response %s", name)
		return
	}
	checkHeaders(ref.Value, x.resp.Header, bad)
	if x.req.Method == http.MethodHead {
		return
	}
	mt := ref.Value.Content.Get(x.resp.Header.Get("Content-Type"))
	if mt == nil {
		bad("%s has no content of type %q", name, x.resp.Header.Get("Content-Type"))
		return
	}
	var v any
	if err := json.Unmarshal(x.respBody, &v); err != nil {
		bad("body is not JSON: %v", err)
		return
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		bad("body does not match %s: %v", name, err)
	}
}

// checkHeaders checks that the required headers of resp are present.
func checkHeaders(resp *openapi3.Response, h http.Header, bad func(string, ...any)) {
	for name, hr := range resp.Headers {
		if hr.Value.Required && h.Get(name) == "" {
			bad("response header %s is missing", name)
		}
	}
}

func joinProblems(x exchange, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s -> %d does not follow the OpenAPI document:\n\t%s\nresponse body: %.400s",
		x.req.Method, x.req.URL.RequestURI(), x.resp.StatusCode, strings.Join(problems, "\n\t"), x.respBody)
}

// withBody returns a copy of req whose body reads body again.
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r
}

// concretePath fills a documented path's parameters with 1, for probing.
func concretePath(path string) string {
	var b strings.Builder
	for rest := path; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest, '}')
		b.WriteString("1")
		rest = rest[j+1:]
	}
	return b.String()
}

// documentedMethods returns the methods of a path item, in Allow's order.
func documentedMethods(item *openapi3.PathItem) []string {
	var out []string
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		if item.GetOperation(m) != nil {
			out = append(out, m)
		}
	}
	return out
}

// serverURLs returns the base paths a path item is served under.
func serverURLs(doc *openapi3.T, item *openapi3.PathItem) []string {
	servers := doc.Servers
	if len(item.Servers) > 0 {
		servers = item.Servers
	}
	var out []string
	for _, s := range servers {
		u, err := url.Parse(s.URL)
		if err != nil {
			continue
		}
		out = append(out, strings.TrimSuffix(u.Path, "/"))
	}
	return out
}
