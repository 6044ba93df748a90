package http

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
)

// The OpenAPI document is generated once, when the Server is made, from the
// route list (routes.go) and the declarations of the resources those routes
// serve, so that it describes exactly what this server answers: a resource
// declared tomorrow is documented without an edit here. It is OpenAPI 3.1,
// with JSON Schema 2020-12 schemas.
//
// The three API prefixes are three servers of the same paths (/api,
// /api/v1, /api/v2): versions differ only in their error bodies, so each
// error response offers both media types, application/json (the version 1
// envelope) and application/problem+json (version 2). Paths outside /api
// (/healthz, /docs, /oauth/...) name their own server, "/".
//
// What a declaration cannot say, the document does not either: a field's
// Check is a function, so lengths, ranges and allowed values of fields are
// not in the schemas (the docs say them in prose); only their types,
// nullability and which fields a write may carry.

// openAPIVersion is the version of the OpenAPI specification the document
// follows; 3.1.0 is the one the most tools read.
const openAPIVersion = "3.1.0"

// exampleTime is the timestamp of example records.
var exampleTime = time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

// openAPI serves the document: GET /api/openapi.json, to anyone (it is the
// contract, and the docs page reads it without credentials), with an ETag.
func (s *Server) openAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeAsset(w, r, s.openapi)
	})
}

// asset is a fixed response body: the OpenAPI document, a file of the docs
// page.
type asset struct {
	body        []byte
	etag        string
	contentType []string
}

func newAsset(body []byte, contentType string) *asset {
	return &asset{body: body, etag: etagOf(body), contentType: []string{contentType}}
}

// cacheAsset lets any cache keep an asset, and makes it revalidate: assets
// change only when the server does, and a 304 is cheap.
var cacheAsset = []string{"no-cache"}

// writeAsset sends a, or 304 when the client's copy is current. Like
// writeCacheable, the 304 declares the length of the 200 it stands for, so
// that the compressor gives it the right tag.
func writeAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h["Etag"] = []string{a.etag}
	h["Cache-Control"] = cacheAsset
	h["Content-Length"] = []string{strconv.Itoa(len(a.body))}
	if notModified(r, a.etag, time.Time{}) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = a.contentType
	w.WriteHeader(http.StatusOK)
	w.Write(a.body)
}

// openAPIContext is what the generator knows besides the routes.
type openAPIContext struct {
	vendor  string
	oauth   bool // OAuth endpoints are served
	limited bool // rate limits apply (their headers are sent)
	maxBody int64
	// version is the server's build (Config.Version), the document's
	// info.version: the document is generated from the build, so the build
	// names it. The API versions (1 and 2) are its servers, not this.
	version string
}

// newOpenAPI returns the JSON of the document describing rs.
func newOpenAPI(rs []route, c openAPIContext) ([]byte, error) {
	g := &docGen{ctx: c}
	doc := g.document(rs)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return b, nil
}

// docGen builds one document. Components are added as operations need
// them.
type docGen struct {
	ctx  openAPIContext
	comp oaComponents
	// resources lists the resources the routes serve, in route order.
	resources []*resourceapi.Resource
}

func (g *docGen) document(rs []route) *oaDocument {
	doc := &oaDocument{
		OpenAPI:           openAPIVersion,
		JSONSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
		Info: oaInfo{
			Title:       "resourceapi",
			Version:     cmp.Or(g.ctx.version, "(devel)"),
			Description: g.overview(),
		},
		Servers: []oaServer{
			{URL: "/api", Description: fmt.Sprintf("Version 1; version 2 when Accept names application/vnd.%s.v2+json", g.ctx.vendor)},
			{URL: "/api/v1", Description: "Version 1: errors are {\"error\": {...}} envelopes (application/json)"},
			{URL: "/api/v2", Description: "Version 2: errors are RFC 9457 problem details (application/problem+json)"},
		},
	}
	g.securitySchemes()
	doc.Security = g.requirements()
	for _, rt := range rs {
		if rt.res != nil && !slices.Contains(g.resources, rt.res) {
			g.resources = append(g.resources, rt.res)
		}
	}
	for _, res := range g.resources {
		doc.Tags = append(doc.Tags, oaTag{Name: res.Path, Description: g.resourceOverview(res)})
	}
	doc.Tags = append(doc.Tags,
		oaTag{Name: "service", Description: "Health probes, this document and its documentation page; no credentials needed."})
	if slices.ContainsFunc(rs, func(rt route) bool { return rt.kind == kindWebhooks }) {
		doc.Tags = append(doc.Tags, oaTag{Name: "webhooks", Description: "Endpoints that receive events, signed (Standard Webhooks), " +
			"retried, logged and replayable; admins only. See docs/events.md."})
	}

	// Resources first: readers come for them.
	for _, rt := range rs {
		if rt.res != nil && rt.prefix == apiPrefixes[0] { // the other prefixes are the other servers of the same paths
			g.resourceRoute(&doc.Paths, rt)
		}
	}
	for _, rt := range rs {
		switch rt.kind {
		case kindSessions:
			if rt.prefix == apiPrefixes[0] {
				g.sessionsRoute(&doc.Paths, rt)
			}
		case kindEvents:
			if rt.prefix == apiPrefixes[0] {
				g.eventsRoute(&doc.Paths, rt)
			}
		case kindWebhooks:
			if rt.prefix == apiPrefixes[0] {
				g.webhookRoute(&doc.Paths, rt)
			}
		case kindHealthz, kindReadyz:
			g.probe(&doc.Paths, rt)
		case kindOpenAPI:
			g.openAPIRoute(&doc.Paths, rt)
		case kindDocs, kindDocsFile:
			g.docsRoute(&doc.Paths, rt)
		case kindMetrics:
			g.metricsRoute(&doc.Paths, rt)
		case kindFront:
			g.frontRoute(&doc.Paths)
		case kindFavicon:
			g.faviconRoute(&doc.Paths, rt)
		case kindMe:
			if rt.prefix == apiPrefixes[0] {
				g.meRoute(&doc.Paths, rt)
			}
		case kindOAuth:
			if rt.method == "" { // the subtree; the metadata route follows
				g.oauthRoutes(&doc.Paths)
				doc.Tags = append(doc.Tags, oaTag{Name: "oauth", Description: "The OAuth 2.0 authorization server."})
			}
		case kindGraphQL:
			if rt.path == "/graphql" { // and /graphql/, whose paths are its own
				g.graphqlRoutes(&doc.Paths)
				doc.Tags = append(doc.Tags, oaTag{Name: "graphql", Description: "The GraphQL endpoint."})
			}
		}
	}
	// Every path has OPTIONS, answered from the methods the path has, but
	// the GraphQL endpoint, whose handler answers every method itself.
	for i := range doc.Paths {
		if doc.Paths[i].key != "/graphql" {
			g.options(doc.Paths[i].key, doc.Paths[i].value)
		}
	}
	g.errorComponents()
	doc.Components = g.comp
	return doc
}

// rootServers is the server of the paths outside /api.
var rootServers = []oaServer{{URL: "/", Description: "The server itself, outside the API's version prefixes"}}

// noSecurity marks an operation that needs no credential.
func noSecurity() *[]oaRequirement { return &[]oaRequirement{} }

func (g *docGen) overview() string {
	return `The REST API of resourceapi. Every resource has the same conventions; this document
is generated from the resource declarations, so it lists exactly what the server serves.

**Versions.** The API is served under three prefixes, the servers of this document:
` + "`/api/v1`" + ` (version 1), ` + "`/api/v2`" + ` (version 2), and ` + "`/api`" + `, which is version 1
unless ` + "`Accept`" + ` names ` + "`application/vnd." + g.ctx.vendor + ".v2+json`" + ` (an unknown version there is
406). Versions differ only in their errors: version 1 writes an envelope
` + "`{\"error\":{\"code\",\"message\",\"details\",\"request_id\"}}`" + ` as ` + "`application/json`" + `, version 2 RFC 9457
problem details as ` + "`application/problem+json`" + `. Every ` + "`/api`" + ` response says which version
answered in ` + "`API-Version`" + `.

**Credentials.** Every resource operation needs one credential: ` + "`X-API-Key`" + `, ` + "`Authorization: Bearer`" + `
(an access token from ` + "`/oauth/token`" + `) or ` + "`Authorization: Basic`" + ` (email and password). None is 401
` + "`UNAUTHENTICATED`" + `; an invalid one 403 ` + "`INVALID_TOKEN`" + `; a missing permission 403 ` + "`FORBIDDEN`" + `; two of them,
or one in the URL, 400.

**Lists** return ` + "`{\"data\": [...], \"pagination\": {\"page\", \"limit\", \"total\", \"pages\", \"next_cursor\", \"prev_cursor\"}}`" + `, with a
` + "`Link`" + ` header (RFC 8288: ` + "`first`, `prev`, `next`" + `, and ` + "`last`" + ` for numbered pages), and take ` + "`page`" + ` or a cursor
(` + "`after`" + `=next_cursor, ` + "`before`" + `=prev_cursor: the same cost at any depth, stable under inserts and deletes),
` + "`total=false`" + `, ` + "`limit`" + ` (1 to 100), ` + "`sort`" + ` and ` + "`order`" + `, ` + "`q`" + ` (a case-insensitive substring of the searchable
fields), ` + "`fields`" + ` (the fields to show) and the resource's filters. A parameter given twice, or a bad
value, is 400 ` + "`VALIDATION_ERROR`" + ` with one detail per parameter; unknown parameters are ignored.

**Writes** take one JSON object (` + "`application/json`" + ` or any ` + "`application/*+json`" + `; at most ` +
		strconv.FormatInt(g.ctx.maxBody, 10) + ` bytes, else 413). Unknown fields are 400 ` + "`VALIDATION_ERROR`" + `; read-only
fields are ignored. A successful write returns the record as stored, with ` + "`ETag`" + ` and ` + "`Last-Modified`" + `.

**Caching.** A ` + "`GET`" + ` answers 304 to ` + "`If-None-Match`" + ` (and a record to ` + "`If-Modified-Since`" + `); ` + "`PUT`" + `,
` + "`PATCH`" + ` and ` + "`DELETE`" + ` honour ` + "`If-Match`" + ` and ` + "`If-Unmodified-Since`" + ` (412 when they do not hold), and
` + "`PUT`" + ` with ` + "`If-None-Match: *`" + ` only creates. Tags are strong; a compressed response's tag ends in
` + "`-gzip`" + ` or ` + "`-deflate`" + ` inside the quotes, which comparisons ignore.

**Every path** but ` + "`/graphql`" + ` answers ` + "`OPTIONS`" + ` (200 with ` + "`Allow`" + `) and ` + "`HEAD`" + ` where it answers ` + "`GET`" + `; another method
is 405 ` + "`METHOD_NOT_ALLOWED`" + ` with ` + "`Allow`" + ` (response ` + "`Error405`" + `), and a path that does not exist is 404.
Responses of 1 KiB or more are compressed (gzip or deflate) when ` + "`Accept-Encoding`" + ` asks. Every response
carries ` + "`X-Request-ID`" + ` (the client's own, when it sends a valid one), which error bodies repeat.` +
		g.rateLimitNote()
}

