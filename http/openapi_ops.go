package http

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
