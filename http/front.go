package http

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/resourceapi/resourceapi"
)

//go:embed front/favicon.svg
var favicon []byte

// frontCSP keeps the front page to itself: no script at all, styles only
// inline from the page, images (the favicon) from the server.
const frontCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// frontLink is one link of the front page.
type frontLink struct {
	Rel   string `json:"rel"`
	Href  string `json:"href"`
	Title string `json:"title"`
}

// frontLinks are the front page's links, those of mounted parts only.
func (s *Server) frontLinks() []frontLink {
	links := []frontLink{
		{"docs", "/docs", "API documentation (every operation, from the OpenAPI document)"},
		{"openapi", "/api/openapi.json", "OpenAPI 3.1 document"},
	}
	if s.graphql != nil {
		links = append(links, frontLink{"graphql", "/graphql", "GraphQL endpoint; GraphiQL in a browser"})
	}
	if s.oauth != nil {
		links = append(links, frontLink{"oauth-authorization-server", "/.well-known/oauth-authorization-server",
			"OAuth 2.0 authorization server metadata"})
	}
	links = append(links,
		frontLink{"me", "/api/users/me", "The caller's own user (needs a credential)"},
		frontLink{"health", "/healthz", "Liveness: 200 while the process runs"},
		frontLink{"ready", "/readyz", "Readiness: 200 when the database answers"})
	return links
}

var frontPage = template.Must(template.New("front").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>resourceapi</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
h1 { margin-bottom: 0; } .version { color: #555; margin-top: .25rem; }
ul { padding-left: 1.2rem; } li { margin: .4rem 0; } code { font-size: .9em; }
a { color: #1f4e79; }
</style>
</head>
<body>
<h1>resourceapi</h1>
<p class="version">Version <code>{{.Version}}</code></p>
<p>A REST and GraphQL API of users, posts, products, orders and articles. Requests under
<code>/api</code> need a credential: <code>X-API-Key</code>, <code>Authorization: Bearer</code> or HTTP Basic.</p>
<ul>
{{range .Links}}<li><a href="{{.Href}}" rel="{{.Rel}}">{{.Href}}</a>: {{.Title}}</li>
{{end}}</ul>
</body>
</html>
`))

// front serves GET /: a small page for a browser, and the same links as
// JSON for an API client (anything that does not prefer text/html).
func (s *Server) front() http.Handler {
	page := sync.OnceValue(func() *asset {
		var b strings.Builder
		if err := frontPage.Execute(&b, map[string]any{"Version": s.version, "Links": s.frontLinks()}); err != nil {
			panic(err)
		}
		return newAsset([]byte(b.String()), "text/html; charset=utf-8")
	})
	doc := sync.OnceValue(func() *asset {
		b, err := json.Marshal(map[string]any{"name": "resourceapi", "version": s.version, "links": s.frontLinks()})
		if err != nil {
			panic(err)
		}
		return newAsset(b, "application/json")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Accept")
		if prefersHTML(r.Header.Values("Accept")) {
			h.Set("Content-Security-Policy", frontCSP)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Content-Type-Options", "nosniff")
			writeAsset(w, r, page())
			return
		}
		writeAsset(w, r, doc())
	})
}

// prefersHTML reports whether an Accept header lists text/html before any
// JSON type, as browsers send it.
func prefersHTML(accept []string) bool {
	for _, v := range accept {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "text/html", "application/xhtml+xml":
				return true
			case "application/json", "*/*":
				return false
			}
		}
	}
	return false
}

// faviconAsset is the icon every page of the server shows.
var faviconAsset = sync.OnceValue(func() *asset { return newAsset(favicon, "image/svg+xml") })

// faviconHandler serves the icon at /favicon.ico, where browsers look.
func (s *Server) faviconHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		writeAsset(w, r, faviconAsset())
	})
}

// me serves GET /api/users/me: the caller's own user, so that a client with
// only a credential can find out whom it acts as. The Service's rules of a
// read apply (a user reads their own record); the service itself, which is
// no user, finds nothing.
func (s *Server) me() http.Handler {
	h := s.resource(resourceapi.Users)
	get := h.get()
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		c := resourceapi.CallerFrom(r.Context())
		if c == nil || c.UserID == 0 {
			return resourceapi.Errorf(resourceapi.CodeNotFound, "The caller is no user")
		}
		r.SetPathValue("id", strconv.FormatInt(c.UserID, 10))
		get.ServeHTTP(w, r)
		return nil
	})
}

// onlyGet answers every method but GET and HEAD on a path that has only
// those (GET /api/users/me, whose neighbour /api/users/{id} has more): 200
// with Allow for OPTIONS, else 405.
func (s *Server) onlyGet() http.Handler {
	const allow = "GET, HEAD, OPTIONS"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		if r.Method == http.MethodOptions {
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		s.respondError(w, r, http.StatusMethodNotAllowed,
			resourceapi.Errorf(resourceapi.CodeMethodNotAllowed, "Method %s is not allowed here; allowed: %s", r.Method, allow))
	})
}
