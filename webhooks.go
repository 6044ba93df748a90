package resourceapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhooks: endpoints to which the service delivers events (docs/events.md).
// They are not a declared resource: an endpoint's signing secret must stay
// usable (the service signs every delivery with it), which no declared
// secret is (those are hashed); rotation, the delivery log and replay are
// actions, not writes of a record; and a declared resource's writes publish
// events, which the endpoints would then receive about themselves. So the
// rules are here, as Service methods that REST and the command line call,
// and the store keeps the endpoints and their deliveries in tables of their
// own (WebhookStore).

// WebhookSecretPrefix starts every webhook signing secret, as the Standard
// Webhooks specification writes them.
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a new signing secret: WebhookSecretPrefix and 32
// random bytes in base64.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Webhook is an endpoint that receives events.
type Webhook struct {
	ID  int64
	URL string
	// Types are the event patterns the endpoint receives (EventFilter).
	Types   []string
	Enabled bool
	// DisabledReason says why the service disabled the endpoint (every
	// delivery failed for longer than the retry period); "" otherwise.
	DisabledReason string
	// FailingSince is when the endpoint's deliveries began to fail, none
	// having succeeded since; zero while they succeed.
	FailingSince time.Time
	// Secret is the signing secret. The Service shows it once: in what
	// CreateWebhook and RotateWebhookSecret return, never again.
	Secret string
	// PreviousSecret, until PreviousUntil, signs beside Secret (a
	// rotation's overlap). Never shown.
	PreviousSecret string
	PreviousUntil  time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Secrets returns the secrets that sign a delivery made at now: the
// current one, and the previous one during a rotation's overlap.
func (w Webhook) Secrets(now time.Time) []string {
	out := []string{w.Secret}
	if w.PreviousSecret != "" && now.Before(w.PreviousUntil) {
		out = append(out, w.PreviousSecret)
	}
	return out
}

// Webhook delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead" // dead-lettered: the retry period passed
)

// WebhookDelivery is one event to deliver to one endpoint, and what came of
// it: the delivery log.
type WebhookDelivery struct {
	ID        int64
	WebhookID int64
	EventID   int64
	EventType string
	// MessageID is the webhook-id header: the same on every attempt and
	// replay of the event, so that a receiver drops what it already has.
	MessageID string
	// RecordKey names the record the event is about ("orders/7"):
	// deliveries of one record to one endpoint go in order.
	RecordKey string
	// Body is the message, as signed and sent.
	Body  []byte
	State string
	// Attempts counts the attempts made; the Last fields describe the
	// latest.
	Attempts      int
	LastStatus    int // 0: no response
	LastLatency   time.Duration
	LastResponse  string // the start of the response body, or why none came
	LastAttemptAt time.Time
	// FirstAttemptAt is when the first attempt was made: the retry period
	// counts from it.
	FirstAttemptAt time.Time
	NextAttemptAt  time.Time
	DeliveredAt    time.Time
	// ReplayOf is the delivery this one replays; 0 for an original.
	ReplayOf  int64
	CreatedAt time.Time
	// History is every attempt made, oldest first (their At, Status,
	// Latency, Response and State): WebhookDeliveries fills it.
	History []WebhookAttempt
}

// WebhookAttempt is the outcome of one attempt, as the worker reports it
// (FinishWebhookDeliveries) and the delivery log shows it
// (WebhookDelivery.History).
type WebhookAttempt struct {
	DeliveryID int64
	// Owner is the instance that holds the delivery's lease.
	Owner    string
	At       time.Time
	Status   int
	Latency  time.Duration
	Response string
	// State is the delivery's state after the attempt: DeliveryDelivered,
	// DeliveryPending (then retried at Next) or DeliveryDead.
	State string
	Next  time.Time
}

// WebhookRound is what one write transaction of a webhook worker does
// (WebhookStore.RunWebhookRound), in this order: it records Attempts (as
// FinishWebhookDeliveries), gives back Release (as
// ReleaseWebhookDeliveries), fans out at most FanOut events by Fan (as
// FanOutWebhookEvents), then claims at most Room(endpoint) deliveries of
// each endpoint (as ClaimWebhookDeliveries), those the fan-out just made
// included. On SQLite every write transaction of the worker shares the one
// writer, and its fsync, with the requests' writes: a round is one of them
// where the four operations were four.
type WebhookRound struct {
	// Owner names the instance in leases.
	Owner    string
	Attempts []WebhookAttempt
	Release  []int64
	// FanOut is how many events to fan out at most; 0: none.
	FanOut int
	Fan    func([]Webhook, []Event) ([]WebhookDelivery, error)
	// Room, when not nil, says how many deliveries of an endpoint to
	// claim, due at Now, leased until Now+Lease. It is called at most once
	// per endpoint and round.
	Room  func(webhook int64) int
	Now   time.Time
	Lease time.Duration
}

