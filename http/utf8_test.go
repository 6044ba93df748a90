package http_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestInvalidUTF8 sends text that is not valid UTF-8 in every list
// parameter and every string field of the body of every declared resource:
// each is a 400 VALIDATION_ERROR naming the parameter or field, on every
// store. PostgreSQL refuses such text in a statement (SQLSTATE 22021), and
// GET /api/users?q=%ff used to be a 500 there; encoding/json turned such
// bytes in a body into U+FFFD, so the record stored was not the one sent.
func TestInvalidUTF8(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		m := newMatrix(t, c)
		lc := c.lenient() // the requests break the document's types on purpose
		for _, res := range resourceapi.Declared() {
			base := "/api/" + res.Path
			params := []string{"page", "limit", "sort", "order", "q", "fields", "unknown"}
			for _, f := range res.Filters {
				if !f.Internal {
					params = append(params, f.Param)
				}
			}
			for _, p := range params {
				for _, query := range []string{p + "=%ff", p + "=ab%c3", p + "=%ed%a0%80"} {
					r := lc.get(base + "?" + query)
					mustUTF8Detail(t, "GET "+base+"?"+query, r, p)
				}
			}
			r := lc.get(base + "?x%ff=1&limit=5")
			mustUTF8Detail(t, "GET "+base+"?x%ff=1", r, "x\uFFFD")

			// One record to read with fields=.
			created := c.post(base, mustJSON(t, m.example(res)))
			created.mustStatus(t, http.StatusCreated)
			item := base + "/" + strconv.FormatInt(idOf(t, created.object(t)), 10)
			mustUTF8Detail(t, "GET "+item+"?fields=%ff", lc.get(item+"?fields=%ff"), "fields")

			for _, f := range res.Fields {
				if f.ReadOnly || f.Generate != nil || (f.Type != resourceapi.TypeString && f.Type != resourceapi.TypeStrings) {
					continue
				}
				for _, bad := range []string{"\xff", "ab\xc3", `\ud800`, `x\udc00y`, `\ud800\u0041`} {
					body := m.example(res)
					if f.Type == resourceapi.TypeString {
						body[f.Name] = "@@bad@@"
					} else {
						body[f.Name] = []string{"@@bad@@"}
					}
					raw := strings.Replace(mustJSON(t, body), "@@bad@@", bad, 1)
					what := "POST " + base + " " + f.Name + "=" + strconv.Quote(bad)
					mustUTF8Detail(t, what, c.post(base, raw), f.Name)
					what = "PATCH " + item + " " + f.Name + "=" + strconv.Quote(bad)
					patch := `{"` + f.Name + `":` + strings.Replace(mustJSON(t, body[f.Name]), "@@bad@@", bad, 1) + `}`
					mustUTF8Detail(t, what, c.do("PATCH", item, patch), f.Name)
				}
			}
		}
		// A surrogate pair is one valid character, and stays one.
		u := c.mustCreate(`{"name":"Emoji \ud83d\ude00","email":"emoji@example.com"}`)
		if got, want := u["name"], "Emoji \U0001F600"; got != want {
			t.Errorf("name = %q, want %q", got, want)
		}
	})
}

// mustDetail checks that r is a 400 VALIDATION_ERROR with a detail for
// field.
func mustUTF8Detail(t *testing.T, what string, r *reply, field string) {
	t.Helper()
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("%s: status = %d, want 400; body: %s", what, r.StatusCode, r.text(t))
		return
	}
	details := r.mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
	if fields := detailFields(details); !slices.Contains(fields, field) {
		t.Errorf("%s: details name %q, want %q", what, fields, field)
	}
}