func (g *docGen) rateLimitNote() string {
	return `

**Rate limits.** When the server limits requests, every response under ` + "`/api`" + ` and ` + "`/oauth`" + ` says
where the caller's budget stands (` + "`X-RateLimit-Limit`" + `, ` + "`X-RateLimit-Remaining`" + `, ` + "`X-RateLimit-Reset`" + `, and the same
in the standard fields ` + "`RateLimit-Policy: \"caller\";q=600;w=60`" + ` and ` + "`RateLimit: \"caller\";r=599;t=1`" + `), and a
request over it is 429 ` + "`RATE_LIMITED`" + ` with ` + "`Retry-After`" + `.`
}

// --- security ---------------------------------------------------------

const (
	schemeAPIKey = "apiKey"
	schemeBearer = "bearer"
	schemeBasic  = "basic"
	schemeOAuth  = "oauth2"
)

func (g *docGen) securitySchemes() {
	ss := &g.comp.SecuritySchemes
	ss.set(schemeAPIKey, &oaSecurityScheme{Type: "apiKey", In: "header", Name: "X-API-Key",
		Description: "An API key (`rak_` and 26 characters), acting as the user it belongs to. Keys are made at `/api/api-keys` or with the command line, and shown once."})
	ss.set(schemeBearer, &oaSecurityScheme{Type: "http", Scheme: "bearer", BearerFormat: "JWT",
		Description: "An access token from the OAuth token endpoint: a JWT signed with HS256, valid for 15 minutes."})
	ss.set(schemeBasic, &oaSecurityScheme{Type: "http", Scheme: "basic",
		Description: "A user's email and password. Failed passwords are throttled per account (429 with Retry-After)."})
	if !g.ctx.oauth {
		return
	}
	scopes := map[string]string{"api": "Act as the user, with the user's own roles and permissions"}
	ss.set(schemeOAuth, &oaSecurityScheme{Type: "oauth2",
		Description: "OAuth 2.0: the authorization code grant needs PKCE with S256; public clients use only it (and refresh tokens). Access tokens are then sent as `Authorization: Bearer`.",
		Flows: &oaFlows{
			AuthorizationCode: &oaFlow{AuthorizationURL: "/oauth/authorize", TokenURL: "/oauth/token", RefreshURL: "/oauth/token", Scopes: scopes},
			Password:          &oaFlow{TokenURL: "/oauth/token", RefreshURL: "/oauth/token", Scopes: scopes},
			ClientCredentials: &oaFlow{TokenURL: "/oauth/token", Scopes: scopes},
		}})
}

// requirements are the credentials any resource operation accepts, one of
// them.
func (g *docGen) requirements() []oaRequirement {
	rs := []oaRequirement{{schemeAPIKey: {}}, {schemeBearer: {}}, {schemeBasic: {}}}
	if g.ctx.oauth {
		rs = append(rs, oaRequirement{schemeOAuth: {"api"}})
	}
	return rs
}

// --- names ------------------------------------------------------------

// typeName names a resource's schemas: "User", "APIKey", "OAuthClient",
// from its singular name.
func typeName(res *resourceapi.Resource) string {
	var b strings.Builder
	for _, w := range strings.Fields(res.Singular) {
		b.WriteString(upperFirst(w))
	}
	return b.String()
}

// pluralName names a collection in operation ids: "Users", "APIKeys", from
// the resource's name, spelled as its singular name spells the same words.
func pluralName(res *resourceapi.Resource) string {
	var b strings.Builder
	singular := strings.Fields(res.Singular)
	for _, w := range strings.FieldsFunc(res.Name, func(r rune) bool { return r == '_' || r == '-' }) {
		for _, s := range singular {
			if strings.EqualFold(s, w) {
				w = s
			}
		}
		b.WriteString(upperFirst(w))
	}
	return b.String()
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// article returns "a" or "an" for a noun.
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeioAEIO", rune(noun[0])) {
		return "an"
	}
	return "a"
}

func ref(kind, name string) string { return "#/components/" + kind + "/" + name }

// --- resources --------------------------------------------------------

// resourceOverview describes a resource for its tag: fields, access.
func (g *docGen) resourceOverview(res *resourceapi.Resource) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s records at `/api/%s`", upperFirst(res.Singular)+"s:", res.Path)
	if p := res.ParentResource(); p != nil {
		fmt.Fprintf(&b, ", and those of one %s at `/api/%s/{parent}/%s`", p.Singular, p.Path, res.Path)
	}
	b.WriteString(". ")
	b.WriteString(accessNote(res))
	return b.String()
}

// accessNote says who may do what with a resource's records, from its
// declaration.
func accessNote(res *resourceapi.Resource) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Reading needs `%s`, writing `%s`, deleting `%s`.",
		resourceapi.PermissionFor(res.Name, resourceapi.ActionRead),
		resourceapi.PermissionFor(res.Name, resourceapi.ActionWrite),
		resourceapi.PermissionFor(res.Name, resourceapi.ActionDelete))
	a := res.Access
	if a.Owner == "" {
		return b.String()
	}
	owner := "`" + a.Owner + "`"
	if a.Owner == "id" {
		owner = "the user themselves"
	}
	fmt.Fprintf(&b, " Each %s belongs to a user (%s).", res.Singular, owner)
	if len(a.Self) > 0 {
		var ops []string
		for _, op := range a.Self {
			ops = append(ops, op.String())
		}
		fmt.Fprintf(&b, " The owner may %s it without the permission.", strings.Join(ops, ", "))
	}
	switch {
	case a.Private:
		b.WriteString(" Only its owner or an admin may read or change it; lists show a caller only their own.")
	case a.Guarded:
		b.WriteString(" Only its owner or an admin may change it.")
	}
	if a.Owner != "id" {
		b.WriteString(" On create the owner is the caller; only an admin may name another.")
	}
	return b.String()
}

// schemaNames are the component names of a resource's schemas.
type schemaNames struct {
	record, selection, created, create, replace, patch, list string
	// nestedCreate and nestedReplace are the bodies of writes on a nested
	// path, which names the parent: the parent field is optional there.
	nestedCreate, nestedReplace string
}

func namesOf(res *resourceapi.Resource) schemaNames {
	t := typeName(res)
	n := schemaNames{record: t, selection: t + "Selection", created: t + "Created",
		create: t + "Create", replace: t + "Replace", patch: t + "Patch", list: t + "List"}
	n.nestedCreate, n.nestedReplace = n.create, n.replace
	if parent := res.ParentResource(); parent != nil && res.Field(res.Parent).Required {
		n.nestedCreate, n.nestedReplace = typeName(parent)+t+"Create", typeName(parent)+t+"Replace"
	}
	return n
}

// secrets returns the generated secrets a create response shows once (as
// the view does).
func secrets(res *resourceapi.Resource) []*resourceapi.Field {
	var out []*resourceapi.Field
	for i := range res.Fields {
		if f := &res.Fields[i]; f.Generate != nil && f.Secret != resourceapi.NotSecret {
			out = append(out, f)
		}
	}
	return out
}