// WebhookRoundResult is what a round did.
type WebhookRoundResult struct {
	// Wrote says whether the round ran its write transaction: a round with
	// nothing to record, fan out or claim writes nothing.
	Wrote bool
	// FannedOut is how many events the round fanned out.
	FannedOut int
	// Claimed are the deliveries it leased to Owner, oldest first.
	Claimed []WebhookDelivery
}

// WebhookStore keeps webhook endpoints and their deliveries. Each method is
// one transaction.
type WebhookStore interface {
	// CreateWebhook stores w (its ID and timestamps are set) and returns it
	// as stored.
	CreateWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// Webhooks returns the endpoints in id order, at most limit.
	Webhooks(ctx context.Context, limit int) ([]Webhook, error)
	// Webhook returns the endpoint id, or CodeNotFound.
	Webhook(ctx context.Context, id int64) (Webhook, error)
	// UpdateWebhook calls change with endpoint id as stored, and stores
	// what it leaves (but its ID and CreatedAt), with UpdatedAt now; an
	// error of change aborts the update and is returned as is. Returns
	// CodeNotFound when there is no such endpoint.
	UpdateWebhook(ctx context.Context, id int64, change func(*Webhook) error) (Webhook, error)
	// DeleteWebhook deletes endpoint id and its deliveries, or returns
	// CodeNotFound.
	DeleteWebhook(ctx context.Context, id int64) error
	// WebhookDeliveries returns endpoint id's deliveries whose ids are
	// below before (0: all), newest first, at most limit. Returns
	// CodeNotFound when there is no such endpoint.
	WebhookDeliveries(ctx context.Context, id, before int64, limit int) ([]WebhookDelivery, error)
	// ReplayWebhookDeliveries queues again, as new pending deliveries
	// (ReplayOf set), endpoint id's deliveries that delivery names (when
	// not 0) or, else, that were created in [from, to), at most limit, and
	// returns the new ones. Returns CodeNotFound when there is no such
	// endpoint or delivery.
	ReplayWebhookDeliveries(ctx context.Context, id, delivery int64, from, to time.Time, limit int) ([]WebhookDelivery, error)

	// FanOutWebhookEvents takes the oldest committed events not yet fanned
	// out, at most limit, in id order, calls fan with them and the enabled
	// endpoints, stores the deliveries fan returns and marks the events
	// fanned out, in one transaction: each event is fanned out once, by one
	// instance, whatever order concurrent writes commit in. It returns how
	// many events it took.
	FanOutWebhookEvents(ctx context.Context, limit int, fan func([]Webhook, []Event) ([]WebhookDelivery, error)) (int, error)
	// ClaimWebhookDeliveries leases to owner, until now+lease, pending
	// deliveries of enabled endpoints that are due at now and leased to no
	// one (or whose lease has expired), each the oldest pending delivery
	// of its record to its endpoint (so that they go in order), oldest
	// first, at most room(endpoint) of each endpoint, in one transaction
	// (none when nothing can be claimed). Instances claim distinct
	// deliveries.
	ClaimWebhookDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, room func(webhook int64) int) ([]WebhookDelivery, error)
	// FinishWebhookDeliveries records attempts, in one transaction: each
	// updates its delivery (state, count, last attempt) and releases its
	// lease, is kept in the delivery's History, and moves the endpoint's
	// FailingSince (cleared by a success, set by the first failure). An
	// attempt whose lease is no longer its Owner's (it expired and another
	// instance took the delivery) records nothing.
	FinishWebhookDeliveries(ctx context.Context, attempts []WebhookAttempt) error
	// ReleaseWebhookDeliveries gives back, unattempted, the deliveries of
	// ids that owner holds, for any instance to claim again.
	ReleaseWebhookDeliveries(ctx context.Context, owner string, ids []int64) error
	// RunWebhookRound does what r says in one transaction, or none when
	// there is nothing to record, fan out or claim (it reads first).
	RunWebhookRound(ctx context.Context, r WebhookRound) (WebhookRoundResult, error)
	// DisableFailingWebhooks disables the enabled endpoints failing since
	// before cutoff, with reason, dead-letters their pending deliveries
	// first attempted before cutoff, and returns them.
	DisableFailingWebhooks(ctx context.Context, cutoff time.Time, reason string) ([]Webhook, error)
	// PurgeWebhookDeliveries deletes at most limit delivered or
	// dead-lettered deliveries created before t, oldest first, with their
	// attempts, and returns how many.
	PurgeWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
}

