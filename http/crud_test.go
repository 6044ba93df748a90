package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
)

// timestampRE is the one timestamp format of the API.
var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// userKeys are the members of a user's representation, in order.
var userKeys = []string{"id", "name", "email", "age", "roles", "permissions", "created_at", "updated_at", "deleted"}

// mustUserShape checks that body is a user with exactly the visible fields,
// in declaration order, with well-formed values.
func mustUserShape(t *testing.T, body []byte) map[string]any {
	t.Helper()
	if got := objectKeys(t, body); !slices.Equal(got, userKeys) {
		t.Fatalf("user keys = %v, want %v (in order)", got, userKeys)
	}
	var u map[string]any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&u); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if s, _ := u[k].(string); !timestampRE.MatchString(s) {
			t.Errorf("%s = %v, want RFC 3339 UTC with milliseconds", k, u[k])
		}
	}
	if _, ok := u["roles"].([]any); !ok {
		t.Errorf("roles = %v, want an array", u["roles"])
	}
	return u
}

// objectKeys returns the keys of a JSON object in the order they appear.
func objectKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body %s is not an object", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestCreate(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		r := c.post("/api/users", `{"name":"  Ann Lee ","email":"ann@example.com","age":30,"password":"correct horse"}`)
		r.mustStatus(t, http.StatusCreated)
		u := mustUserShape(t, r.body)
		id := idOf(t, u)
		if got, want := r.Header.Get("Location"), fmt.Sprintf("/api/users/%d", id); got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
		if u["name"] != "Ann Lee" || u["email"] != "ann@example.com" || u["age"] != json.Number("30") || u["deleted"] != false {
			t.Errorf("created user = %v", u)
		}
		if roles := u["roles"].([]any); len(roles) != 1 || roles[0] != "user" {
			t.Errorf("roles = %v, want [user] by default", roles)
		}
		if u["created_at"] != u["updated_at"] {
			t.Errorf("created_at %v != updated_at %v on a new user", u["created_at"], u["updated_at"])
		}
		if strings.Contains(string(r.body), "password") || strings.Contains(string(r.body), "correct horse") {
			t.Errorf("response shows the password: %s", r.body)
		}
		if r.Header.Get("ETag") == "" {
			t.Error("201 has no ETag")
		}

		got := c.get(r.Header.Get("Location"))
		got.mustStatus(t, http.StatusOK)
		if string(got.body) != string(r.body) {
			t.Errorf("GET Location = %s, want the created user %s", got.body, r.body)
		}
		if strings.Contains(string(got.body), "password") {
			t.Errorf("GET shows the password: %s", got.body)
		}

		// Version prefixes are kept in Location.
		for _, prefix := range []string{"/api/v1", "/api/v2"} {
			r := c.post(prefix+"/users", fmt.Sprintf(`{"name":"V","email":"v%s@example.com"}`, strings.ReplaceAll(prefix, "/", "")))
			r.mustStatus(t, http.StatusCreated)
			want := fmt.Sprintf("%s/users/%d", prefix, idOf(t, r.object(t)))
			if got := r.Header.Get("Location"); got != want {
				t.Errorf("POST %s/users: Location = %q, want %q", prefix, got, want)
			}
		}

		// Age is nullable and optional; roles can be set by an admin.
		u = c.mustCreate(`{"name":"Bo","email":"bo@example.com","age":null,"roles":["editor","admin","editor"]}`)
		if u["age"] != nil {
			t.Errorf("age = %v, want null", u["age"])
		}
		if roles := u["roles"].([]any); fmt.Sprint(roles) != "[admin editor]" {
			t.Errorf("roles = %v, want [admin editor]", roles)
		}
		// Read-only fields in a body are ignored (a tolerance: the
		// document leaves them out of request bodies).
		u = c.lenient().mustCreate(`{"id":999,"created_at":"2000-01-01T00:00:00.000Z","name":"Cy","email":"cy@example.com"}`)
		if idOf(t, u) == 999 || u["created_at"] == "2000-01-01T00:00:00.000Z" {
			t.Errorf("read-only fields were written: %v", u)
		}
	})
}

func TestCreateValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		tests := []struct {
			name   string
			body   string
			fields []string // one detail per bad field, in declaration order
		}{
			{"missing required", `{}`, []string{"name", "email"}},
			{"every field wrong", `{"name":"","email":"nope","age":151,"password":"short","roles":["king"],"deleted":"yes","color":"red"}`,
				[]string{"name", "email", "age", "password", "roles", "deleted", "color"}},
			{"wrong types", `{"name":1,"email":true,"age":"30","roles":"admin"}`, []string{"name", "email", "age", "roles"}},
			{"fractional age", `{"name":"A","email":"a@example.com","age":30.5}`, []string{"age"}},
			{"negative age", `{"name":"A","email":"a@example.com","age":-1}`, []string{"age"}},
			{"null name", `{"name":null,"email":"a@example.com"}`, []string{"name"}},
			{"blank name", `{"name":"   ","email":"a@example.com"}`, []string{"name"}},
			{"long name", `{"name":"` + strings.Repeat("x", 101) + `","email":"a@example.com"}`, []string{"name"}},
			{"email with display name", `{"name":"A","email":"Ann <a@example.com>"}`, []string{"email"}},
			{"long email", `{"name":"A","email":"` + strings.Repeat("a", 250) + `@example.com"}`, []string{"email"}},
			{"unknown field", `{"name":"A","email":"a@example.com","nickname":"x"}`, []string{"nickname"}},
		}
		for _, tt := range tests {
			r := c.post("/api/users", tt.body)
			details := r.mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			if got := detailFields(details); !slices.Equal(got, tt.fields) {
				t.Errorf("%s: detail fields = %v, want %v", tt.name, got, tt.fields)
			}
			for _, d := range details {
				if msg, _ := d["message"].(string); msg == "" {
					t.Errorf("%s: detail %v has no message", tt.name, d)
				}
			}
		}
		// Nothing was created by any of them: the test server's admin is
		// the only user.
		recs, pag := c.get("/api/users?status=all").list(t)
		if len(recs) != 1 || pag["total"] != json.Number("1") {
			t.Errorf("after invalid creates: %d users, total %v", len(recs), pag["total"])
		}
	})
}

func TestBadBodies(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		item := fmt.Sprintf("/api/users/%d", id)
		for _, target := range []struct{ method, path string }{{"POST", "/api/users"}, {"PUT", item}, {"PATCH", item}} {
			t.Run(target.method, func(t *testing.T) {
				for _, body := range []string{`{"name":`, `[1,2]`, `"text"`, `null`, `{"name":"A"} {"x":1}`, `{"name":"A"}]`} {
					c.do(target.method, target.path, body).mustError(t, http.StatusBadRequest, resourceapi.CodeBadRequest)
				}
				// An empty body is not a JSON object either.
				c.do(target.method, target.path, "", "Content-Type", "application/json").
					mustError(t, http.StatusBadRequest, resourceapi.CodeBadRequest)

				for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/json; charset=latin1"} {
					c.do(target.method, target.path, `{"name":"A","email":"a@example.com"}`, "Content-Type", ct).
						mustError(t, http.StatusUnsupportedMediaType, resourceapi.CodeUnsupportedMediaType)
				}
				c.do(target.method, target.path, `{}`, "Content-Type", "").
					mustError(t, http.StatusUnsupportedMediaType, resourceapi.CodeUnsupportedMediaType)
				c.do(target.method, target.path, `{}`, "Content-Encoding", "gzip").
					mustError(t, http.StatusUnsupportedMediaType, resourceapi.CodeUnsupportedMediaType)

				big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
				c.do(target.method, target.path, big).mustError(t, http.StatusRequestEntityTooLarge, resourceapi.CodePayloadTooLarge)
			})
		}
		// Parameters and case are fine, as are structured JSON types.
		for i, ct := range []string{"application/json; charset=utf-8", "Application/JSON;Charset=UTF-8", "application/merge-patch+json"} {
			c := c
			if strings.HasSuffix(ct, "+json") {
				c = c.lenient() // the document names application/json only
			}
			c.post("/api/users", fmt.Sprintf(`{"name":"A","email":"a%d@example.com"}`, i), "Content-Type", ct).
				mustStatus(t, http.StatusCreated)
		}
		// Just under the limit is accepted as far as size goes (then fails
		// validation on the name's length).
		body := `{"name":"` + strings.Repeat("x", 1<<20-len(`{"name":""}`)) + `"}`
		c.post("/api/users", body).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
	})
}

