package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// The webhook endpoints (/api/webhooks): each handler translates a request
// into a call of the rule layer (resourceapi.Service's webhook methods,
// which allow admins only) and its answer into JSON.

// webhookJSON is an endpoint as the API shows it. Secret is there only in
// the answers to a create and a rotation.
type webhookJSON struct {
	ID                      int64    `json:"id"`
	URL                     string   `json:"url"`
	Types                   []string `json:"types"`
	Enabled                 bool     `json:"enabled"`
	DisabledReason          *string  `json:"disabled_reason"`
	FailingSince            *string  `json:"failing_since"`
	Secret                  string   `json:"secret,omitempty"`
	PreviousSecretExpiresAt *string  `json:"previous_secret_expires_at"`
	CreatedAt               string   `json:"created_at"`
	UpdatedAt               string   `json:"updated_at"`
}

// showTime formats a time as the API shows timestamps; nil for zero.
func showTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := resourceapi.Timestamp(t).Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}

func showWebhook(w resourceapi.Webhook) webhookJSON {
	out := webhookJSON{ID: w.ID, URL: w.URL, Types: w.Types, Enabled: w.Enabled, FailingSince: showTime(w.FailingSince),
		Secret: w.Secret, CreatedAt: *showTime(w.CreatedAt), UpdatedAt: *showTime(w.UpdatedAt)}
	if w.DisabledReason != "" {
		out.DisabledReason = &w.DisabledReason
	}
	if w.PreviousUntil.After(time.Now()) {
		out.PreviousSecretExpiresAt = showTime(w.PreviousUntil)
	}
	if out.Types == nil {
		out.Types = []string{}
	}
	return out
}

// deliveryJSON is one entry of the delivery log.
type deliveryJSON struct {
	ID             int64         `json:"id"`
	EventID        int64         `json:"event_id"`
	Type           string        `json:"type"`
	MessageID      string        `json:"webhook_id"`
	State          string        `json:"state"`
	Attempts       int           `json:"attempts"`
	Status         *int          `json:"status"`
	LatencyMS      *int64        `json:"latency_ms"`
	Response       *string       `json:"response"`
	LastAttemptAt  *string       `json:"last_attempt_at"`
	FirstAttemptAt *string       `json:"first_attempt_at"`
	NextAttemptAt  *string       `json:"next_attempt_at"`
	DeliveredAt    *string       `json:"delivered_at"`
	ReplayOf       *int64        `json:"replay_of"`
	CreatedAt      string        `json:"created_at"`
	AttemptLog     []attemptJSON `json:"attempt_log"`
}

// attemptJSON is one attempt of a delivery.
type attemptJSON struct {
	At        string `json:"at"`
	Status    int    `json:"status"`
	LatencyMS int64  `json:"latency_ms"`
	Response  string `json:"response"`
	State     string `json:"state"`
}

func showDelivery(d resourceapi.WebhookDelivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID, EventID: d.EventID, Type: d.EventType, MessageID: d.MessageID, State: d.State, Attempts: d.Attempts,
		LastAttemptAt: showTime(d.LastAttemptAt), FirstAttemptAt: showTime(d.FirstAttemptAt), DeliveredAt: showTime(d.DeliveredAt),
		CreatedAt: *showTime(d.CreatedAt)}
	if d.Attempts > 0 {
		status, ms, resp := d.LastStatus, d.LastLatency.Milliseconds(), d.LastResponse
		out.Status, out.LatencyMS, out.Response = &status, &ms, &resp
	}
	if d.State == resourceapi.DeliveryPending {
		out.NextAttemptAt = showTime(d.NextAttemptAt)
	}
	if d.ReplayOf != 0 {
		out.ReplayOf = &d.ReplayOf
	}
	out.AttemptLog = make([]attemptJSON, len(d.History))
	for i, a := range d.History {
		out.AttemptLog[i] = attemptJSON{At: *showTime(a.At), Status: a.Status, LatencyMS: a.Latency.Milliseconds(), Response: a.Response, State: a.State}
	}
	return out
}

// webhookBody is what a create or a patch may send.
type webhookBody struct {
	URL     *string   `json:"url"`
	Types   *[]string `json:"types"`
	Enabled *bool     `json:"enabled"`
}

// decodeStrict decodes a JSON object body into v, refusing unknown members
// and anything after the object.
func (s *Server) decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	buf, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	defer putBuffer(buf)
	dec := json.NewDecoder(bytes.NewReader(*buf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := "The request body must be a JSON object"
		if ute, ok := err.(*json.UnmarshalTypeError); ok && ute.Field != "" {
			msg = "Field " + truncate(ute.Field, 40) + " must be " + ute.Type.String()
		} else if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			msg = "Unknown field " + truncate(f, 60)
		}
		return resourceapi.Errorf(resourceapi.CodeBadRequest, "%s", msg)
	}
	if dec.More() {
		return resourceapi.Errorf(resourceapi.CodeBadRequest, "The request body must be one JSON object")
	}
	return nil
}

// webhookID reads {id}: what is not an id names no endpoint (404).
func webhookID(r *http.Request, name string) (int64, error) {
	id, ok := parseID(r.PathValue(name))
	if !ok {
		if name == "delivery" {
			return 0, resourceapi.Errorf(resourceapi.CodeNotFound, "Delivery not found")
		}
		return 0, resourceapi.Errorf(resourceapi.CodeNotFound, "Webhook not found")
	}
	return id, nil
}

func writeValue(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeJSON(w, status, b)
	return nil
}

func (s *Server) webhookList() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		hooks, err := s.service.Webhooks(r.Context(), caller(r))
		if err != nil {
			return err
		}
		out := make([]webhookJSON, len(hooks))
		for i, h := range hooks {
			out[i] = showWebhook(h)
		}
		return writeValue(w, http.StatusOK, map[string]any{"data": out})
	})
}