// MaxWebhooks bounds the endpoints of a service: each receives every
// matching event, and every one is read for each batch of events.
const MaxWebhooks = 100

// MaxWebhookURL bounds an endpoint's URL, in bytes.
const MaxWebhookURL = 2048

// WebhookPolicy is what the service's configuration says of webhooks.
type WebhookPolicy struct {
	// CheckURL returns why a URL may not receive deliveries (scheme,
	// private addresses: package webhook's CheckURL with the configured
	// options), or nil.
	CheckURL func(string) error
	// Overlap is how long, after a rotation, the previous secret signs
	// beside the new one (default 24 h).
	Overlap time.Duration
}

// SetWebhookPolicy gives the service its webhook settings. Call it before
// the service serves requests; without it, no URL is accepted.
func (s *Service) SetWebhookPolicy(p WebhookPolicy) { s.webhooks = p }

// WebhookInput is the writable part of an endpoint: a create sets URL and
// Types (Enabled defaults to true); a patch sets what is not nil.
type WebhookInput struct {
	URL     *string
	Types   *[]string
	Enabled *bool
}

func (s *Service) webhookStore(ctx context.Context, c *Caller) (WebhookStore, error) {
	if err := s.RequireAdmin(ctx, c); err != nil {
		return nil, err
	}
	ws, ok := s.store.(WebhookStore)
	if !ok {
		return nil, Errorf(CodeUnavailable, "This store keeps no webhooks")
	}
	return ws, nil
}

// checkWebhook validates in, and fills w with it.
func (s *Service) checkWebhook(in WebhookInput, w *Webhook) error {
	var details []FieldError
	if in.URL != nil {
		u := *in.URL
		switch {
		case u == "":
			details = append(details, FieldError{Field: "url", Message: "is required"})
		case len(u) > MaxWebhookURL || !utf8.ValidString(u):
			details = append(details, FieldError{Field: "url", Message: fmt.Sprintf("must be a URL of at most %d bytes", MaxWebhookURL)})
		case s.webhooks.CheckURL == nil:
			details = append(details, FieldError{Field: "url", Message: "no URL is accepted: webhooks are not configured"})
		default:
			if err := s.webhooks.CheckURL(u); err != nil {
				details = append(details, FieldError{Field: "url", Message: strings.TrimPrefix(err.Error(), "webhook: ")})
			}
		}
		w.URL = u
	}
	if in.Types != nil {
		f, err := NewEventFilter(*in.Types)
		if err != nil {
			e := ErrorOf(err)
			if len(e.Details) > 0 {
				details = append(details, e.Details...)
			} else {
				details = append(details, FieldError{Field: "types", Message: e.Message})
			}
		} else {
			w.Types = f.Patterns()
		}
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
		if w.Enabled {
			w.DisabledReason, w.FailingSince = "", time.Time{}
		}
	}
	if len(details) > 0 {
		return &Error{Code: CodeValidation, Message: "Invalid webhook", Details: details}
	}
	return nil
}

// hideSecrets returns w without its secrets.
func hideSecrets(w Webhook) Webhook {
	w.Secret, w.PreviousSecret = "", ""
	return w
}