// resourceSchemas adds the schemas of res, once.
func (g *docGen) resourceSchemas(res *resourceapi.Resource) schemaNames {
	n := namesOf(res)
	if _, done := g.comp.Schemas.get(n.record); done {
		return n
	}
	s := &g.comp.Schemas
	record := &schema{Type: "object", Description: fmt.Sprintf("%s %s as the API shows it: every field, in this order.",
		upperFirst(article(res.Singular)), res.Singular), AdditionalProperties: new(false)}
	selection := &schema{Type: "object", AdditionalProperties: new(false), MinProperties: new(1),
		Description: fmt.Sprintf("%s %s with the fields that `fields` selects, in declaration order; every field when it is absent.",
			upperFirst(article(res.Singular)), res.Singular)}
	for _, f := range res.Fields {
		if f.WriteOnly || f.Internal {
			continue
		}
		record.Properties.set(f.Name, fieldSchema(res, &f, false))
		record.Required = append(record.Required, f.Name)
		selection.Properties.set(f.Name, fieldSchema(res, &f, false))
	}
	s.set(n.record, record)
	s.set(n.selection, selection)
	if sec := secrets(res); len(sec) > 0 {
		created := &schema{Type: "object", AdditionalProperties: new(false), Required: record.Required,
			Description: fmt.Sprintf("The %s just created, with the secrets generated for it: shown in this response only, never again.", res.Singular)}
		created.Properties = slices.Clone(record.Properties)
		for _, f := range sec {
			created.Properties.set(f.Name, &schema{Type: "string",
				Description: "Generated secret, shown once (absent when none was generated)."})
		}
		s.set(n.created, created)
	}
	s.set(n.create, g.bodySchema(res, resourceapi.ModeCreate, false))
	s.set(n.replace, g.bodySchema(res, resourceapi.ModeReplace, false))
	s.set(n.patch, g.bodySchema(res, resourceapi.ModePatch, false))
	if n.nestedCreate != n.create {
		s.set(n.nestedCreate, g.bodySchema(res, resourceapi.ModeCreate, true))
		s.set(n.nestedReplace, g.bodySchema(res, resourceapi.ModeReplace, true))
	}
	g.paginationSchema()
	s.set(n.list, &schema{Type: "object", AdditionalProperties: new(false), Required: []string{"data", "pagination"},
		Description: fmt.Sprintf("One page of %ss.", res.Singular),
		Properties: ordered[*schema]{
			{"data", &schema{Type: "array", Items: &schema{Ref: ref("schemas", n.selection)}}},
			{"pagination", &schema{Ref: ref("schemas", "Pagination")}},
		}})
	return n
}

func (g *docGen) paginationSchema() {
	if _, done := g.comp.Schemas.get("Pagination"); done {
		return
	}
	count := func(desc string, min int64) *schema {
		return &schema{Type: "integer", Minimum: new(min), Description: desc}
	}
	cursor := func(desc string) *schema {
		return &schema{Type: []any{"string", "null"}, Description: desc}
	}
	g.comp.Schemas.set("Pagination", &schema{Type: "object", AdditionalProperties: new(false),
		Required: []string{"limit", "next_cursor", "prev_cursor"},
		Properties: ordered[*schema]{
			{"page", count("The page, from 1 (not on a page read by cursor).", 1)},
			{"limit", &schema{Type: "integer", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxLimit)), Description: "Records per page."}},
			{"total", count("Records that match, on all pages (not with `total=false`).", 0)},
			{"pages", count("Pages of this size: total divided by limit, rounded up (0 when nothing matches; not on a page read by cursor, nor with `total=false`).", 0)},
			{"next_cursor", cursor("The cursor of the next page (`after=`), or null when no record follows.")},
			{"prev_cursor", cursor("The cursor of the previous page (`before=`), or null at the start of the list.")},
		}})
}

// writable reports whether a request body may set f.
func writable(f *resourceapi.Field) bool {
	return !f.ReadOnly && !f.Computed && f.Generate == nil
}

// bodySchema is the request body of a write: the fields a client may set.
// Read-only, computed and generated fields are left out (the server ignores
// them); unknown fields are refused, so no others are allowed. On a nested
// path the parent comes from the path, so its field is not required.
func (g *docGen) bodySchema(res *resourceapi.Resource, mode resourceapi.WriteMode, nested bool) *schema {
	s := &schema{Type: "object", AdditionalProperties: new(false)}
	switch mode {
	case resourceapi.ModeCreate:
		s.Description = fmt.Sprintf("A new %s. Fields left out take their defaults (or null).", res.Singular)
	case resourceapi.ModeReplace:
		s.Description = fmt.Sprintf("The whole %s. Fields left out become null or their default, except those marked as kept.", res.Singular)
		s.Properties.set("id", &schema{Type: "integer", Format: "int64", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxID)),
			Description: "May be given; it must then be the id in the path."})
	case resourceapi.ModePatch:
		s.Description = fmt.Sprintf("The fields of the %s to change; the others stay as they are.", res.Singular)
	}
	for _, f := range res.Fields {
		if !writable(&f) {
			continue
		}
		fs := fieldSchema(res, &f, true)
		if mode == resourceapi.ModeCreate {
			if d := f.DefaultValue(); d != nil {
				fs.Default = jsonValue(d)
			}
		}
		s.Properties.set(f.Name, fs)
		if f.Required && mode != resourceapi.ModePatch && !(nested && f.Name == res.Parent) {
			s.Required = append(s.Required, f.Name)
		}
	}
	return s
}

// fieldSchema is the schema of one field's value, in a response or (when
// request is true) in a request body.
func fieldSchema(res *resourceapi.Resource, f *resourceapi.Field, request bool) *schema {
	s := valueSchema(f, request)
	var notes []string
	switch {
	case f.Name == "id":
		notes = append(notes, "The record's id, assigned by POST or chosen by a PUT that creates.")
	case f.Computed:
		notes = append(notes, "Computed by the server.")
	case f.ReadOnly && f.Type == resourceapi.TypeTime:
		notes = append(notes, "Set by the server.")
	case f.ReadOnly:
		notes = append(notes, "Read-only.")
	}
	if f.Generate != nil {
		notes = append(notes, "Generated by the server on create.")
	}
	if f.References != "" {
		note := "The id of " + article(singularOf(f.References)) + " " + singularOf(f.References) + "."
		if f.Name == res.Access.Owner {
			note += " The owner: the caller when left out on create; only an admin may name another."
		}
		if f.Name == res.Parent {
			note += " On a nested path it is the parent in the path, which a body may repeat but not contradict."
		}
		notes = append(notes, note)
	}
	if f.WriteOnly {
		notes = append(notes, "Write-only: never shown.")
	}
	if c := res.Confirm; c != nil && c.With == f.Name {
		notes = append(notes, fmt.Sprintf("Never stored: the caller's current password, which a change of their own %s needs "+
			"(400 VALIDATION_ERROR on this field when it is missing or wrong; wrong ones count as failed sign-ins, then 429). "+
			"An admin changing another user's record needs none.", strings.Join(c.Fields, " or ")))
	}
	if f.Unique {
		notes = append(notes, "Unique (ignoring case); a value already taken is 409 CONFLICT.")
	}
	if f.AdminOnly {
		notes = append(notes, "Only an admin may set it (403 FORBIDDEN otherwise).")
	}
	if f.Keep && request {
		notes = append(notes, "A PUT that leaves it out keeps the stored value.")
	}
	if f.Sortable {
		notes = append(notes, "Sortable.")
	}
	if f.Searchable {
		notes = append(notes, "Searched by q.")
	}
	s.Description = strings.Join(notes, " ")
	return s
}

// singularOf returns the singular name of a declared resource.
func singularOf(name string) string {
	if r := resourceapi.ResourceNamed(name); r != nil {
		return r.Singular
	}
	return strings.TrimSuffix(name, "s")
}

// valueSchema is the JSON type of a field's values.
func valueSchema(f *resourceapi.Field, request bool) *schema {
	var s *schema
	switch f.Type {
	case resourceapi.TypeInt:
		s = &schema{Type: "integer", Format: "int64"}
		if f.Name == "id" || f.References != "" {
			s.Minimum, s.Maximum = new(int64(1)), new(int64(resourceapi.MaxID))
		}
		if r := f.Range; r != nil {
			s.Minimum, s.Maximum = new(r.Min), new(r.Max)
		}
	case resourceapi.TypeString:
		s = &schema{Type: "string"}
		if r := f.Length; r != nil {
			s.MinLength, s.MaxLength = new(int(r.Min)), new(int(r.Max))
		}
		for _, e := range f.Enum {
			s.Enum = append(s.Enum, e)
		}
	case resourceapi.TypeBool:
		s = &schema{Type: "boolean"}
	case resourceapi.TypeTime:
		s = &schema{Type: "string", Format: "date-time",
			Description: "RFC 3339 in UTC with milliseconds: 2026-11-21T05:07:37.123Z."}
		if !request {
			s.Pattern = `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`
		}
	case resourceapi.TypeStrings:
		s = &schema{Type: "array", Items: &schema{Type: "string"}}
		for _, e := range f.Enum {
			s.Items.Enum = append(s.Items.Enum, e)
		}
	case resourceapi.TypeItems:
		item := &schema{Type: "object", AdditionalProperties: new(false)}
		for _, sub := range f.Items.Fields {
			if request && sub.ReadOnly {
				continue
			}
			ss := valueSchema(&sub, request)
			switch {
			case sub.Lookup != nil:
				ss.Description = fmt.Sprintf("Copied from the %s's %s when the item is written.", singularOf(sub.Lookup.Resource), sub.Lookup.Field)
			case sub.References != "":
				ss.Description = fmt.Sprintf("The id of %s %s.", article(singularOf(sub.References)), singularOf(sub.References))
			}
			item.Properties.set(sub.Name, ss)
			if !request || sub.Required {
				item.Required = append(item.Required, sub.Name)
			}
		}
		s = &schema{Type: "array", Items: item}
		if f.Items.Min > 0 {
			s.MinItems = new(f.Items.Min)
		}
		if f.Items.Max > 0 {
			s.MaxItems = new(f.Items.Max)
		}
	default:
		panic(fmt.Sprintf("openapi: field %s has type %v, which the generator does not know", f.Name, f.Type))
	}
	if f.Nullable {
		s.Type = []string{s.Type.(string), "null"}
	}
	return s
}

