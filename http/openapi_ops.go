package http

import "github.com/resourceapi/resourceapi"

// metricsRoute describes GET /metrics.
func (g *docGen) metricsRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	get := &oaOperation{OperationID: "metrics", Tags: []string{"service"}, Summary: "Prometheus metrics",
		Description: "The server's metrics in the Prometheus text format, for an admin or a caller granted " +
			"`metrics:read`. A scraper on a private network can read them without a credential on the " +
			"listener of `RESOURCEAPI_METRICS_ADDR` instead (docs/operations.md)."}
	get.Responses.set("200", &oaResponse{Description: "The metrics.", Headers: g.headers(false, false, hCacheControl),
		Content: ordered[*oaMediaType]{{"text/plain", &oaMediaType{}}}})
	get.Responses = g.rootErrors(get.Responses, 400, 401, 403, 429, 500)
	item.Get = get
	item.Head = headOf(get, "headMetrics")
}

// frontRoute describes GET /, the front page.
func (g *docGen) frontRoute(paths *ordered[*oaPathItem]) {
	item := pathItem(paths, "/")
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	get := &oaOperation{OperationID: "front", Tags: []string{"service"}, Summary: "The front page",
		Description: "The service's name and version and links to the documentation, GraphQL, the OAuth metadata and " +
			"the health probes: a small page for a browser (`Accept: text/html`), the same as JSON for anything else.",
		Security: noSecurity(), Parameters: []*oaParam{g.param("If-None-Match")}}
	get.Responses.set("200", &oaResponse{Description: "The links.", Headers: g.headers(false, false, hETag, hCacheControl),
		Content: ordered[*oaMediaType]{
			{"application/json", &oaMediaType{Schema: &schema{Type: "object", Required: []string{"name", "version", "links"}}}},
			{"text/html", &oaMediaType{}},
		}})
	get.Responses.set("304", &oaResponse{Description: "Not Modified: the client's copy is current."})
	get.Responses = g.rootErrors(get.Responses, 500)
	item.Get = get
	item.Head = headOf(get, "headFront")
}

// faviconRoute describes GET /favicon.ico.
func (g *docGen) faviconRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Servers = rootServers
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	get := &oaOperation{OperationID: "favicon", Tags: []string{"service"}, Summary: "The icon of the server's pages",
		Security: noSecurity(), Parameters: []*oaParam{g.param("If-None-Match")}}
	get.Responses.set("200", &oaResponse{Description: "An SVG icon.", Headers: g.headers(false, false, hETag, hCacheControl),
		Content: ordered[*oaMediaType]{{"image/svg+xml", &oaMediaType{}}}})
	get.Responses.set("304", &oaResponse{Description: "Not Modified: the client's copy is current."})
	get.Responses = g.rootErrors(get.Responses, 500)
	item.Get = get
	item.Head = headOf(get, "headFavicon")
}

// meRoute describes GET /users/me.
func (g *docGen) meRoute(paths *ordered[*oaPathItem], rt route) {
	n := g.resourceSchemas(resourceapi.Users)
	item := pathItem(paths, rt.path)
	item.Parameters = []*oaParam{g.param("X-Request-ID"), g.param("Accept")}
	get := &oaOperation{OperationID: "getMe", Tags: []string{resourceapi.Users.Path},
		Summary: "Get the caller's own user",
		Description: "The user the credential acts as, as `GET /users/{id}` shows it to them, so that a client holding only " +
			"a credential can find out whom it acts as. 404 for a credential of no user.",
		Parameters: []*oaParam{g.fieldsParam(resourceapi.Users), g.param("If-None-Match"), g.param("If-Modified-Since")}}
	get.Responses.set("200", g.success("The caller's user.", ref("schemas", n.selection), visibleExample(resourceapi.Users, false),
		hETag, hLastModified, hCacheControl))
	get.Responses.set("304", g.notModified(true))
	g.errors(get, 400, 401, 403, 404, 406, 429, 500)
	item.Get = get
	item.Head = headOf(get, "headMe")
}