// CreateWebhook registers an endpoint (admins only). The secret is
// generated here and returned once, in the Webhook returned.
func (s *Service) CreateWebhook(ctx context.Context, c *Caller, in WebhookInput) (Webhook, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return Webhook{}, err
	}
	var details []FieldError
	if in.URL == nil {
		details = append(details, FieldError{Field: "url", Message: "is required"})
	}
	if in.Types == nil {
		details = append(details, FieldError{Field: "types", Message: "is required: <resource>.<created|updated|deleted>, <resource>.* or *"})
	}
	if details != nil {
		return Webhook{}, &Error{Code: CodeValidation, Message: "Invalid webhook", Details: details}
	}
	w := Webhook{Enabled: true}
	if err := s.checkWebhook(in, &w); err != nil {
		return Webhook{}, err
	}
	all, err := ws.Webhooks(ctx, MaxWebhooks)
	if err != nil {
		return Webhook{}, err
	}
	if len(all) >= MaxWebhooks {
		return Webhook{}, Errorf(CodeUnprocessable, "At most %d webhooks: delete one first", MaxWebhooks)
	}
	w.Secret = NewWebhookSecret()
	out, err := ws.CreateWebhook(ctx, w)
	if err != nil {
		return Webhook{}, err
	}
	secret := out.Secret
	out = hideSecrets(out)
	out.Secret = secret
	return out, nil
}

// Webhooks lists the endpoints (admins only), without their secrets.
func (s *Service) Webhooks(ctx context.Context, c *Caller) ([]Webhook, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return nil, err
	}
	all, err := ws.Webhooks(ctx, MaxWebhooks)
	for i := range all {
		all[i] = hideSecrets(all[i])
	}
	return all, err
}

// Webhook returns endpoint id (admins only), without its secrets.
func (s *Service) Webhook(ctx context.Context, c *Caller, id int64) (Webhook, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return Webhook{}, err
	}
	w, err := ws.Webhook(ctx, id)
	return hideSecrets(w), err
}

// UpdateWebhook changes what in sets of endpoint id (admins only).
// Enabling an endpoint clears why the service disabled it.
func (s *Service) UpdateWebhook(ctx context.Context, c *Caller, id int64, in WebhookInput) (Webhook, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return Webhook{}, err
	}
	w, err := ws.UpdateWebhook(ctx, id, func(w *Webhook) error { return s.checkWebhook(in, w) })
	return hideSecrets(w), err
}

// DeleteWebhook deletes endpoint id and its delivery log (admins only).
func (s *Service) DeleteWebhook(ctx context.Context, c *Caller, id int64) error {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return err
	}
	return ws.DeleteWebhook(ctx, id)
}

// RotateWebhookSecret gives endpoint id a new secret, returned once, and
// keeps the current one signing beside it for the policy's overlap (admins
// only).
func (s *Service) RotateWebhookSecret(ctx context.Context, c *Caller, id int64) (Webhook, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return Webhook{}, err
	}
	overlap := s.webhooks.Overlap
	if overlap <= 0 {
		overlap = 24 * time.Hour
	}
	secret := NewWebhookSecret()
	w, err := ws.UpdateWebhook(ctx, id, func(w *Webhook) error {
		w.PreviousSecret, w.PreviousUntil = w.Secret, Timestamp(time.Now().Add(overlap))
		w.Secret = secret
		return nil
	})
	if err != nil {
		return Webhook{}, err
	}
	w = hideSecrets(w)
	w.Secret = secret
	return w, nil
}

// MaxDeliveryPage bounds a page of the delivery log, and a replay.
const MaxDeliveryPage = 1000

// WebhookDeliveries returns a page of endpoint id's delivery log, newest
// first, before the delivery id before (0: from the newest), at most limit
// (admins only).
func (s *Service) WebhookDeliveries(ctx context.Context, c *Caller, id, before int64, limit int) ([]WebhookDelivery, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxDeliveryPage {
		return nil, Errorf(CodeValidation, "limit must be from 1 to %d", MaxDeliveryPage)
	}
	return ws.WebhookDeliveries(ctx, id, before, limit)
}

// ReplayWebhookDeliveries delivers again, as new deliveries with the same
// webhook-id, endpoint id's delivery named delivery (when not 0), or those
// created in [from, to), at most MaxDeliveryPage (admins only).
func (s *Service) ReplayWebhookDeliveries(ctx context.Context, c *Caller, id, delivery int64, from, to time.Time) ([]WebhookDelivery, error) {
	ws, err := s.webhookStore(ctx, c)
	if err != nil {
		return nil, err
	}
	if delivery == 0 && (from.IsZero() || to.IsZero() || !from.Before(to)) {
		return nil, Errorf(CodeValidation, "Name a delivery, or a time range: from before to")
	}
	return ws.ReplayWebhookDeliveries(ctx, id, delivery, from, to, MaxDeliveryPage)
}