// jsonValue converts a field's value to what the API writes for it.
func jsonValue(v any) any {
	if t, ok := v.(time.Time); ok {
		b, _ := appendTime(nil, t)
		return strings.Trim(string(b), `"`)
	}
	return v
}

// exampleJSON renders the fields of rec in declaration order, as responses
// have them.
func exampleJSON(fields []resourceapi.Field, rec resourceapi.Record) ordered[any] {
	var out ordered[any]
	for _, f := range fields {
		v, ok := rec[f.Name]
		if !ok {
			continue
		}
		if items, isItems := v.([]resourceapi.Record); isItems && f.Items != nil {
			list := make([]ordered[any], len(items))
			for i, it := range items {
				list[i] = exampleJSON(f.Items.Fields, it)
			}
			v = list
		}
		out.set(f.Name, jsonValue(v))
	}
	return out
}

// exampleBody returns the declaration's example create body, or nil.
// Examples leave the parent out, for a nested path; elsewhere a required
// parent is given (as 1).
func exampleBody(res *resourceapi.Resource, nested bool) resourceapi.Record {
	if res.Example == nil {
		return nil
	}
	rec := res.Example(1)
	if _, ok := rec[res.Parent]; res.Parent != "" && !nested && !ok && res.Field(res.Parent).Required {
		rec[res.Parent] = int64(1)
	}
	return rec
}

// exampleRecord is the record the example body would create, as the API
// shows it: ids 1, fixed timestamps, defaults, and placeholders for what the
// server generates.
func exampleRecord(res *resourceapi.Resource) resourceapi.Record {
	rec := resourceapi.Record{}
	for k, v := range exampleBody(res, false) {
		rec[k] = v
	}
	for _, f := range res.Fields {
		if _, ok := rec[f.Name]; ok {
			continue
		}
		switch {
		case f.Name == "id" || f.References != "":
			rec[f.Name] = int64(1)
		case f.Type == resourceapi.TypeTime:
			rec[f.Name] = exampleTime
		case f.DefaultValue() != nil:
			rec[f.Name] = f.DefaultValue()
		case f.Nullable:
			rec[f.Name] = nil
		default:
			rec[f.Name] = placeholder(&f)
		}
	}
	for _, f := range res.Fields {
		items, ok := rec[f.Name].([]resourceapi.Record)
		if f.Items == nil || !ok {
			continue
		}
		full := make([]resourceapi.Record, len(items))
		for i, it := range items {
			full[i] = resourceapi.Record{}
			for _, sub := range f.Items.Fields {
				if v, ok := it[sub.Name]; ok {
					full[i][sub.Name] = v
				} else {
					full[i][sub.Name] = placeholder(&sub)
				}
			}
		}
		rec[f.Name] = full
	}
	if res.Compute != nil {
		res.Compute(rec)
	}
	return rec
}

// placeholder stands for a value the server makes.
func placeholder(f *resourceapi.Field) any {
	switch f.Type {
	case resourceapi.TypeInt:
		return int64(1)
	case resourceapi.TypeBool:
		return false
	case resourceapi.TypeStrings:
		return []string{}
	case resourceapi.TypeItems:
		return []resourceapi.Record{}
	}
	return "<" + f.Name + ">"
}

// visibleExample returns the example record with its visible fields, as a
// JSON object.
func visibleExample(res *resourceapi.Resource, withSecrets bool) ordered[any] {
	rec := exampleRecord(res)
	for _, f := range res.Fields {
		if f.WriteOnly || f.Internal {
			delete(rec, f.Name)
		}
	}
	out := exampleJSON(res.Fields, rec)
	if withSecrets {
		for _, f := range secrets(res) {
			out.set(f.Name, "<"+f.Name+">")
		}
	}
	return out
}

// --- resource operations ---------------------------------------------

// resourceRoute adds the operation of one resource route (and HEAD for a
// GET), under its path without the API prefix.
func (g *docGen) resourceRoute(paths *ordered[*oaPathItem], rt route) {
	res := rt.res
	n := g.resourceSchemas(res)
	item := pathItem(paths, rt.path)
	nested := strings.Contains(rt.path, "{parent}")
	var parent *resourceapi.Resource
	if nested {
		parent = res.ParentResource()
	}
	if item.Parameters == nil {
		if nested {
			item.Parameters = append(item.Parameters, &oaParam{Name: "parent", In: "path", Required: true,
				Description: fmt.Sprintf("The id of the %s whose %ss these are; one that does not exist is 404.", parent.Singular, res.Singular),
				Schema:      idSchema()})
		}
		if strings.HasSuffix(rt.path, "/{id}") {
			item.Parameters = append(item.Parameters, &oaParam{Name: "id", In: "path", Required: true,
				Description: fmt.Sprintf("The %s's id: a decimal integer from 1 to 2^53-1 without leading zeros; anything else names nothing (404).", res.Singular),
				Schema:      idSchema()})
		}
		item.Parameters = append(item.Parameters, g.param("X-Request-ID"), g.param("Accept"))
	}
	plural, single := pluralName(res), typeName(res)
	if nested {
		plural, single = typeName(parent)+plural, typeName(parent)+single
	}
	of := ""
	if nested {
		of = fmt.Sprintf(" of one %s", parent.Singular)
	}
	tags := []string{res.Path}
	access := accessNote(res)

	switch rt.kind {
	case kindList:
		params := g.listParams(res)
		get := &oaOperation{OperationID: "list" + plural, Tags: tags, Parameters: params,
			Summary:     fmt.Sprintf("List %ss%s", res.Singular, of),
			Description: g.listDescription(res, nested) + "\n\n" + access}
		get.Responses.set("200", g.success("One page, in the list envelope.", ref("schemas", n.list),
			ordered[any]{{"data", []any{visibleExample(res, false)}},
				{"pagination", ordered[any]{{"page", 1}, {"limit", resourceapi.DefaultLimit}, {"total", 1}, {"pages", 1},
					{"next_cursor", nil}, {"prev_cursor", nil}}}},
			hETag, hCacheControl, hLink))
		get.Responses.set("304", g.notModified(false))
		g.errors(get, 400, 401, 403)
		if nested {
			g.errors(get, 404)
		}
		g.errors(get, 406, 429, 500)
		item.Get = get
		item.Head = headOf(get, "head"+plural)
	case kindCreate:
		post := &oaOperation{OperationID: "create" + single, Tags: tags,
			Summary:     fmt.Sprintf("Create %s %s%s", article(res.Singular), res.Singular, strings.Replace(of, " of ", " for ", 1)),
			Description: "Creates a record from the body; responds 201 with it and its `Location`." + g.createNote(res, nested) + "\n\n" + access,
			RequestBody: g.requestBody(n.create, res, exampleBody(res, false))}
		if nested {
			post.RequestBody = g.requestBody(n.nestedCreate, res, exampleBody(res, true))
		}
		post.Parameters = append(post.Parameters, g.param("Prefer"), g.param("Idempotency-Key"))
		post.Responses.set("201", g.created(res, n, hIdempotencyReplayed))
		g.errors(post, 400, 401, 403)
		if nested {
			g.errors(post, 404)
		}
		g.errors(post, 406, 409, 413, 415, 422, 429, 500)
		item.Post = post
	case kindGet:
		get := &oaOperation{OperationID: "get" + single, Tags: tags,
			Summary:     fmt.Sprintf("Get %s %s%s", article(res.Singular), res.Singular, of),
			Description: "The record, with only the fields `fields` names when it is given. 304 when `If-None-Match` (or, without it, `If-Modified-Since`) shows the client's copy is current.\n\n" + access,
			Parameters:  []*oaParam{g.fieldsParam(res), g.param("If-None-Match"), g.param("If-Modified-Since")}}
		get.Responses.set("200", g.success("The record.", ref("schemas", n.selection), visibleExample(res, false),
			hETag, hLastModified, hCacheControl))
		get.Responses.set("304", g.notModified(true))
		g.errors(get, 400, 401, 403, 404, 406, 429, 500)
		item.Get = get
		item.Head = headOf(get, "head"+single)
	case kindReplace:
		put := &oaOperation{OperationID: "replace" + single, Tags: tags,
			Summary: fmt.Sprintf("Replace %s %s%s, or create it with this id", article(res.Singular), res.Singular, of),
			Description: "Replaces the record with the body: 200. When no record has this id, creates one with it: 201 with `Location` (`If-None-Match: *` makes the request create only). " +
				"An id that a deleted record held is given to a new one only by an admin: anyone else gets 409 `CONFLICT`.\n\n" + access,
			Parameters:  g.writeParams(),
			RequestBody: g.requestBody(n.replace, res, exampleBody(res, false))}
		if nested {
			put.RequestBody = g.requestBody(n.nestedReplace, res, exampleBody(res, true))
		}
		put.Responses.set("200", g.success("The record as stored.", ref("schemas", n.record), visibleExample(res, false), hETag, hLastModified))
		put.Responses.set("201", g.created(res, n))
		put.Parameters = append(put.Parameters, g.param("Prefer"))
		put.Responses.set("204", g.minimal())
		g.errors(put, 400, 401, 403, 404, 406, 409, 412, 413, 415, 422, 429, 500)
		item.Put = put
	case kindUpdate:
		patch := &oaOperation{OperationID: "update" + single, Tags: tags,
			Summary:     fmt.Sprintf("Update %s %s%s", article(res.Singular), res.Singular, of),
			Description: "Changes the fields in the body, and only those; `null` clears a nullable field. The body is a JSON Merge Patch (RFC 7396) of the record, sent as `application/merge-patch+json` or `application/json` alike; the paths that take PATCH say so in `Accept-Patch` (on OPTIONS and on 415).\n\n" + access,
			Parameters:  append(g.writeParams(), g.param("Prefer"), g.param("Idempotency-Key")),
			RequestBody: g.requestBody(n.patch, res, nil)}
		patch.RequestBody.Content.set("application/merge-patch+json", patch.RequestBody.Content[0].value)
		patch.Responses.set("204", g.minimal(hIdempotencyReplayed))
		patch.Responses.set("200", g.success("The record as stored.", ref("schemas", n.record), visibleExample(res, false), hETag, hLastModified, hIdempotencyReplayed))
		g.errors(patch, 400, 401, 403, 404, 406, 409, 412, 413, 415, 422, 429, 500)
		item.Patch = patch
	case kindRemove:
		del := &oaOperation{OperationID: "delete" + single, Tags: tags,
			Summary:     fmt.Sprintf("Delete %s %s%s", article(res.Singular), res.Singular, of),
			Description: "Deletes the record for good, and what belongs to it: 204, no body. A second DELETE is 404." + g.deleteNote(res) + "\n\n" + access,
			Parameters:  g.writeParams()}
		del.Responses.set("204", &oaResponse{Description: "Deleted.", Headers: g.headers(true, false)})
		g.errors(del, 400, 401, 403, 404, 406)
		if restricted(res) {
			g.errors(del, 409)
		}
		g.errors(del, 412)
		if res.Retain != nil {
			g.errors(del, 422)
		}
		g.errors(del, 429, 500)
		item.Delete = del
	}
}

