package http

import "github.com/resourceapi/resourceapi"

// webhookSchema is an endpoint as the API shows it.
func webhookSchema(withSecret bool) *schema {
	nullable := func(s *schema) *schema { s.Type = []any{s.Type, "null"}; return s }
	props := ordered[*schema]{}
	props.set("id", idSchema())
	props.set("url", &schema{Type: "string", Format: "uri", Description: "Where deliveries go: https (http only where RESOURCEAPI_WEBHOOKS_ALLOW_HTTP is true)."})
	props.set("types", &schema{Type: "array", Items: &schema{Type: "string"},
		Description: "The event types delivered: <resource>.<created|updated|deleted>, <resource>.* or *."})
	props.set("enabled", &schema{Type: "boolean"})
	props.set("disabled_reason", nullable(&schema{Type: "string", Description: "Why the service disabled the endpoint (its deliveries failed for longer than the retry period); null otherwise."}))
	props.set("failing_since", nullable(&schema{Type: "string", Format: "date-time", Description: "Since when every delivery has failed; null while they succeed."}))
	if withSecret {
		props.set("secret", &schema{Type: "string", Description: "The signing secret (whsec_…), shown in this answer only: keep it now."})
	}
	props.set("previous_secret_expires_at", nullable(&schema{Type: "string", Format: "date-time",
		Description: "After a rotation, until when the previous secret still signs beside the new one; null otherwise."}))
	props.set("created_at", &schema{Type: "string", Format: "date-time"})
	props.set("updated_at", &schema{Type: "string", Format: "date-time"})
	req := []string{"id", "url", "types", "enabled", "disabled_reason", "failing_since", "previous_secret_expires_at", "created_at", "updated_at"}
	if withSecret {
		req = append(req, "secret")
	}
	return &schema{Type: "object", Properties: props, Required: req}
}

// deliverySchema is one entry of the delivery log.
func deliverySchema() *schema {
	nullable := func(s *schema) *schema { s.Type = []any{s.Type, "null"}; return s }
	props := ordered[*schema]{}
	props.set("id", idSchema())
	props.set("event_id", &schema{Type: "integer", Description: "The event's id (as SSE's id:)."})
	props.set("type", &schema{Type: "string", Description: "The event's type."})
	props.set("webhook_id", &schema{Type: "string", Description: "The webhook-id header: evt_<event id>, the same on every attempt and replay."})
	props.set("state", &schema{Type: "string", Enum: []any{resourceapi.DeliveryPending, resourceapi.DeliveryDelivered, resourceapi.DeliveryDead},
		Description: "pending (to be attempted, or retried at next_attempt_at), delivered (a 2xx answer), dead (dead-lettered: the retry period passed)."})
	props.set("attempts", &schema{Type: "integer"})
	props.set("status", nullable(&schema{Type: "integer", Description: "The last attempt's response status; 0 when none came; null before any attempt."}))
	props.set("latency_ms", nullable(&schema{Type: "integer", Description: "The last attempt's latency."}))
	props.set("response", nullable(&schema{Type: "string", Description: "The start of the last response's body (256 bytes at most), or why none came."}))
	for _, name := range []string{"last_attempt_at", "first_attempt_at", "next_attempt_at", "delivered_at"} {
		props.set(name, nullable(&schema{Type: "string", Format: "date-time"}))
	}
	props.set("replay_of", nullable(&schema{Type: "integer", Description: "The delivery this one replays."}))
	props.set("created_at", &schema{Type: "string", Format: "date-time"})
	attempt := ordered[*schema]{}
	attempt.set("at", &schema{Type: "string", Format: "date-time", Description: "When the attempt was made."})
	attempt.set("status", &schema{Type: "integer", Description: "The response status; 0 when none came."})
	attempt.set("latency_ms", &schema{Type: "integer", Description: "From the request to the response's status (or the failure)."})
	attempt.set("response", &schema{Type: "string", Description: "The start of the response's body (256 bytes at most), or why none came."})
	attempt.set("state", &schema{Type: "string", Enum: []any{resourceapi.DeliveryPending, resourceapi.DeliveryDelivered, resourceapi.DeliveryDead},
		Description: "The delivery's state after the attempt."})
	props.set("attempt_log", &schema{Type: "array", Description: "Every attempt, oldest first (kept as long as the delivery).",
		Items: &schema{Type: "object", Properties: attempt, Required: []string{"at", "status", "latency_ms", "response", "state"}}})
	return &schema{Type: "object", Properties: props}
}

