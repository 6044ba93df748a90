package resourceapi_test

import (
	"net/url"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestSearchNeedsSearchableFields checks q on resources that have no
// searchable field (orders, API keys): a VALIDATION_ERROR for q, from
// ParseListQuery and from Check (which stores call), never a query the
// store cannot build. It used to reach the store, whose SQL then failed
// (a 500 for GET /api/orders?q=abc).
func TestSearchNeedsSearchableFields(t *testing.T) {
	checked := 0
	for _, res := range resourceapi.Declared() {
		q, err := resourceapi.ParseListQuery(res, url.Values{"q": {"abc"}})
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
		if _, err := resourceapi.ParseListQuery(res, url.Values{"q": {"  "}}); err != nil {
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
