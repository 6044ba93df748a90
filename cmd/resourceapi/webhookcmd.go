package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/resourceapi/resourceapi"
)

// The webhook commands: they call the rule layer's webhook methods, as
// /api/webhooks does, acting as the service itself.

// webhookJSON is an endpoint as webhook list --json writes it (never its
// secret).
type webhookJSON struct {
	ID             int64      `json:"id"`
	URL            string     `json:"url"`
	Types          []string   `json:"types"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

func parseWebhookID(cmd, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, usageErrorf("%s: %q is not a webhook id (see webhook list)", cmd, s)
	}
	return id, nil
}

var webhookCreateCommand = &command{
	name:     "webhook create",
	synopsis: "--url U --type T... [--disabled]",
	summary:  "register a webhook endpoint; its signing secret is printed once, on the last line",
	about: `Register an endpoint that receives the events of the types named, signed by
the Standard Webhooks scheme. A type is <resource>.<created|updated|deleted>,
<resource>.* or *. The URL must be https (http only with
RESOURCEAPI_WEBHOOKS_ALLOW_HTTP=true) and must not name a loopback, private,
link-local or metadata address (unless RESOURCEAPI_WEBHOOKS_ALLOW_PRIVATE=true).
The secret is shown once, alone on the last line, for scripts:

  SECRET=$(resourceapi webhook create --url https://hooks.example.com/in --type 'users.*' | tail -n 1)`,
	setup: func(fs *flag.FlagSet) action {
		url := fs.String("url", "", "the endpoint's `URL` (required)")
		var types stringList
		fs.Var(&types, "type", "an event `type` to deliver (repeatable, required)")
		disabled := fs.Bool("disabled", false, "register it disabled: nothing is delivered until it is enabled")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			if err := required(fs, "url", "type"); err != nil {
				return err
			}
			enabled := !*disabled
			list := []string(types)
			w, err := m.svc.CreateWebhook(ctx, system, resourceapi.WebhookInput{URL: url, Types: &list, Enabled: &enabled})
			if err != nil {
				return explain("create webhook", err)
			}
			fmt.Fprintf(m.stdout, "Created webhook %d for %s (%s). Its signing secret is shown once, on the next line:\n%s\n",
				w.ID, w.URL, strings.Join(w.Types, ", "), w.Secret)
			return nil
		})
	},
}