func (s *Server) webhookCreate() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.service.RequireAdmin(r.Context(), caller(r)); err != nil {
			return err // before reading a body the caller may not send
		}
		var body webhookBody
		if err := s.decodeStrict(w, r, &body); err != nil {
			return err
		}
		hook, err := s.service.CreateWebhook(r.Context(), caller(r), resourceapi.WebhookInput(body))
		if err != nil {
			return err
		}
		w.Header().Set("Location", r.URL.Path+"/"+strconv.FormatInt(hook.ID, 10))
		w.Header().Set("Cache-Control", "no-store") // it holds the secret
		return writeValue(w, http.StatusCreated, showWebhook(hook))
	})
}

func (s *Server) webhookGet() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		hook, err := s.service.Webhook(r.Context(), caller(r), id)
		if err != nil {
			return err
		}
		return writeValue(w, http.StatusOK, showWebhook(hook))
	})
}

func (s *Server) webhookUpdate() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		if err := s.service.RequireAdmin(r.Context(), caller(r)); err != nil {
			return err
		}
		var body webhookBody
		if err := s.decodeStrict(w, r, &body); err != nil {
			return err
		}
		hook, err := s.service.UpdateWebhook(r.Context(), caller(r), id, resourceapi.WebhookInput(body))
		if err != nil {
			return err
		}
		return writeValue(w, http.StatusOK, showWebhook(hook))
	})
}

func (s *Server) webhookDelete() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		if err := s.service.DeleteWebhook(r.Context(), caller(r), id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func (s *Server) webhookRotate() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		hook, err := s.service.RotateWebhookSecret(r.Context(), caller(r), id)
		if err != nil {
			return err
		}
		w.Header().Set("Cache-Control", "no-store")
		return writeValue(w, http.StatusOK, showWebhook(hook))
	})
}

func (s *Server) webhookDeliveries() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		q := r.URL.Query()
		limit, before := 50, int64(0)
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > resourceapi.MaxDeliveryPage {
				return resourceapi.Errorf(resourceapi.CodeValidation, "limit must be an integer from 1 to %d", resourceapi.MaxDeliveryPage)
			}
			limit = n
		}
		if v := q.Get("before"); v != "" {
			n, ok := parseID(v)
			if !ok {
				return resourceapi.Errorf(resourceapi.CodeValidation, "before must be a delivery id")
			}
			before = n
		}
		ds, err := s.service.WebhookDeliveries(r.Context(), caller(r), id, before, limit)
		if err != nil {
			return err
		}
		out := make([]deliveryJSON, len(ds))
		for i, d := range ds {
			out[i] = showDelivery(d)
		}
		return writeValue(w, http.StatusOK, map[string]any{"data": out})
	})
}

// replayBody is the time range of POST /api/webhooks/{id}/replay.
type replayBody struct {
	From *time.Time `json:"from"`
	To   *time.Time `json:"to"`
}

func (s *Server) webhookReplay() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r, "id")
		if err != nil {
			return err
		}
		var delivery int64
		var from, to time.Time
		if r.PathValue("delivery") != "" {
			if delivery, err = webhookID(r, "delivery"); err != nil {
				return err
			}
		} else {
			if err := s.service.RequireAdmin(r.Context(), caller(r)); err != nil {
				return err
			}
			var body replayBody
			if err := s.decodeStrict(w, r, &body); err != nil {
				return err
			}
			if body.From == nil || body.To == nil {
				return &resourceapi.Error{Code: resourceapi.CodeValidation, Message: "Name the time range to replay",
					Details: []resourceapi.FieldError{{Field: "from", Message: "is required (RFC 3339)"}, {Field: "to", Message: "is required (RFC 3339)"}}}
			}
			from, to = *body.From, *body.To
		}
		ds, err := s.service.ReplayWebhookDeliveries(r.Context(), caller(r), id, delivery, from, to)
		if err != nil {
			return err
		}
		out := make([]deliveryJSON, len(ds))
		for i, d := range ds {
			out[i] = showDelivery(d)
		}
		return writeValue(w, http.StatusAccepted, map[string]any{"data": out})
	})
}

// webhookRoutes are the routes of /api/webhooks under prefix.
func (s *Server) webhookRoutes(prefix string) []route {
	return []route{
		{method: "GET", prefix: prefix, path: "/webhooks", kind: kindWebhooks, handler: s.api(s.webhookList())},
		{method: "POST", prefix: prefix, path: "/webhooks", kind: kindWebhooks, handler: s.api(s.webhookCreate())},
		{method: "GET", prefix: prefix, path: "/webhooks/{id}", kind: kindWebhooks, handler: s.api(s.webhookGet())},
		{method: "PATCH", prefix: prefix, path: "/webhooks/{id}", kind: kindWebhooks, handler: s.api(s.webhookUpdate())},
		{method: "DELETE", prefix: prefix, path: "/webhooks/{id}", kind: kindWebhooks, handler: s.api(s.webhookDelete())},
		{method: "POST", prefix: prefix, path: "/webhooks/{id}/rotate", kind: kindWebhooks, handler: s.api(s.webhookRotate())},
		{method: "GET", prefix: prefix, path: "/webhooks/{id}/deliveries", kind: kindWebhooks, handler: s.api(s.webhookDeliveries())},
		{method: "POST", prefix: prefix, path: "/webhooks/{id}/deliveries/{delivery}/replay", kind: kindWebhooks, handler: s.api(s.webhookReplay())},
		{method: "POST", prefix: prefix, path: "/webhooks/{id}/replay", kind: kindWebhooks, handler: s.api(s.webhookReplay())},
	}
}