func idSchema() *schema {
	return &schema{Type: "integer", Format: "int64", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxID))}
}

// restricted reports whether records of another resource keep res's
// records from being deleted (a product an order lists): DELETE may then
// be 409.
func restricted(res *resourceapi.Resource) bool {
	refers := func(fs []resourceapi.Field) bool {
		return slices.ContainsFunc(fs, func(f resourceapi.Field) bool { return f.Restrict && f.References == res.Name })
	}
	for _, other := range resourceapi.Declared() {
		if refers(other.Fields) {
			return true
		}
		for _, f := range other.Fields {
			if f.Items != nil && refers(f.Items.Fields) {
				return true
			}
		}
	}
	return false
}

func (g *docGen) createNote(res *resourceapi.Resource, nested bool) string {
	var b strings.Builder
	if nested {
		fmt.Fprintf(&b, " The %s is the one in the path (404 when it does not exist).", res.ParentResource().Singular)
	}
	if len(secrets(res)) > 0 {
		b.WriteString(" The response shows the generated secrets once, with `Cache-Control: no-store`; they are never shown again.")
	}
	b.WriteString(" 422 when no id is left for POST to assign.")
	return b.String()
}

func (g *docGen) deleteNote(res *resourceapi.Resource) string {
	var b strings.Builder
	if restricted(res) {
		fmt.Fprintf(&b, " 409 while other records refer to the %s.", res.Singular)
	}
	if res.Retain != nil {
		fmt.Fprintf(&b, " 422: %s.", strings.TrimSuffix(res.Retain.Message, "."))
	}
	return b.String()
}

func (g *docGen) listDescription(res *resourceapi.Resource, nested bool) string {
	var b strings.Builder
	b.WriteString("One page of records in the list envelope, sorted by `sort` (ties by id, in the same direction).")
	if nested {
		fmt.Fprintf(&b, " Only the records of the %s in the path (404 when it does not exist).", res.ParentResource().Singular)
	}
	var searched []string
	for _, f := range res.Fields {
		if f.Searchable {
			searched = append(searched, "`"+f.Name+"`")
		}
	}
	if len(searched) > 0 {
		fmt.Fprintf(&b, " `q` searches %s.", strings.Join(searched, ", "))
	}
	b.WriteString(" 304 when `If-None-Match` matches the page's tag.")
	return b.String()
}

// listParams are the query parameters of a list.
func (g *docGen) listParams(res *resourceapi.Resource) []*oaParam {
	ps := []*oaParam{g.param("page"), g.param("after"), g.param("before"), g.param("limit"), g.param("total")}
	var sortable []any
	for _, name := range res.SortableFields() {
		sortable = append(sortable, name)
	}
	ps = append(ps, &oaParam{Name: "sort", In: "query", Description: "The field to sort by.",
		Schema: &schema{Type: "string", Enum: sortable, Default: "id"}}, g.param("order"))
	if slices.ContainsFunc(res.Fields, func(f resourceapi.Field) bool { return f.Searchable }) {
		ps = append(ps, g.param("q"))
	}
	ps = append(ps, g.fieldsParam(res))
	for _, flt := range res.Filters {
		if flt.Internal {
			continue
		}
		ps = append(ps, filterParam(res, flt))
	}
	return append(ps, g.param("If-None-Match"))
}

// filterParam describes one of a resource's filters.
func filterParam(res *resourceapi.Resource, flt resourceapi.Filter) *oaParam {
	p := &oaParam{Name: flt.Param, In: "query"}
	s := &schema{Type: "string"}
	switch flt.Kind {
	case resourceapi.FilterSoftDelete:
		p.Description = fmt.Sprintf("`%s`: %ss not soft-deleted; `%s`: only soft-deleted ones; `%s`: both.",
			resourceapi.StatusActive, res.Singular, resourceapi.StatusDeleted, resourceapi.StatusAll)
	case resourceapi.FilterContains:
		p.Description = fmt.Sprintf("Only %ss whose `%s` contains the value.", res.Singular, flt.Field)
	case resourceapi.FilterEqual:
		p.Description = fmt.Sprintf("Only %ss whose `%s` is the value.", res.Singular, flt.Field)
		f := res.Field(flt.Field)
		s = valueSchema(f, true)
		s.Type = s.Type.(string) // a filter's value is never null
		if f.Type == resourceapi.TypeInt {
			s.Minimum, s.Maximum = nil, nil // any integer is accepted, and may match nothing
		}
	}
	for _, v := range flt.Values {
		s.Enum = append(s.Enum, typedParam(s, v))
	}
	if flt.Default != "" {
		s.Default = typedParam(s, flt.Default)
	}
	p.Schema = s
	return p
}

