package http_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// TestMergePatch: PATCH with application/merge-patch+json has RFC 7396's
// meaning on a record, the cases of its appendix A that a record can hold:
// a member sent replaces the stored value, null removes it (a nullable
// field becomes null), a member not sent stays, and a list is replaced
// whole. What a record cannot be (an array or a scalar instead of an
// object) is refused, and so is null for a required field, by the same
// rules as every write.
func TestMergePatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com", `,"age":30,"roles":["user","editor"]`)
		path := fmt.Sprintf("/api/users/%d", id)
		patch := func(body string) *reply {
			return c.do("PATCH", path, body, "Content-Type", "application/merge-patch+json")
		}
		for _, tt := range []struct {
			patch string
			want  map[string]any // fields after the patch
		}{
			{`{"name":"Bea"}`, map[string]any{"name": "Bea", "age": "30", "roles": "[editor user]"}},  // {"a":"b"} + {"a":"c"}
			{`{"age":31}`, map[string]any{"name": "Bea", "age": "31", "roles": "[editor user]"}},      // {"a":"b"} + {"b":"c"}
			{`{"age":null}`, map[string]any{"name": "Bea", "age": "<nil>", "roles": "[editor user]"}}, // {"a":"b"} + {"a":null}
			{`{"roles":["user"]}`, map[string]any{"name": "Bea", "age": "<nil>", "roles": "[user]"}},  // {"a":["b"]} + {"a":"c"}: a list is replaced whole
			{`{}`, map[string]any{"name": "Bea", "age": "<nil>", "roles": "[user]"}},                  // {"a":"b"} + {}: nothing changes
			{`{"name":"Cy","age":7}`, map[string]any{"name": "Cy", "age": "7", "roles": "[user]"}},    // several members
		} {
			r := patch(tt.patch)
			r.mustStatus(t, http.StatusOK)
			got := r.object(t)
			for name, want := range tt.want {
				v := got[name]
				if list, ok := v.([]any); ok {
					var ss []string
					for _, x := range list {
						ss = append(ss, x.(string))
					}
					slices.Sort(ss)
					v = ss
				}
				if fmt.Sprint(v) != want {
					t.Errorf("%s: %s = %v, want %v", tt.patch, name, v, want)
				}
			}
		}
		// A patch that is not an object would replace the record with
		// something that is not a record; null for a required field removes
		// what may not be removed.
		for _, body := range []string{`["c"]`, `"c"`, `null`, `42`} {
			if r := patch(body); r.StatusCode != http.StatusBadRequest && r.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d, want 400 or 422", body, r.StatusCode)
			}
		}
		patch(`{"name":null}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		// application/json keeps its meaning.
		c.do("PATCH", path, `{"age":null}`).mustStatus(t, http.StatusOK)
	})
}

// TestAcceptPatch: the paths that take PATCH say which bodies it takes, on
// OPTIONS and on a 415.
func TestAcceptPatch(t *testing.T) {
	c := mustServer(t, mustSQLite(t, nil))
	id := c.mustUser("Ann", "ann@example.com")
	const want = "application/merge-patch+json, application/json"
	if got := c.do("OPTIONS", fmt.Sprintf("/api/users/%d", id), "").Header.Get("Accept-Patch"); got != want {
		t.Errorf("OPTIONS: Accept-Patch = %q, want %q", got, want)
	}
	if got := c.do("OPTIONS", "/api/users", "").Header.Get("Accept-Patch"); got != "" {
		t.Errorf("OPTIONS on a collection: Accept-Patch = %q, want none", got)
	}
	r := c.lenient().do("PATCH", fmt.Sprintf("/api/users/%d", id), `{"age":3}`, "Content-Type", "text/plain")
	r.mustError(t, http.StatusUnsupportedMediaType, resourceapi.CodeUnsupportedMediaType)
	if got := r.Header.Get("Accept-Patch"); got != want {
		t.Errorf("415: Accept-Patch = %q, want %q", got, want)
	}
}

// TestPreferMinimal: Prefer: return=minimal makes a write answer without a
// body (204, or 201 with Location for a create) and say so; without it, or
// with return=representation, the record comes back. A create that shows
// a secret once sends it anyway.
func TestPreferMinimal(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		min := []string{"Prefer", "return=minimal"}
		// OpenAPI cannot say that a 201 may have no body: the document
		// says it in Prefer's description, and this exchange is not
		// checked against it.
		unchecked := *c
		unchecked.contract = nil
		r := unchecked.post("/api/users", `{"name":"Ann","email":"ann@example.com"}`, min...)
		r.mustStatus(t, http.StatusCreated)
		if len(r.body) != 0 || r.Header.Get("Location") == "" || r.Header.Get("ETag") == "" || r.Header.Get("Preference-Applied") != "return=minimal" {
			t.Errorf("POST minimal: body %q, Location %q, ETag %q, Preference-Applied %q", r.body, r.Header.Get("Location"), r.Header.Get("ETag"), r.Header.Get("Preference-Applied"))
		}
		path := r.Header.Get("Location")
		for _, w := range []struct{ method, body string }{{"PATCH", `{"age":3}`}, {"PUT", `{"name":"Ann","email":"ann@example.com"}`}} {
			r := c.do(w.method, path, w.body, "Prefer", "respond-async, return=minimal; x=1")
			r.mustStatus(t, http.StatusNoContent)
			if len(r.body) != 0 || r.Header.Get("ETag") == "" || r.Header.Get("Preference-Applied") != "return=minimal" {
				t.Errorf("%s minimal: body %q, ETag %q, Preference-Applied %q", w.method, r.body, r.Header.Get("ETag"), r.Header.Get("Preference-Applied"))
			}
			r = c.do(w.method, path, w.body, "Prefer", "return=representation")
			r.mustStatus(t, http.StatusOK)
			if len(r.body) == 0 || r.Header.Get("Preference-Applied") != "" {
				t.Errorf("%s representation: body %q, Preference-Applied %q", w.method, r.body, r.Header.Get("Preference-Applied"))
			}
		}
		// The stored record is what a minimal write made.
		if got := c.get(path).object(t)["age"]; fmt.Sprint(got) != "<nil>" {
			t.Errorf("age after PUT = %v, want null", got)
		}
		// An API key's secret is shown once: minimal does not hide it.
		id := idOf(t, c.get(path).object(t))
		r = c.post("/api/api-keys", fmt.Sprintf(`{"user_id":%d}`, id), min...)
		r.mustStatus(t, http.StatusCreated)
		if r.object(t)["key"] == nil || r.Header.Get("Preference-Applied") != "" {
			t.Errorf("API key minimal: %s, Preference-Applied %q", r.body, r.Header.Get("Preference-Applied"))
		}
	})
}
