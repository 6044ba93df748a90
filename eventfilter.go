package resourceapi

import (
	"context"
	"slices"
	"strings"
)

// EventFilter selects events by type: the patterns a stream's client or a
// webhook's endpoint names. A pattern is an event type ("orders.created"),
// every event of a resource ("orders.*"), or every event ("*"), of a
// declared resource and kind only. The zero EventFilter matches nothing.
type EventFilter struct {
	all      bool
	types    map[string]bool
	patterns []string
}

// MaxEventPatterns bounds the patterns of one filter: more than every
// type of every resource cannot say more.
const MaxEventPatterns = 64

// NewEventFilter returns the filter of patterns, or CodeValidation naming
// each pattern that is none of the accepted forms.
func NewEventFilter(patterns []string) (EventFilter, error) {
	if len(patterns) == 0 {
		return EventFilter{}, Errorf(CodeValidation, "Name at least one event type: <resource>.<created|updated|deleted>, <resource>.* or *")
	}
	if len(patterns) > MaxEventPatterns {
		return EventFilter{}, Errorf(CodeValidation, "At most %d event types", MaxEventPatterns)
	}
	f := EventFilter{types: make(map[string]bool)}
	for _, p := range patterns {
		if msg := checkEventPattern(p); msg != "" {
			return EventFilter{}, &Error{Code: CodeValidation, Message: "Invalid event type",
				Details: []FieldError{{Field: "types", Message: msg}}}
		}
		if !slices.Contains(f.patterns, p) {
			f.patterns = append(f.patterns, p)
		}
		res, kind, _ := strings.Cut(p, ".")
		switch {
		case p == AllEvents:
			f.all = true
		case kind == "*":
			for _, k := range EventKinds {
				f.types[res+"."+k] = true
			}
		default:
			f.types[p] = true
		}
	}
	return f, nil
}

// checkEventPattern returns why p is not an event pattern, or "".
func checkEventPattern(p string) string {
	if p == AllEvents {
		return ""
	}
	const forms = "must be <resource>.<created|updated|deleted>, <resource>.* or *"
	res, kind, ok := strings.Cut(p, ".")
	if !ok || len(p) > 100 {
		return quote(p) + " " + forms
	}
	if ResourceNamed(res) == nil {
		return quote(p) + ": no resource named " + quote(res) + " (" + strings.Join(ResourceNames(), ", ") + ")"
	}
	if kind != "*" && !slices.Contains(EventKinds, kind) {
		return quote(p) + " " + forms
	}
	return ""
}

// quote quotes s for a message, cut to 40 bytes of valid UTF-8: a
// client's own text, which may be anything.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "\"" + strings.ToValidUTF8(s, "\uFFFD") + "\""
}

// Match reports whether the filter selects events named name (a type).
func (f EventFilter) Match(name string) bool { return f.all || f.types[name] }

// Patterns returns the filter's patterns, without repeats, as given.
func (f EventFilter) Patterns() []string { return slices.Clone(f.patterns) }

// EventLog reads back the outbox's committed events, for streams that
// resume where a client left off (Server-Sent Events' Last-Event-ID) and
// for webhook deliveries.
type EventLog interface {
	// EventsAfter returns the committed events whose ids are greater than
	// after, at most limit, in id order, published or not, up to the
	// outbox's horizon: no event commits later with an id below one that
	// EventsAfter has returned, so a reader that goes on after the last id
	// it read misses nothing. Where ids may commit out of order
	// (PostgreSQL) the horizon is the one the relay last established
	// before publishing (docs/events.md, "Order and resumption"): events
	// above it are not returned yet, and reach a listener live.
	EventsAfter(ctx context.Context, after int64, limit int) ([]Event, error)
	// PurgedThrough returns the greatest id of the events the retention
	// has deleted (0 when none): a client that last saw an event before it
	// may have missed events that are gone.
	PurgedThrough(ctx context.Context) (int64, error)
}