// typedParam returns a filter value as a value of the filter's schema.
func typedParam(s *schema, v string) any {
	switch s.Type {
	case "integer":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	case "boolean":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

// fieldsParam is the fields parameter of res.
func (g *docGen) fieldsParam(res *resourceapi.Resource) *oaParam {
	var names []any
	for _, name := range res.VisibleFields() {
		names = append(names, name)
	}
	return &oaParam{Name: "fields", In: "query", Style: "form", Explode: new(false),
		Description: "The fields to show, comma-separated; the response keeps their usual order. Unknown names are 400.",
		Schema:      &schema{Type: "array", MinItems: new(1), Items: &schema{Type: "string", Enum: names}}}
}

func (g *docGen) writeParams() []*oaParam {
	return []*oaParam{g.param("If-Match"), g.param("If-None-Match"), g.param("If-Unmodified-Since")}
}

// param returns a reference to a shared parameter, adding it to the
// components.
func (g *docGen) param(name string) *oaParam {
	if _, done := g.comp.Parameters.get(name); !done {
		p := sharedParams[name]
		if p == nil {
			panic("openapi: no parameter " + name)
		}
		if name == "Accept" {
			// A copy: sharedParams is shared by every server (and
			// formatting it in place raced, and formatted twice).
			cp := *p
			cp.Description = fmt.Sprintf(p.Description, g.ctx.vendor)
			p = &cp
		}
		g.comp.Parameters.set(name, p)
	}
	return &oaParam{Ref: ref("parameters", name)}
}

var sharedParams = map[string]*oaParam{
	"page": {Name: "page", In: "query", Description: "The page, from 1.",
		Schema: &schema{Type: "integer", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxOffset / resourceapi.MaxLimit)), Default: 1}},
	"after": {Name: "after", In: "query", Description: "A cursor (`next_cursor` of a page): the page of records right after it, in the same sort and order, whatever its depth. Not with `page` or `before`; a cursor that is not one of this list, or was altered, is 400.",
		Schema: &schema{Type: "string", MaxLength: new(MaxCursorLength)}},
	"before": {Name: "before", In: "query", Description: "A cursor (`prev_cursor` of a page): the page of records right before it, in the same sort and order. Not with `page` or `after`.",
		Schema: &schema{Type: "string", MaxLength: new(MaxCursorLength)}},
	"total": {Name: "total", In: "query", Description: "`false` leaves `total` and `pages` out of the envelope, and spares counting.",
		Schema: &schema{Type: "boolean", Default: true}},
	"limit": {Name: "limit", In: "query", Description: "Records per page.",
		Schema: &schema{Type: "integer", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxLimit)), Default: resourceapi.DefaultLimit}},
	"order": {Name: "order", In: "query", Description: "The direction of the sort.",
		Schema: &schema{Type: "string", Enum: []any{"asc", "desc"}, Default: "asc"}},
	"q": {Name: "q", In: "query", Description: "Text to search for, case-insensitively, in the searchable fields; trimmed; at most 200 bytes, no NUL.",
		Schema: &schema{Type: "string", MaxLength: new(resourceapi.MaxSearchLength)}},
	"X-Request-ID": {Name: "X-Request-ID", In: "header",
		Description: "An id for the request, echoed in the response and the server's logs: 1 to 128 characters from A-Z a-z 0-9 . _ -. Any other value is replaced by one the server makes.",
		Schema:      &schema{Type: "string"}},
	"Accept": {Name: "Accept", In: "header",
		Description: "Under `/api` without a version in the path, `application/vnd.%s.v2+json` selects version 2; naming only versions that do not exist is 406 unless plain JSON is acceptable too. Responses are JSON whatever it asks for.",
		Schema:      &schema{Type: "string"}},
	"If-None-Match": {Name: "If-None-Match", In: "header",
		Description: "Entity tags, or `*`. On GET and HEAD: 304 when one matches. On a write: 412 when one matches the current record (`*` when it exists).",
		Schema:      &schema{Type: "string"}},
	"If-Modified-Since": {Name: "If-Modified-Since", In: "header",
		Description: "An HTTP date: 304 when the record has not changed since (to the second). Ignored when If-None-Match is present.",
		Schema:      &schema{Type: "string"}},
	"If-Match": {Name: "If-Match", In: "header",
		Description: "Entity tags, or `*`: the write happens only if the record's current tag is listed (strong comparison), else 412. Always 412 on a record that does not exist.",
		Schema:      &schema{Type: "string"}},
	"Prefer": {Name: "Prefer", In: "header",
		Description: "`return=minimal` (RFC 7240): the write answers with no body, 204 (a create 201 with `Location`), with `ETag`, `Last-Modified` and `Preference-Applied: return=minimal`; a create that shows a secret once (an API key, an OAuth client) sends it anyway. `return=representation` is the default.",
		Schema:      &schema{Type: "string"}},
	"Idempotency-Key": {Name: "Idempotency-Key", In: "header",
		Description: "Makes the write happen once (draft-ietf-httpapi-idempotency-key-header): a key the client makes for this request, 1 to 255 printable ASCII characters, as a Structured Field string (`\"8e03978e-40d5\"`) or bare. " +
			"The first response is kept with the key, per caller, for the retention period (24 hours by default): a retry with the same key and the same method, path and body gets it again, with `Idempotency-Replayed: true`, and writes nothing; " +
			"the same key with another request is 422 `UNPROCESSABLE`, and a retry while the first request is still under way 409 `CONFLICT`. A kept response shows no secret: the replay of a create that showed one (an API key) leaves it out. A malformed key is 400.",
		Schema: &schema{Type: "string", MinLength: new(1), MaxLength: new(257)}},
	"If-Unmodified-Since": {Name: "If-Unmodified-Since", In: "header",
		Description: "An HTTP date: the write happens only if the record has not changed since (to the second), else 412. Ignored when If-Match is present.",
		Schema:      &schema{Type: "string"}},
}

// requestBody is a JSON request body of the named schema.
func (g *docGen) requestBody(schemaName string, res *resourceapi.Resource, example resourceapi.Record) *oaRequestBody {
	mt := &oaMediaType{Schema: &schema{Ref: ref("schemas", schemaName)}}
	if example != nil {
		mt.Example = exampleJSON(res.Fields, example)
	}
	return &oaRequestBody{Required: true,
		Description: "One JSON object. Any `application/*+json` type is accepted as well; a charset, if given, must be UTF-8.",
		Content:     ordered[*oaMediaType]{{"application/json", mt}}}
}

// Response headers, by component name.
const (
	hRequestID         = "X-Request-ID"
	hAPIVersion        = "API-Version"
	hLimit             = "X-RateLimit-Limit"
	hRemaining         = "X-RateLimit-Remaining"
	hReset             = "X-RateLimit-Reset"
	hETag              = "ETag"
	hLastModified      = "Last-Modified"
	hLocation          = "Location"
	hCacheControl      = "Cache-Control"
	hAllow             = "Allow"
	hRetryAfter        = "Retry-After"
	hWWWAuthenticate   = "WWW-Authenticate"
	hCSP               = "Content-Security-Policy"
	hLink              = "Link"
	hPreferenceApplied = "Preference-Applied"
	hRateLimit         = "RateLimit"
	hRateLimitPolicy   = "RateLimit-Policy"
	// hIdempotencyReplayed marks the replay of a kept response.
	hIdempotencyReplayed = "Idempotency-Replayed"
	// hWWWAuthenticateSometimes is WWW-Authenticate where only some
	// responses carry it (403: INVALID_TOKEN, not FORBIDDEN).
	hWWWAuthenticateSometimes = "WWW-Authenticate.INVALID_TOKEN"
)

var sharedHeaders = map[string]*oaHeader{
	hRequestID: {Required: true, Description: "The request's id: the client's, when it sent a valid one, else one the server made.",
		Schema: &schema{Type: "string", Pattern: `^[A-Za-z0-9._-]{1,128}$`}},
	hAPIVersion: {Required: true, Description: "The API version that answered.",
		Schema: &schema{Type: "string", Enum: []any{"1", "2"}}},
	hLimit: {Description: "The most requests the caller may make at once (when rate limiting is on).",
		Schema: &schema{Type: "integer", Minimum: new(int64(0))}},
	hRemaining: {Description: "How many requests the caller may make now (when rate limiting is on).",
		Schema: &schema{Type: "integer", Minimum: new(int64(0))}},
	hReset: {Description: "Unix time, in seconds, when the caller's budget is whole again (when rate limiting is on).",
		Schema: &schema{Type: "integer", Minimum: new(int64(0))}},
	hETag: {Required: true, Description: "The strong entity tag of the representation; `-gzip` or `-deflate` inside the quotes on a compressed response.",
		Schema: &schema{Type: "string", Pattern: `^"[0-9a-f]{16}(-gzip|-deflate)?"$`}},
	hLastModified: {Required: true, Description: "The record's `updated_at`, as an HTTP date.",
		Schema: &schema{Type: "string"}},
	hLocation: {Required: true, Description: "The path of the created record, with the request's version prefix.",
		Schema: &schema{Type: "string"}},
	hCacheControl: {Required: true, Description: "`private, no-cache` on records and pages, `no-cache` on documents, `no-store` on errors and on responses that show secrets.",
		Schema: &schema{Type: "string"}},
	hAllow: {Required: true, Description: "The methods the path has.",
		Schema: &schema{Type: "string"}},
	hRetryAfter: {Required: true, Description: "Seconds to wait before trying again.",
		Schema: &schema{Type: "integer", Minimum: new(int64(0))}},
	hWWWAuthenticate: {Required: true, Description: "The credential schemes the API takes: `Bearer realm=\"<vendor>\", Basic realm=\"<vendor>\", charset=\"UTF-8\"`.",
		Schema: &schema{Type: "string"}},
	hWWWAuthenticateSometimes: {Description: "On INVALID_TOKEN: `Bearer realm=\"<vendor>\", error=\"invalid_token\"`.",
		Schema: &schema{Type: "string"}},
	hCSP: {Required: true, Description: "The page may load only what this server serves.",
		Schema: &schema{Type: "string"}},
	hRateLimitPolicy: {Description: "The rate-limit policy (draft-ietf-httpapi-ratelimit-headers): `\"caller\";q=<X-RateLimit-Limit>;w=<window in seconds>` (when rate limiting is on).",
		Schema: &schema{Type: "string"}},
	hRateLimit: {Description: "Where the caller's budget stands (draft-ietf-httpapi-ratelimit-headers): `\"caller\";r=<X-RateLimit-Remaining>;t=<seconds until the budget is whole>` (when rate limiting is on).",
		Schema: &schema{Type: "string"}},
	hPreferenceApplied: {Required: true, Description: "`return=minimal`: the preference the response honoured (RFC 7240).",
		Schema: &schema{Type: "string"}},
	hIdempotencyReplayed: {Description: "`true` when the response is the one kept with the request's `Idempotency-Key`, sent again: the write happened once, for the first request.",
		Schema: &schema{Type: "string", Enum: []any{"true"}}},
	hLink: {Required: true, Description: "RFC 8288 links to the pages beside this one, absolute URLs with the request's other parameters: `first`, `prev` and `next` (by cursor, or by page number with `page=`), and `last` with `page=` when the total is known.",
		Schema: &schema{Type: "string"}},
}