func dataOf(item *schema) *schema {
	props := ordered[*schema]{}
	props.set("data", &schema{Type: "array", Items: item})
	return &schema{Type: "object", Properties: props, Required: []string{"data"}}
}

// webhookRoute describes one route of /api/webhooks.
func (g *docGen) webhookRoute(paths *ordered[*oaPathItem], rt route) {
	item := pathItem(paths, rt.path)
	idParam := &oaParam{Name: "id", In: "path", Required: true, Description: "The endpoint's id.", Schema: idSchema()}
	item.Parameters = []*oaParam{g.param("X-Request-ID"), g.param("Accept")}
	if rt.path != "/webhooks" {
		item.Parameters = append([]*oaParam{idParam}, item.Parameters...)
	}
	tags := []string{"webhooks"}
	json := func(s *schema) ordered[*oaMediaType] {
		return ordered[*oaMediaType]{{"application/json", &oaMediaType{Schema: s}}}
	}
	input := func(create bool) *oaRequestBody {
		props := ordered[*schema]{}
		props.set("url", &schema{Type: "string", Format: "uri", MaxLength: new(resourceapi.MaxWebhookURL)})
		props.set("types", &schema{Type: "array", Items: &schema{Type: "string"}, MinItems: new(1), MaxItems: new(resourceapi.MaxEventPatterns)})
		props.set("enabled", &schema{Type: "boolean", Description: "Default true. Setting it true again clears disabled_reason."})
		s := &schema{Type: "object", Properties: props, AdditionalProperties: new(false)}
		if create {
			s.Required = []string{"url", "types"}
		}
		return &oaRequestBody{Required: true, Content: json(s)}
	}
	const admins = " Admins only (anyone else: 403)."
	switch rt.method + " " + rt.path {
	case "GET /webhooks":
		op := &oaOperation{OperationID: "listWebhooks", Tags: tags, Summary: "List webhook endpoints",
			Description: "Every endpoint, oldest first (at most 100 exist), without secrets." + admins}
		op.Responses.set("200", &oaResponse{Description: "The endpoints.", Headers: g.headers(true, false), Content: json(dataOf(webhookSchema(false)))})
		g.errors(op, 401, 403, 406, 429, 500)
		item.Get, item.Head = op, headOf(op, "headListWebhooks")
	case "POST /webhooks":
		op := &oaOperation{OperationID: "createWebhook", Tags: tags, Summary: "Register a webhook endpoint",
			Description: "Registers an endpoint that receives the events of the types named, signed by the Standard Webhooks scheme. " +
				"The URL must be https and must not name a loopback, private, link-local or metadata address (unless the server allows them). " +
				"The signing secret is generated and shown in this answer only." + admins,
			RequestBody: input(true)}
		op.Responses.set("201", &oaResponse{Description: "Registered; Location names it.", Headers: g.headers(true, false), Content: json(webhookSchema(true))})
		g.errors(op, 400, 401, 403, 406, 413, 415, 422, 429, 500)
		item.Post = op
	case "GET /webhooks/{id}":
		op := &oaOperation{OperationID: "getWebhook", Tags: tags, Summary: "Get a webhook endpoint", Description: "Without its secret." + admins}
		op.Responses.set("200", &oaResponse{Description: "The endpoint.", Headers: g.headers(true, false), Content: json(webhookSchema(false))})
		g.errors(op, 401, 403, 404, 406, 429, 500)
		item.Get, item.Head = op, headOf(op, "headWebhook")
	case "PATCH /webhooks/{id}":
		op := &oaOperation{OperationID: "updateWebhook", Tags: tags, Summary: "Change a webhook endpoint",
			Description: "Changes the members sent (url, types, enabled)." + admins, RequestBody: input(false)}
		op.Responses.set("200", &oaResponse{Description: "The endpoint as changed.", Headers: g.headers(true, false), Content: json(webhookSchema(false))})
		g.errors(op, 400, 401, 403, 404, 406, 413, 415, 429, 500)
		item.Patch = op
	case "DELETE /webhooks/{id}":
		op := &oaOperation{OperationID: "deleteWebhook", Tags: tags, Summary: "Delete a webhook endpoint",
			Description: "Deletes the endpoint and its delivery log; nothing more is delivered to it." + admins}
		op.Responses.set("204", &oaResponse{Description: "Deleted.", Headers: g.headers(true, false)})
		g.errors(op, 401, 403, 404, 406, 429, 500)
		item.Delete = op
	case "POST /webhooks/{id}/rotate":
		op := &oaOperation{OperationID: "rotateWebhookSecret", Tags: tags, Summary: "Rotate a webhook endpoint's secret",
			Description: "Generates a new secret, shown in this answer only. The previous secret keeps signing beside it " +
				"(two signatures in webhook-signature) until previous_secret_expires_at (RESOURCEAPI_WEBHOOKS_ROTATION_OVERLAP, default 24 h)." + admins}
		op.Responses.set("200", &oaResponse{Description: "The endpoint, with its new secret.", Headers: g.headers(true, false), Content: json(webhookSchema(true))})
		g.errors(op, 401, 403, 404, 406, 429, 500)
		item.Post = op
	case "GET /webhooks/{id}/deliveries":
		op := &oaOperation{OperationID: "listWebhookDeliveries", Tags: tags, Summary: "A webhook endpoint's delivery log",
			Description: "The deliveries to the endpoint, newest first: every attempt (when, status, latency, the start of the response), the last one's also beside it, and whether it was delivered or dead-lettered." + admins,
			Parameters: []*oaParam{
				{Name: "limit", In: "query", Description: "At most this many (1 to 1000; default 50).", Schema: &schema{Type: "integer", Minimum: new(int64(1)), Maximum: new(int64(resourceapi.MaxDeliveryPage))}},
				{Name: "before", In: "query", Description: "Only deliveries whose id is below this one (the next page: the last id of this one).", Schema: idSchema()},
			}}
		op.Responses.set("200", &oaResponse{Description: "A page of the log.", Headers: g.headers(true, false), Content: json(dataOf(deliverySchema()))})
		g.errors(op, 400, 401, 403, 404, 406, 429, 500)
		item.Get, item.Head = op, headOf(op, "headWebhookDeliveries")
	case "POST /webhooks/{id}/deliveries/{delivery}/replay":
		item.Parameters = append([]*oaParam{{Name: "delivery", In: "path", Required: true, Description: "The delivery's id.", Schema: idSchema()}}, item.Parameters...)
		op := &oaOperation{OperationID: "replayWebhookDelivery", Tags: tags, Summary: "Replay one delivery",
			Description: "Delivers the same message again (the same webhook-id: a receiver that dedupes drops it), as a new delivery." + admins}
		op.Responses.set("202", &oaResponse{Description: "Queued.", Headers: g.headers(true, false), Content: json(dataOf(deliverySchema()))})
		g.errors(op, 400, 401, 403, 404, 406, 429, 500)
		item.Post = op
	case "POST /webhooks/{id}/replay":
		props := ordered[*schema]{}
		props.set("from", &schema{Type: "string", Format: "date-time"})
		props.set("to", &schema{Type: "string", Format: "date-time"})
		op := &oaOperation{OperationID: "replayWebhookDeliveries", Tags: tags, Summary: "Replay the deliveries of a time range",
			Description: "Delivers again every delivery to the endpoint created from `from` (included) to `to` (excluded), at most 1000, as new deliveries." + admins,
			RequestBody: &oaRequestBody{Required: true, Content: json(&schema{Type: "object", Properties: props, Required: []string{"from", "to"}, AdditionalProperties: new(false)})}}
		op.Responses.set("202", &oaResponse{Description: "Queued.", Headers: g.headers(true, false), Content: json(dataOf(deliverySchema()))})
		g.errors(op, 400, 401, 403, 404, 406, 413, 415, 429, 500)
		item.Post = op
	}
}
