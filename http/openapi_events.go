package http

// eventsRoute describes GET /api/events, the Server-Sent Events stream.
func (g *docGen) eventsRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	item.Parameters = []*oaParam{g.param("X-Request-ID")}
	get := &oaOperation{OperationID: "streamEvents", Tags: []string{"service"},
		Summary: "Stream events (Server-Sent Events)",
		Description: "Streams, as text/event-stream, the events of every resource that the caller may read " +
			"(the permission <resource>:read, or owning the record where the resource lets owners read it; " +
			"private records to their owner and admins only). Each event has `id:` (its durable id), " +
			"`event:` (its type, <resource>.created|updated|deleted) and `data:` (JSON: id, type, resource, actor, at, record). " +
			"A client that reconnects with Last-Event-ID receives every event it missed that the outbox still keeps, " +
			"in order, then live ones, none twice; when events after it are older than the retention, an `expired` event says so. " +
			"Comment lines (`: heartbeat`) keep proxies from closing an idle stream. The credential is checked again " +
			"before each event: once it is revoked or expired, an `error` event ends the stream. See docs/events.md.",
		Parameters: []*oaParam{
			{Name: "types", In: "query", Description: "Event types, comma-separated: <resource>.<created|updated|deleted>, <resource>.* or *. Default: every event.",
				Schema: &schema{Type: "string"}},
			{Name: "Last-Event-ID", In: "header", Description: "The id of the last event received: resume after it (0: every event the outbox keeps).",
				Schema: &schema{Type: "string"}},
			{Name: "last_event_id", In: "query", Description: "As Last-Event-ID, for a first connection; the header wins.",
				Schema: &schema{Type: "string"}},
		}}
	get.Responses.set("200", &oaResponse{Description: "The stream, until the client, a revoked credential or the server ends it.",
		Content: ordered[*oaMediaType]{{"text/event-stream", &oaMediaType{Schema: &schema{Type: "string"}}}}})
	g.errors(get, 400, 401, 403, 429, 500, 503)
	item.Get = get
	item.Head = headOf(get, "headStreamEvents")
}