// header returns a reference to a shared header, adding it to the
// components.
func (g *docGen) header(name string) *oaHeader {
	if _, done := g.comp.Headers.get(name); !done {
		g.comp.Headers.set(name, sharedHeaders[name])
	}
	return &oaHeader{Ref: ref("headers", name)}
}

// headers returns the headers every response of a kind carries, then the
// given ones: api for /api (API-Version), limited for the prefixes rate
// limits apply to.
func (g *docGen) headers(api, rootLimited bool, names ...string) ordered[*oaHeader] {
	var hs ordered[*oaHeader]
	hs.set(hRequestID, g.header(hRequestID))
	if api {
		hs.set(hAPIVersion, g.header(hAPIVersion))
	}
	for _, n := range names {
		key := n
		if n == hWWWAuthenticateSometimes {
			key = hWWWAuthenticate
		}
		hs.set(key, g.header(n))
	}
	if api || rootLimited {
		for _, n := range []string{hLimit, hRemaining, hReset, hRateLimitPolicy, hRateLimit} {
			hs.set(n, g.header(n))
		}
	}
	return hs
}

// success is a 2xx response of an /api operation with a JSON body.
func (g *docGen) success(desc, schemaRef string, example any, headers ...string) *oaResponse {
	return &oaResponse{Description: desc, Headers: g.headers(true, false, headers...),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Ref: schemaRef}, Example: example}}}}
}

// created is the 201 of a create (POST, or a PUT that creates).
func (g *docGen) created(res *resourceapi.Resource, n schemaNames, extra ...string) *oaResponse {
	hs := append([]string{hETag, hLastModified, hLocation}, extra...)
	schemaName := n.record
	if len(secrets(res)) > 0 {
		hs = append(hs, hCacheControl)
		schemaName = n.created
	}
	return g.success("Created: the record as stored.", ref("schemas", schemaName), visibleExample(res, len(secrets(res)) > 0), hs...)
}

// minimal is the 204 of a write that asked for no body (Prefer:
// return=minimal).
func (g *docGen) minimal(extra ...string) *oaResponse {
	return &oaResponse{Description: "Stored, with no body: the request said `Prefer: return=minimal`.",
		Headers: g.headers(true, false, append([]string{hETag, hLastModified, hPreferenceApplied}, extra...)...)}
}

// notModified is the 304 of a GET: the headers of the 200 it stands for.
func (g *docGen) notModified(record bool) *oaResponse {
	hs := []string{hETag, hCacheControl}
	if record {
		hs = []string{hETag, hLastModified, hCacheControl}
	}
	return &oaResponse{Description: "Not Modified: the client's copy is current.", Headers: g.headers(true, false, hs...)}
}

// headOf returns the HEAD operation that mirrors get: the same parameters
// and statuses, and no bodies.
func headOf(get *oaOperation, id string) *oaOperation {
	head := *get
	head.OperationID = id
	head.Summary = get.Summary + " (headers only)"
	head.Description = "The headers GET would send, with the same status, and no body."
	head.Responses = nil
	for _, m := range get.Responses {
		r := *m.value
		if r.Ref != "" {
			r.Ref += "Head"
		}
		r.Content = nil
		head.Responses = append(head.Responses, member[*oaResponse]{m.key, &r})
	}
	return &head
}

// pathItem returns the item of path, adding it.
func pathItem(paths *ordered[*oaPathItem], path string) *oaPathItem {
	if it, ok := paths.get(path); ok {
		return it
	}
	it := &oaPathItem{}
	paths.set(path, it)
	return it
}

// options adds OPTIONS to a path item: 200 with Allow, for anyone. Path
// parameters may be anything there: the router answers OPTIONS on every
// path its patterns match.
func (g *docGen) options(path string, item *oaPathItem) {
	// Paths of the API servers, and /api/openapi.json, are under /api.
	api := len(item.Servers) == 0 || strings.HasPrefix(path, "/api/")
	var methods []string
	for _, m := range methodOrder {
		if op := item.operation(m); op != nil && *op != nil {
			methods = append(methods, m)
		}
	}
	methods = append(methods, http.MethodOptions)
	op := &oaOperation{OperationID: "options" + opSuffix(path), Tags: tagsOf(item),
		Summary:     "The methods of this path",
		Description: "200 with an empty body and `Allow: " + strings.Join(methods, ", ") + "`. A CORS preflight from an allowed origin gets the same methods in `Access-Control-Allow-Methods`.",
		Security:    noSecurity()}
	for _, p := range item.Parameters {
		if p.In == "path" {
			op.Parameters = append(op.Parameters, &oaParam{Name: p.Name, In: "path", Required: true,
				Description: "Any path segment.", Schema: &schema{Type: "string"}})
		}
	}
	op.Responses.set("200", &oaResponse{Description: "The methods of the path, in Allow.",
		Headers: g.headers(api, limitedPath(path), hAllow)})
	if api {
		g.errors(op, 406)
	}
	if api || limitedPath(path) {
		g.errors(op, 429)
	}
	switch {
	case api:
		g.errors(op, 500)
	case limitedPath(path):
		op.Responses = g.rootErrors(op.Responses, 429, 500)
	default:
		op.Responses = g.rootErrors(op.Responses, 500)
	}
	item.Options = op
}

// limitedPath reports whether a path outside the API prefixes is rate
// limited.
func limitedPath(path string) bool {
	return limitedPrefix(path) != ""
}

// opSuffix makes an operation id from a path: /users/{parent}/api-keys/{id}
// -> UsersParentApiKeysId.
func opSuffix(path string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(path, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		b.WriteString(upperFirst(w))
	}
	return b.String()
}

func tagsOf(item *oaPathItem) []string {
	for _, m := range methodOrder {
		if op := item.operation(m); op != nil && *op != nil {
			return (*op).Tags
		}
	}
	return []string{"service"}
}

// --- errors -----------------------------------------------------------

// errorStatuses lists, for each status of the error table (errors.go), its
// codes, sorted.
func errorStatuses() map[int][]string {
	out := map[int][]string{}
	for code, status := range statusOf {
		out[status] = append(out[status], string(code))
	}
	for _, codes := range out {
		slices.Sort(codes)
	}
	return out
}

// errorNotes says when each status happens.
var errorNotes = map[int]string{
	400: "The body is empty, not JSON or not one object (BAD_REQUEST); a body field or a query parameter is not valid, one detail each (VALIDATION_ERROR); or the request carries two credentials, or one in the URL (BAD_REQUEST).",
	401: "No credential (UNAUTHENTICATED).",
	403: "The credential is not valid (INVALID_TOKEN), or the caller may not do this (FORBIDDEN).",
	404: "No record has this id (or the id is not a valid id), the parent in the path does not exist, or nothing is at this path (NOT_FOUND).",
	405: "The path exists, but not with this method (METHOD_NOT_ALLOWED); Allow lists the methods it has.",
	406: "Accept names only API versions that do not exist (NOT_ACCEPTABLE).",
	409: "A unique field's value is taken, or the record is in use by others (CONFLICT); the detail names the field. On POST and PATCH, also: a request with the same `Idempotency-Key` is still under way.",
	412: "If-Match, If-None-Match or If-Unmodified-Since does not hold (PRECONDITION_FAILED); nothing was written.",
	413: "The body is too large (PAYLOAD_TOO_LARGE).",
	415: "The body is not declared JSON, or is compressed (UNSUPPORTED_MEDIA_TYPE).",
	422: "The write would break a rule of the data, or names records that do not exist, or no id is left (UNPROCESSABLE). On POST and PATCH, also: the `Idempotency-Key` was used for another request (another method, path or body).",
	429: "Too many requests (RATE_LIMITED); Retry-After says when to come back.",
	500: "Something unexpected happened (INTERNAL); the body says nothing more, the server's log does, under the request id.",
	503: "The database does not answer (UNAVAILABLE).",
}

// statusHeaders are the headers particular to an error status.
var statusHeaders = map[int][]string{
	401: {hWWWAuthenticate},
	403: {hWWWAuthenticateSometimes},
	405: {hAllow},
	429: {hRetryAfter},
}

// errors adds references to the /api error responses of the given
// statuses.
func (g *docGen) errors(op *oaOperation, statuses ...int) {
	for _, st := range statuses {
		op.Responses.set(strconv.Itoa(st), &oaResponse{Ref: ref("responses", fmt.Sprintf("Error%d", st))})
	}
}

// rootStatuses are the errors of paths outside /api.
var rootStatuses = []int{400, 401, 403, 404, 405, 429, 500, 503}

// rootErrors adds references to the errors of a path outside /api: version
// 1 only, no API-Version.
func (g *docGen) rootErrors(rs ordered[*oaResponse], statuses ...int) ordered[*oaResponse] {
	for _, st := range statuses {
		rs.set(strconv.Itoa(st), &oaResponse{Ref: ref("responses", fmt.Sprintf("RootError%d", st))})
	}
	return rs
}

