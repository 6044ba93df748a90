package http_test

import (
	"net/url"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// TestSearchNeedsSearchableFields checks q on resources that have no
// searchable field (orders, API keys): a VALIDATION_ERROR for q, from
// ParseListQuery and from Check (which stores call), never a query the
// store cannot build. It used to reach the store, whose SQL then failed
// (a 500 for GET /api/orders?q=abc).
func TestSearchNeedsSearchableFields(t *testing.T) {
	checked := 0
	for _, res := range resourceapi.Declared() {
		q, err := rhttp.ParseListQuery(res, url.Values{"q": {"abc"}})
		if len(res.SearchableFields()) > 0 {
			if err != nil || q.Search != "abc" {
				t.Errorf("%s: ParseListQuery(q=abc) = %+v, %v; want the search", res.Name, q, err)
			}
			continue
		}
		checked++
		mustOnlyQ(t, res.Name+": ParseListQuery(q=abc)", err)
		_, err = resourceapi.NewListQuery(res, resourceapi.ListQuery{Search: "ab"})
		mustOnlyQ(t, res.Name+": NewListQuery(Search: ab)", err)
		// A blank q searches for nothing, so it is no search.
		if _, err := rhttp.ParseListQuery(res, url.Values{"q": {"  "}}); err != nil {
			t.Errorf("%s: ParseListQuery(q=blank) = %v, want nil", res.Name, err)
		}
	}
	if checked == 0 {
		t.Fatal("every resource has searchable fields; the test checks nothing")
	}
}

func mustOnlyQ(t *testing.T, what string, err error) {
	t.Helper()
	e := resourceapi.ErrorOf(err)
	if e.Code != resourceapi.CodeValidation || len(e.Details) != 1 || e.Details[0].Field != "q" || e.Details[0].Message == "" {
		t.Errorf("%s = %v, want a VALIDATION_ERROR with one detail, for q", what, err)
	}
}

// TestInvalidUTF8Parsed checks that text that is not valid UTF-8 is refused
// wherever the rules meet it, naming the parameter or field: in query
// parameters (every one, read or not), in a query a transport built itself
// (Check, which stores call), and in a record built by hand (Validate).
func TestInvalidUTF8Parsed(t *testing.T) {
	for _, params := range []url.Values{
		{"q": {"\xff"}}, {"page": {"1\xc3"}}, {"role": {"admin\xff"}}, {"fields": {"id,\xed\xa0\x80"}},
		{"status": {"\xff"}}, {"sort": {"\xff"}}, {"nope": {"\xff"}}, {"q": {"ok", "\xff"}},
	} {
		_, err := rhttp.ParseListQuery(resourceapi.Users, params)
		for name := range params {
			mustErrorDetail(t, "ParseListQuery("+params.Encode()+")", err, name, "must be valid UTF-8")
		}
	}
	_, err := rhttp.ParseListQuery(resourceapi.Users, url.Values{"\xff": {"1"}})
	mustErrorDetail(t, "ParseListQuery(\\xff=1)", err, "\uFFFD", "must be valid UTF-8")
	_, err = rhttp.ParseFields(resourceapi.Users, url.Values{"fields": {"id\xff"}})
	mustErrorDetail(t, "ParseFields(id\\xff)", err, "fields", "must be valid UTF-8")

	_, err = resourceapi.NewListQuery(resourceapi.Users, resourceapi.ListQuery{Search: "a\xffb"})
	mustErrorDetail(t, "NewListQuery(Search: a\\xffb)", err, "q", "must be valid UTF-8")
	role := resourceapi.Users.Filter("role")
	_, err = resourceapi.NewListQuery(resourceapi.Users, resourceapi.ListQuery{Filters: []resourceapi.FilterValue{{Filter: role, Value: "\xff"}}})
	mustErrorDetail(t, "NewListQuery(role: \\xff)", err, "role", "must be valid UTF-8")

	rec := resourceapi.Record{"name": "a\xffb", "email": "a@example.com", "roles": []string{"user\xff"}}
	err = resourceapi.Validate(resourceapi.Users, rec, resourceapi.ModeCreate)
	mustErrorDetail(t, "Validate(name: a\\xffb)", err, "name", "must be valid UTF-8")
	mustErrorDetail(t, "Validate(roles: [user\\xff])", err, "roles", "must be valid UTF-8")
}

func mustErrorDetail(t *testing.T, what string, err error, field, msg string) {
	t.Helper()
	e := resourceapi.ErrorOf(err)
	if e.Code != resourceapi.CodeValidation {
		t.Errorf("%s = %v, want a VALIDATION_ERROR", what, err)
		return
	}
	for _, d := range e.Details {
		if d.Field == field && d.Message == msg {
			return
		}
	}
	t.Errorf("%s: details %v, want {%s: %s}", what, e.Details, field, msg)
}