func TestBodyLimitStreamed(t *testing.T) {
	// Without a Content-Length the limit is enforced while reading.
	forEachStore(t, func(t *testing.T, c *client) {
		body := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
		req, err := http.NewRequest("POST", c.base+"/api/users", struct{ *strings.Reader }{strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(c.auth[0], c.auth[1])
		req.ContentLength = -1
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413", resp.StatusCode)
		}
	})
}

func TestGetOne(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com", `,"age":30`)
		r := c.get(fmt.Sprintf("/api/users/%d", id))
		r.mustStatus(t, http.StatusOK)
		mustUserShape(t, r.body)
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}

		r = c.get(fmt.Sprintf("/api/users/%d?fields=email,id", id))
		r.mustStatus(t, http.StatusOK)
		if got := objectKeys(t, r.body); !slices.Equal(got, []string{"id", "email"}) {
			t.Errorf("fields=email,id: keys = %v, want [id email] (declaration order)", got)
		}
		for _, q := range []string{"fields=password", "fields=id,nope", "fields=", "fields=id&fields=name"} {
			details := c.get(fmt.Sprintf("/api/users/%d?%s", id, q)).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
			if got := detailFields(details); !slices.Equal(got, []string{"fields"}) {
				t.Errorf("%s: details = %v, want one for fields", q, got)
			}
		}

		// Ids that cannot name a record are 404, like ids that name none.
		for _, p := range []string{"0", "-1", "abc", "1.0", "01", "+1", "9007199254740992", "99999999999999999999", "1e3", fmt.Sprint(id + 1000)} {
			c.get("/api/users/"+p).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		}
		c.get("/api/users/9007199254740991").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.get("/api/users/1/extra").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.get("/api/nothing").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.get("/nothing").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	})
}

