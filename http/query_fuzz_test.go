package http_test

import (
	"errors"
	"net/url"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// FuzzParseListQuery parses arbitrary query strings as the list handler
// does. It must never panic; it either fails with VALIDATION_ERROR naming
// only list parameters, or returns a query within every limit whose names
// all come from the declaration.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{
		"", "page=2&limit=50", "sort=name&order=desc", "status=all&role=admin&q=ann",
		"fields=id,email", "fields=,,", "fields=password", "page=0&limit=101", "page=1&page=2",
		"q=%00", "q=%zz", "sort=age;drop table users", "status=", "limit=+5", "page=9999999999999999999",
		"q=%ff", "role=%c3", "fields=id,%ed%a0%80", "%ff=1&page=2", "status=%ffall",
	} {
		f.Add(s)
	}
	params := map[string]bool{"page": true, "limit": true, "sort": true, "order": true, "q": true, "fields": true, "after": true, "before": true, "total": true}
	for _, flt := range resourceapi.Users.Filters {
		params[flt.Param] = true
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, _ := url.ParseQuery(raw) // what it could parse, as net/http gives handlers
		q, err := rhttp.ParseListQuery(resourceapi.Users, values)
		if err != nil {
			var e *resourceapi.Error
			if !errors.As(err, &e) || e.Code != resourceapi.CodeValidation || len(e.Details) == 0 {
				t.Fatalf("error %v, want VALIDATION_ERROR with details", err)
			}
			for _, d := range e.Details {
				if d.Message == "must be valid UTF-8" && utf8.ValidString(d.Field) {
					continue // any parameter that is not UTF-8 is refused
				}
				if !params[d.Field] || d.Message == "" {
					t.Fatalf("detail %+v names no list parameter", d)
				}
			}
			return
		}
		if q.Limit < 1 || q.Limit > resourceapi.MaxLimit || q.Offset < 0 || q.Offset%q.Limit != 0 {
			t.Fatalf("offset %d, limit %d out of range", q.Offset, q.Limit)
		}
		if err := q.Check(resourceapi.Users); err != nil {
			t.Fatalf("ParseListQuery returned a query that Check refuses: %v", err)
		}
		if f := resourceapi.Users.Field(q.Sort); f == nil || !f.Sortable {
			t.Fatalf("sort %q is not sortable", q.Sort)
		}
		if len(q.Search) > resourceapi.MaxSearchLength {
			t.Fatalf("search of %d bytes", len(q.Search))
		}
		for name, vs := range values {
			for _, v := range vs {
				if !utf8.ValidString(name) || !utf8.ValidString(v) {
					t.Fatalf("parameter %q=%q is not UTF-8, and the query was accepted", name, v)
				}
			}
		}
		if q.Fields != nil {
			visible := resourceapi.Users.VisibleFields()
			last := -1
			for _, name := range q.Fields {
				i := slices.Index(visible, name)
				if i <= last {
					t.Fatalf("fields %v: unknown, repeated or out of declaration order", q.Fields)
				}
				last = i
			}
			if len(q.Fields) == 0 {
				t.Fatal("empty, non-nil fields")
			}
		}
		for _, fv := range q.Filters {
			if resourceapi.Users.Filter(fv.Filter.Param) != fv.Filter {
				t.Fatalf("filter %+v is not the declaration's", fv.Filter)
			}
			if v, _ := fv.Value.(string); len(fv.Filter.Values) > 0 && !slices.Contains(fv.Filter.Values, v) {
				t.Fatalf("filter %s = %q is not an accepted value", fv.Filter.Param, fv.Value)
			}
		}
	})
}