// errorComponents adds the error schemas and one response per status of
// the error table, with and without a body (HEAD).
func (g *docGen) errorComponents() {
	codes := errorStatuses()
	var all []any
	var statuses []int
	for st, cs := range codes {
		statuses = append(statuses, st)
		for _, c := range cs {
			all = append(all, c)
		}
	}
	slices.Sort(statuses)
	slices.SortFunc(all, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	s := &g.comp.Schemas
	s.set("FieldError", &schema{Type: "object", AdditionalProperties: new(false), Required: []string{"field", "message"},
		Description: "What is wrong with one field of the body or one query parameter (items[2].quantity names a field of an item).",
		Properties: ordered[*schema]{
			{"field", &schema{Type: "string"}},
			{"message", &schema{Type: "string"}},
		}})
	details := &schema{Type: "array", Items: &schema{Ref: ref("schemas", "FieldError")}}
	s.set("Error", &schema{Type: "object", AdditionalProperties: new(false), Required: []string{"error"},
		Description: "A version 1 error (and every error outside /api).",
		Properties: ordered[*schema]{{"error", &schema{Type: "object", AdditionalProperties: new(false),
			Required: []string{"code", "message", "details", "request_id"},
			Properties: ordered[*schema]{
				{"code", &schema{Type: "string", Enum: all, Description: "What went wrong, for programs."}},
				{"message", &schema{Type: "string", Description: "What went wrong, for people."}},
				{"details", details},
				{"request_id", &schema{Type: "string", Description: "The X-Request-ID of the response."}},
			}}}}})
	s.set("Problem", &schema{Type: "object", AdditionalProperties: new(false),
		Required:    []string{"type", "title", "status", "detail", "code", "request_id", "errors"},
		Description: "A version 2 error: RFC 9457 problem details. `type` is always about:blank, so `title` is the status's name; `code` identifies the problem.",
		Properties: ordered[*schema]{
			{"type", &schema{Const: "about:blank"}},
			{"title", &schema{Type: "string"}},
			{"status", &schema{Type: "integer", Minimum: new(int64(400)), Maximum: new(int64(599))}},
			{"detail", &schema{Type: "string"}},
			{"code", &schema{Type: "string", Enum: all}},
			{"request_id", &schema{Type: "string"}},
			{"errors", details},
		}})
	for _, st := range statuses {
		hs := append([]string{hCacheControl}, statusHeaders[st]...)
		desc := http.StatusText(st) + ": " + errorNotes[st]
		g.comp.Responses.set(fmt.Sprintf("Error%d", st), &oaResponse{Description: desc, Headers: g.headers(true, false, hs...),
			Content: ordered[*oaMediaType]{
				{"application/json", &oaMediaType{Schema: g.envelopeFor(st)}},
				{"application/problem+json", &oaMediaType{Schema: g.problemFor(st)}},
			}})
		g.comp.Responses.set(fmt.Sprintf("Error%dHead", st), &oaResponse{Description: desc + " (HEAD: no body)",
			Headers: g.headers(true, false, hs...)})
	}
	for _, st := range rootStatuses {
		hs := append([]string{hCacheControl}, statusHeaders[st]...)
		desc := http.StatusText(st) + ": " + errorNotes[st] + " Outside /api errors are always version 1."
		g.comp.Responses.set(fmt.Sprintf("RootError%d", st), &oaResponse{Description: desc, Headers: g.headers(false, true, hs...),
			Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: g.envelopeFor(st)}}}})
		g.comp.Responses.set(fmt.Sprintf("RootError%dHead", st), &oaResponse{Description: desc + " (HEAD: no body)",
			Headers: g.headers(false, true, hs...)})
	}
}

// envelopeFor is the version 1 error body of a status: its codes only.
func (g *docGen) envelopeFor(status int) *schema {
	return &schema{AllOf: []*schema{
		{Ref: ref("schemas", "Error")},
		{Properties: ordered[*schema]{{"error", &schema{Properties: ordered[*schema]{
			{"code", &schema{Enum: anys(errorStatuses()[status])}}}}}}},
	}}
}

// problemFor is the version 2 error body of a status.
func (g *docGen) problemFor(status int) *schema {
	return &schema{AllOf: []*schema{
		{Ref: ref("schemas", "Problem")},
		{Properties: ordered[*schema]{
			{"title", &schema{Const: http.StatusText(status)}},
			{"status", &schema{Const: status}},
			{"code", &schema{Enum: anys(errorStatuses()[status])}},
		}},
	}}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// --- paths outside /api --------------------------------------------------

// probe describes /healthz or /readyz.
func (g *docGen) probe(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	status, summary, desc := "ok", "Liveness", "200 while the process runs."
	if rt.kind == kindReadyz {
		status, summary, desc = "ready", "Readiness", "200 when the database answers within 2 s, else 503."
	}
	get := &oaOperation{OperationID: strings.TrimPrefix(rt.path, "/"), Tags: []string{"service"},
		Summary: summary, Description: desc, Security: noSecurity()}
	get.Responses.set("200", &oaResponse{Description: "Healthy.", Headers: g.headers(false, false, hCacheControl),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{
			Schema: &schema{Type: "object", AdditionalProperties: new(false), Required: []string{"status"},
				Properties: ordered[*schema]{{"status", &schema{Const: status}}}},
			Example: map[string]string{"status": status}}}}})
	if rt.kind == kindReadyz {
		get.Responses = g.rootErrors(get.Responses, 503)
	}
	get.Responses = g.rootErrors(get.Responses, 500)
	item.Get = get
	item.Head = headOf(get, "head"+upperFirst(get.OperationID))
}

// sessionsRoute describes DELETE /users/{id}/sessions.
func (g *docGen) sessionsRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Parameters = []*oaParam{{Name: "id", In: "path", Required: true,
		Description: "The user's id: a decimal integer from 1 to 2^53-1 without leading zeros; anything else names nothing (404).",
		Schema:      idSchema()}, g.param("X-Request-ID"), g.param("Accept")}
	del := &oaOperation{OperationID: "endUserSessions", Tags: []string{resourceapi.Users.Path},
		Summary: "End every session of a user",
		Description: "Signs the user out everywhere, on every instance, at once: every refresh token of every client, " +
			"every authorization code not yet exchanged and every access token issued to the user stop working " +
			"(the user's security stamp is renewed). API keys are not sessions and keep working; delete them one by one. " +
			"The user themself or an admin may (anyone else: 403); an unknown user is 404. Responds 204, no body.\n\n" +
			"A change of the user's password or email, and a soft delete, end the sessions the same way."}
	del.Responses.set("204", &oaResponse{Description: "Every session ended.", Headers: g.headers(true, false)})
	g.errors(del, 401, 403, 404, 406, 429, 500)
	item.Delete = del
}

// openAPIRoute describes this document's own route. It is under /api, so
// it answers with API-Version and rate limits, but needs no credential.
func (g *docGen) openAPIRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID"), g.param("Accept")}
	get := &oaOperation{OperationID: "openapi", Tags: []string{"service"}, Summary: "This document",
		Description: "The OpenAPI 3.1 document of the API, generated from the resource declarations.",
		Parameters:  []*oaParam{g.param("If-None-Match")}, Security: noSecurity()}
	get.Responses.set("200", &oaResponse{Description: "The document.", Headers: g.headers(true, false, hETag, hCacheControl),
		Content: ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: &schema{Type: "object", Required: []string{"openapi", "info", "paths"}}}}}})
	get.Responses.set("304", g.notModified(false))
	g.errors(get, 406, 429, 500)
	item.Get = get
	item.Head = headOf(get, "headOpenapi")
}

// docsRoute describes the documentation page and its files.
func (g *docGen) docsRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	get := &oaOperation{Tags: []string{"service"}, Security: noSecurity(), Parameters: []*oaParam{g.param("If-None-Match")}}
	hs := g.headers(false, false, hETag, hCacheControl, hCSP)
	if rt.kind == kindDocs {
		get.OperationID, get.Summary = "docs", "The documentation page"
		get.Description = "This document, rendered for people (Swagger UI). The page loads nothing from outside this server."
		get.Responses.set("200", &oaResponse{Description: "The page.", Headers: hs,
			Content: ordered[*oaMediaType]{{"text/html", &oaMediaType{}}}})
	} else {
		item.Parameters = append(item.Parameters, &oaParam{Name: "file", In: "path", Required: true,
			Description: "A file of the page (script, style sheet, image).", Schema: &schema{Type: "string"}})
		get.OperationID, get.Summary = "docsFile", "A file of the documentation page"
		get.Responses.set("200", &oaResponse{Description: "The file.", Headers: hs,
			Content: ordered[*oaMediaType]{{"*/*", &oaMediaType{}}}})
		get.Responses = g.rootErrors(get.Responses, 404)
	}
	get.Responses.set("304", &oaResponse{Description: "Not Modified: the client's copy is current.", Headers: hs})
	get.Responses = g.rootErrors(get.Responses, 500)
	item.Get = get
	item.Head = headOf(get, "head"+upperFirst(get.OperationID))
}