var webhookListCommand = &command{
	name:     "webhook list",
	synopsis: "[--json]",
	summary:  "list webhook endpoints: id, URL, types, whether enabled (never the secret)",
	about: `List the webhook endpoints: id (for the other webhook commands), URL, event
types, and whether each is enabled; an endpoint the service disabled says why.
--json writes a JSON array for scripts.`,
	setup: func(fs *flag.FlagSet) action {
		asJSON := fs.Bool("json", false, "write JSON for scripts")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			hooks, err := m.svc.Webhooks(ctx, system)
			if err != nil {
				return explain("list webhooks", err)
			}
			out := make([]webhookJSON, len(hooks))
			for i, w := range hooks {
				out[i] = webhookJSON{ID: w.ID, URL: w.URL, Types: w.Types, Enabled: w.Enabled, DisabledReason: w.DisabledReason, CreatedAt: w.CreatedAt.UTC()}
				if !w.FailingSince.IsZero() {
					t := w.FailingSince.UTC()
					out[i].FailingSince = &t
				}
			}
			if *asJSON {
				return writeJSON(m.stdout, out)
			}
			tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tURL\tTYPES\tENABLED\tCREATED")
			for _, w := range out {
				enabled := strconv.FormatBool(w.Enabled)
				if w.DisabledReason != "" {
					enabled += " (" + w.DisabledReason + ")"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", w.ID, w.URL, strings.Join(w.Types, ","), enabled, w.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		})
	},
}

var webhookDeleteCommand = &command{
	name:     "webhook delete",
	synopsis: "<id>...",
	summary:  "delete webhook endpoints and their delivery logs, by the ids webhook list shows",
	about:    `Delete the webhook endpoints with these ids: nothing more is delivered to them.`,
	minArgs:  1, maxArgs: -1,
	setup: func(fs *flag.FlagSet) action {
		return managed(func(ctx context.Context, m *manager, args []string) error {
			ids := make([]int64, len(args))
			for i, a := range args {
				id, err := parseWebhookID("webhook delete", a)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			for _, id := range ids {
				if err := m.svc.DeleteWebhook(ctx, system, id); err != nil {
					return explain(fmt.Sprintf("delete webhook %d", id), err)
				}
				fmt.Fprintf(m.stdout, "Deleted webhook %d.\n", id)
			}
			return nil
		})
	},
}

var webhookRotateCommand = &command{
	name:     "webhook rotate",
	synopsis: "<id>",
	summary:  "give a webhook endpoint a new signing secret, printed once, on the last line",
	about: `Give the endpoint a new signing secret, shown once, alone on the last line.
The previous secret keeps signing beside it (two signatures per delivery) for
RESOURCEAPI_WEBHOOKS_ROTATION_OVERLAP (24h), so the receiver can switch.`,
	minArgs: 1, maxArgs: 1,
	setup: func(fs *flag.FlagSet) action {
		return managed(func(ctx context.Context, m *manager, args []string) error {
			id, err := parseWebhookID("webhook rotate", args[0])
			if err != nil {
				return err
			}
			w, err := m.svc.RotateWebhookSecret(ctx, system, id)
			if err != nil {
				return explain(fmt.Sprintf("rotate webhook %d", id), err)
			}
			fmt.Fprintf(m.stdout, "Rotated the secret of webhook %d; the previous one signs too until %s. The new secret is shown once, on the next line:\n%s\n",
				w.ID, w.PreviousUntil.UTC().Format(time.RFC3339), w.Secret)
			return nil
		})
	},
}

var webhookDeliveriesCommand = &command{
	name:     "webhook deliveries",
	synopsis: "[--limit N] [--json] <id>",
	summary:  "show a webhook endpoint's delivery log, newest first",
	about: `Show the endpoint's latest deliveries, newest first: id, event, type, state
(pending, delivered, dead), attempts, the last attempt's status and latency, and
the start of its response. --json writes a JSON array for scripts.`,
	minArgs: 1, maxArgs: 1,
	setup: func(fs *flag.FlagSet) action {
		limit := fs.Int("limit", 20, "at most this many `deliveries` (1 to 1000)")
		asJSON := fs.Bool("json", false, "write JSON for scripts")
		attempts := fs.Bool("attempts", false, "list every attempt under its delivery (--json always has them, as attempt_log)")
		return managed(func(ctx context.Context, m *manager, args []string) error {
			id, err := parseWebhookID("webhook deliveries", args[0])
			if err != nil {
				return err
			}
			if *limit < 1 || *limit > resourceapi.MaxDeliveryPage {
				return usageErrorf("webhook deliveries: --limit must be from 1 to %d", resourceapi.MaxDeliveryPage)
			}
			ds, err := m.svc.WebhookDeliveries(ctx, system, id, 0, *limit)
			if err != nil {
				return explain(fmt.Sprintf("deliveries of webhook %d", id), err)
			}
			type deliveryJSON struct {
				ID        int64     `json:"id"`
				EventID   int64     `json:"event_id"`
				Type      string    `json:"type"`
				WebhookID string    `json:"webhook_id"`
				State     string    `json:"state"`
				Attempts  int       `json:"attempts"`
				Status    int       `json:"status"`
				LatencyMS int64     `json:"latency_ms"`
				Response  string    `json:"response"`
				CreatedAt time.Time `json:"created_at"`
				// AttemptLog is every attempt, oldest first.
				AttemptLog []attemptJSON `json:"attempt_log"`
			}
			out := make([]deliveryJSON, len(ds))
			for i, d := range ds {
				out[i] = deliveryJSON{ID: d.ID, EventID: d.EventID, Type: d.EventType, WebhookID: d.MessageID, State: d.State, Attempts: d.Attempts,
					Status: d.LastStatus, LatencyMS: d.LastLatency.Milliseconds(), Response: d.LastResponse, CreatedAt: d.CreatedAt.UTC(),
					AttemptLog: make([]attemptJSON, len(d.History))}
				for j, a := range d.History {
					out[i].AttemptLog[j] = attemptJSON{At: a.At.UTC(), Status: a.Status, LatencyMS: a.Latency.Milliseconds(), Response: a.Response, State: a.State}
				}
			}
			if *asJSON {
				return writeJSON(m.stdout, out)
			}
			tw := tabwriter.NewWriter(m.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEVENT\tTYPE\tSTATE\tATTEMPTS\tSTATUS\tLATENCY\tRESPONSE")
			for _, d := range out {
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t%dms\t%s\n", d.ID, d.EventID, d.Type, d.State, d.Attempts, d.Status, d.LatencyMS, shortResponse(d.Response))
				if *attempts {
					for _, a := range d.AttemptLog {
						fmt.Fprintf(tw, "\t\t%s\t%s\t\t%d\t%dms\t%s\n", a.At.Format(time.RFC3339), a.State, a.Status, a.LatencyMS, shortResponse(a.Response))
					}
				}
			}
			return tw.Flush()
		})
	},
}

// attemptJSON is one attempt of a delivery, as `webhook deliveries --json`
// writes it.
type attemptJSON struct {
	At        time.Time `json:"at"`
	Status    int       `json:"status"`
	LatencyMS int64     `json:"latency_ms"`
	Response  string    `json:"response"`
	State     string    `json:"state"`
}

// shortResponse is a response's start on one line, for a table.
func shortResponse(r string) string {
	r = strings.Join(strings.Fields(r), " ")
	if len(r) > 40 {
		r = r[:40] + "…"
	}
	return r
}