func TestReplace(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"Ann","email":"ann@example.com","age":30,"roles":["admin","user"],"password":"password1"}`)
		id := idOf(t, u)
		item := fmt.Sprintf("/api/users/%d", id)

		// Missing age becomes null; roles and deleted (Keep fields) stay.
		r := c.do("PUT", item, `{"name":"Ann B","email":"annb@example.com"}`)
		r.mustStatus(t, http.StatusOK)
		got := mustUserShape(t, r.body)
		if got["age"] != nil || got["name"] != "Ann B" || got["email"] != "annb@example.com" {
			t.Errorf("after PUT without age: %v", got)
		}
		if fmt.Sprint(got["roles"]) != "[admin user]" {
			t.Errorf("roles = %v, want them kept", got["roles"])
		}
		if got["created_at"] != u["created_at"] || got["updated_at"] == u["updated_at"] {
			t.Errorf("timestamps after PUT: created %v -> %v, updated %v -> %v", u["created_at"], got["created_at"], u["updated_at"], got["updated_at"])
		}
		if r.Header.Get("Location") != "" {
			t.Errorf("replace has Location %q", r.Header.Get("Location"))
		}

		// A body id that matches is fine; one that differs is 400.
		c.do("PUT", item, fmt.Sprintf(`{"id":%d,"name":"Ann","email":"ann@example.com"}`, id)).mustStatus(t, http.StatusOK)
		details := c.do("PUT", item, fmt.Sprintf(`{"id":%d,"name":"Ann","email":"ann@example.com"}`, id+1)).
			mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		if got := detailFields(details); !slices.Equal(got, []string{"id"}) {
			t.Errorf("mismatched id: details = %v, want [id]", got)
		}
		c.do("PUT", item, `{"id":"1","name":"Ann","email":"ann@example.com"}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		// Name and email are required.
		details = c.do("PUT", item, `{"age":3}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		if got := detailFields(details); !slices.Equal(got, []string{"name", "email"}) {
			t.Errorf("PUT without name and email: details = %v", got)
		}

		// PUT to an absent id creates it there.
		for _, prefix := range []string{"/api", "/api/v2"} {
			newID := id + 100
			if prefix != "/api" {
				newID++
			}
			path := fmt.Sprintf("%s/users/%d", prefix, newID)
			r = c.do("PUT", path, fmt.Sprintf(`{"name":"New","email":"new%d@example.com","age":7}`, newID))
			r.mustStatus(t, http.StatusCreated)
			if got := r.Header.Get("Location"); got != path {
				t.Errorf("PUT create: Location = %q, want %q", got, path)
			}
			created := mustUserShape(t, r.body)
			if idOf(t, created) != newID || fmt.Sprint(created["roles"]) != "[user]" {
				t.Errorf("PUT create: %v", created)
			}
			c.get(path).mustStatus(t, http.StatusOK)
		}
	})
}

func TestPatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		u := c.mustCreate(`{"name":"Ann","email":"ann@example.com","age":30}`)
		item := fmt.Sprintf("/api/users/%d", idOf(t, u))

		r := c.do("PATCH", item, `{"email":"ann@example.org"}`)
		r.mustStatus(t, http.StatusOK)
		got := mustUserShape(t, r.body)
		if got["email"] != "ann@example.org" || got["name"] != "Ann" || got["age"] != json.Number("30") {
			t.Errorf("after PATCH email: %v", got)
		}
		c.do("PATCH", item, `{"age":null}`).mustStatus(t, http.StatusOK)
		if got := c.get(item).object(t); got["age"] != nil {
			t.Errorf("age = %v after PATCH null", got["age"])
		}
		c.do("PATCH", item, `{"name":""}`).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		c.do("PATCH", "/api/users/12345", `{"name":"X"}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.do("PATCH", "/api/users/abc", `{"name":"X"}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		// A password can be changed and is still never shown.
		r = c.do("PATCH", item, `{"password":"new password"}`)
		r.mustStatus(t, http.StatusOK)
		if strings.Contains(string(r.body), "password") {
			t.Errorf("PATCH shows the password: %s", r.body)
		}
	})
}

func TestSoftDeleteAndRestore(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		a := c.mustUser("Ann", "ann@example.com")
		b := c.mustUser("Bo", "bo@example.com")
		item := fmt.Sprintf("/api/users/%d", a)

		r := c.do("PATCH", item, `{"deleted":true}`)
		r.mustStatus(t, http.StatusOK)
		if r.object(t)["deleted"] != true {
			t.Fatalf("deleted = %v after soft delete", r.object(t)["deleted"])
		}
		// Still readable by id, gone from the default list.
		if got := c.get(item).object(t)["deleted"]; got != true {
			t.Errorf("GET soft-deleted: deleted = %v", got)
		}
		const admin = 1 // the test server's own admin
		mustIDs(t, c, "/api/users", admin, b)
		mustIDs(t, c, "/api/users?status=deleted", a)
		mustIDs(t, c, "/api/users?status=all", admin, a, b)

		c.do("PATCH", item, `{"deleted":false}`).mustStatus(t, http.StatusOK)
		mustIDs(t, c, "/api/users", admin, a, b)
		mustIDs(t, c, "/api/users?status=deleted")
	})
}

func TestDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		id := c.mustUser("Ann", "ann@example.com")
		item := fmt.Sprintf("/api/users/%d", id)
		r := c.do("DELETE", item, "")
		r.mustStatus(t, http.StatusNoContent)
		if len(r.body) != 0 {
			t.Errorf("204 has a body: %q", r.body)
		}
		c.get(item).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.do("DELETE", item, "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		c.do("DELETE", "/api/v2/users/x", "").mustStatus(t, http.StatusNotFound)
	})
}

func TestConflict(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		a := c.mustUser("Ann", "ann@example.com")
		b := c.mustUser("Bo", "bo@example.com")
		details := c.post("/api/users", `{"name":"Imposter","email":"ANN@Example.COM"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		if got := detailFields(details); !slices.Equal(got, []string{"email"}) {
			t.Errorf("conflict details = %v, want [email]", got)
		}
		c.do("PATCH", fmt.Sprintf("/api/users/%d", b), `{"email":"Ann@example.com"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		c.do("PUT", fmt.Sprintf("/api/users/%d", b), `{"name":"Bo","email":"ann@EXAMPLE.com"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		c.do("PUT", fmt.Sprintf("/api/users/%d", b+10), `{"name":"Bo","email":"ann@EXAMPLE.com"}`).mustError(t, http.StatusConflict, resourceapi.CodeConflict)
		// Changing one's own email's case is not a conflict.
		c.do("PATCH", fmt.Sprintf("/api/users/%d", a), `{"email":"ANN@example.com"}`).mustStatus(t, http.StatusOK)
	})
}

func TestLastAdmin(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		// The test server's admin (user 1) is the only one.
		item := "/api/users/1"
		c.do("DELETE", item, "").mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
		c.do("PATCH", item, `{"roles":["user"]}`).mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
		c.do("PATCH", item, `{"deleted":true}`).mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
		c.do("PUT", item, `{"name":"Root","email":"`+adminEmail+`","roles":[]}`).mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
		c.get(item).mustStatus(t, http.StatusOK)

		// With a second admin, the first may go (acting as the second: the
		// first's key goes with it).
		two := c.as(c.mustAccount("Two", "two@example.com", resourceapi.RoleAdmin))
		two.do("DELETE", item, "").mustStatus(t, http.StatusNoContent)
	})
}

// mustIDs fails unless GET path lists exactly the users want, in order.
func mustIDs(t *testing.T, c *client, path string, want ...int64) {
	t.Helper()
	recs, pag := c.get(path).list(t)
	got := make([]int64, len(recs))
	for i, rec := range recs {
		got[i] = idOf(t, rec)
	}
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("GET %s: ids = %v, want %v", path, got, want)
	}
	if pag["total"] != json.Number(fmt.Sprint(len(want))) && !strings.Contains(path, "limit=") && !strings.Contains(path, "page=") {
		t.Fatalf("GET %s: total = %v, want %d", path, pag["total"], len(want))
	}
}
