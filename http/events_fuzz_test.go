package http_test

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// FuzzParseEventTypes parses arbitrary types parameters as GET /api/events
// does, then hands them to the rule layer's filter. It must never panic; a
// refusal is BAD_REQUEST or VALIDATION_ERROR; an accepted filter matches
// only declared types, and what it was given names.
func FuzzParseEventTypes(f *testing.F) {
	for _, s := range []string{
		"", "types=users.created", "types=users.created,orders.*", "types=*", "types=,,", "types=%20users.deleted%20",
		"types=users.created&types=posts.*", "types=orders.moved", "types=nothing.*", "types=users", "types=.created",
		"types=%ff.created", "types=users.created." + strings.Repeat("x", 5000), "types=" + strings.Repeat("users.*,", 70),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, _ := url.ParseQuery(raw)
		patterns, err := rhttp.ParseEventTypes(values["types"])
		if err != nil {
			if resourceapi.ErrorCode(err) != resourceapi.CodeBadRequest {
				t.Fatalf("ParseEventTypes error %v, want BAD_REQUEST", err)
			}
			return
		}
		if len(patterns) == 0 || len(patterns) > resourceapi.MaxEventPatterns {
			t.Fatalf("%d patterns, want 1 to %d", len(patterns), resourceapi.MaxEventPatterns)
		}
		filter, err := resourceapi.NewEventFilter(patterns)
		if err != nil {
			var e *resourceapi.Error
			if !errors.As(err, &e) || e.Code != resourceapi.CodeValidation {
				t.Fatalf("NewEventFilter error %v, want VALIDATION_ERROR", err)
			}
			return
		}
		for _, typ := range resourceapi.EventTypes() {
			if !filter.Match(typ) {
				continue
			}
			res, _, _ := strings.Cut(typ, ".")
			named := false
			for _, p := range patterns {
				named = named || p == typ || p == "*" || p == res+".*"
			}
			if !named {
				t.Fatalf("filter of %q matches %s, which none names", patterns, typ)
			}
		}
		// "*" is every event, an undeclared resource's too (a newer
		// version's, which the rule layer shows admins only).
		if !slices.Contains(patterns, "*") && (filter.Match("gadgets.created") || filter.Match("")) {
			t.Fatalf("filter of %q matches an undeclared type", patterns)
		}
	})
}

// FuzzParseLastEventID parses arbitrary Last-Event-ID values. It must never
// panic; it accepts exactly the canonical decimal ids (and empty: none).
func FuzzParseLastEventID(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", " 7 ", "007", "-1", "+1", "1e3", "9223372036854775807",
		"9223372036854775808", "99999999999999999999", "\x00", "１", "0x10"} {
		f.Add(s, "")
	}
	f.Add("", "5")
	f.Add("3", "5")
	f.Fuzz(func(t *testing.T, header, param string) {
		var h, p []string
		if header != "" {
			h = []string{header}
		}
		if param != "" {
			p = []string{param}
		}
		id, resume, err := rhttp.ParseLastEventID(h, p)
		v := header
		if h == nil {
			v = param
		}
		v = strings.TrimSpace(v)
		if err != nil {
			if resourceapi.ErrorCode(err) != resourceapi.CodeBadRequest {
				t.Fatalf("error %v, want BAD_REQUEST", err)
			}
			if n, perr := strconv.ParseInt(v, 10, 64); perr == nil && n >= 0 && strconv.FormatInt(n, 10) == v {
				t.Fatalf("%q refused: %v", v, err)
			}
			return
		}
		if !resume {
			if v != "" {
				t.Fatalf("%q read as no Last-Event-ID", v)
			}
			return
		}
		if id < 0 || strconv.FormatInt(id, 10) != v {
			t.Fatalf("%q read as %d", v, id)
		}
	})
}
