package http_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// The REST conventions on every declared resource, from its declaration and
// Example alone (who may call what is the authorization matrix's, in
// authz_test.go), then what is particular to orders, references, cascades
// and ownership.

// in returns a client of the same server whose failures are tb's.
func (c *client) in(tb testing.TB) *client {
	cc := *c
	cc.tb = tb
	return &cc
}

func TestEveryResource(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		m := newMatrix(t, c)
		for _, res := range resourceapi.Declared() {
			t.Run(res.Name, func(t *testing.T) {
				m.t = t
				testResourceOverHTTP(t, c.in(t), m, res)
			})
		}
	})
}

// onceFields returns the fields a create's response shows once, after the
// visible ones: generated secrets (an API key).
func onceFields(res *resourceapi.Resource) []string {
	var out []string
	for _, f := range res.Fields {
		if f.Secret != resourceapi.NotSecret && f.Generate != nil {
			out = append(out, f.Name)
		}
	}
	return out
}

// testResourceOverHTTP walks one record of res through every convention of
// the REST API, as the admin.
func testResourceOverHTTP(t *testing.T, c *client, m *matrix, res *resourceapi.Resource) {
	base := "/api/" + res.Path

	// POST: 201, Location, the record (with its secrets, once), ETag.
	body := m.example(res)
	r := c.post(base, mustJSON(t, body))
	r.mustStatus(t, http.StatusCreated)
	created := r.object(t)
	id := idOf(t, created)
	item := base + "/" + strconv.FormatInt(id, 10)
	if got := r.Header.Get("Location"); got != item {
		t.Errorf("Location = %q, want %q", got, item)
	}
	keys := objectKeys(t, r.body)
	visible := res.VisibleFields()
	if len(keys) < len(visible) || !slices.Equal(keys[:len(visible)], visible) {
		t.Errorf("created %s keys = %v, want the visible fields %v in order", res.Singular, keys, visible)
	}
	for _, k := range keys[min(len(keys), len(visible)):] {
		if !slices.Contains(onceFields(res), k) {
			t.Errorf("created %s shows %q, which is no visible field and no generated secret", res.Singular, k)
		}
	}
	mustShow(t, "POST", res, created, body)
	tag := r.Header.Get("ETag")
	if !strongETag.MatchString(tag) {
		t.Errorf("POST ETag = %q, want a strong tag", tag)
	}

	// GET: the same record without its secrets, the same tag, Last-Modified.
	g := c.get(item)
	g.mustStatus(t, http.StatusOK)
	got := g.object(t)
	for _, k := range onceFields(res) {
		delete(created, k)
	}
	if a, b := jsonText(t, got), jsonText(t, created); a != b {
		t.Errorf("GET %s = %s, want what POST returned: %s", item, a, b)
	}
	if g.Header.Get("ETag") != tag {
		t.Errorf("GET ETag = %s, POST's = %s", g.Header.Get("ETag"), tag)
	}
	updated, err := time.Parse(time.RFC3339, got["updated_at"].(string))
	if err != nil {
		t.Fatalf("updated_at = %v: %v", got["updated_at"], err)
	}
	if lm, want := g.Header.Get("Last-Modified"), updated.UTC().Format(http.TimeFormat); lm != want {
		t.Errorf("Last-Modified = %q, want %q", lm, want)
	}
	last := visible[len(visible)-1]
	if got := objectKeys(t, c.get(item+"?fields="+last+",id").body); !slices.Equal(got, []string{"id", last}) {
		t.Errorf("fields=%s,id: keys = %v, want [id %s]", last, got, last)
	}
	c.get(item+"?fields=nope").mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)

	// HEAD and OPTIONS.
	for _, path := range []string{item, base} {
		head, get := c.do("HEAD", path, ""), c.get(path)
		head.mustStatus(t, get.StatusCode)
		if len(head.body) != 0 {
			t.Errorf("HEAD %s has a body", path)
		}
		sameHeaders(t, "HEAD "+path, head, get)
	}
	for path, allow := range map[string]string{item: "GET, HEAD, PUT, PATCH, DELETE, OPTIONS", base: "GET, HEAD, POST, OPTIONS"} {
		o := c.do("OPTIONS", path, "")
		o.mustStatus(t, http.StatusOK)
		if got := o.Header.Get("Allow"); got != allow {
			t.Errorf("OPTIONS %s: Allow = %q, want %q", path, got, allow)
		}
	}

	testListOverHTTP(t, c, res, base, got)

	// Conditional requests.
	nm := c.get(item, "If-None-Match", tag)
	nm.mustStatus(t, http.StatusNotModified)
	patch := m.patch(res)
	c.do("PATCH", item, mustJSON(t, patch), "If-Match", `"0000000000000000"`).
		mustError(t, http.StatusPreconditionFailed, resourceapi.CodePreconditionFailed)
	if after := c.get(item).Header.Get("ETag"); after != tag {
		t.Errorf("ETag after a failed If-Match = %s, want %s unchanged", after, tag)
	}

	// PATCH (with the current tag), PUT, and the old tag is stale.
	p := c.do("PATCH", item, mustJSON(t, patch), "If-Match", tag)
	p.mustStatus(t, http.StatusOK)
	mustShow(t, "PATCH", res, p.object(t), patch)
	if p.Header.Get("ETag") == tag || p.Header.Get("ETag") != c.get(item).Header.Get("ETag") {
		t.Errorf("PATCH ETag = %s (before %s); want the new record's, as GET gives it", p.Header.Get("ETag"), tag)
	}
	c.get(item, "If-None-Match", tag).mustStatus(t, http.StatusOK)
	replacement := m.example(res)
	u := c.do("PUT", item, mustJSON(t, replacement), "If-Match", p.Header.Get("ETag"))
	u.mustStatus(t, http.StatusOK)
	mustShow(t, "PUT", res, u.object(t), replacement)
	c.do("PUT", item, mustJSON(t, replacement), "If-Match", tag).
		mustError(t, http.StatusPreconditionFailed, resourceapi.CodePreconditionFailed)

	// Version 2 errors: problem details.
	mustProblem(t, c.get("/api/v2/"+res.Path+"/"+strconv.Itoa(resourceapi.MaxID)), http.StatusNotFound, resourceapi.CodeNotFound)
	var required []string
	for _, f := range res.Fields {
		if f.Required && !f.ReadOnly && f.Generate == nil {
			required = append(required, f.Name)
		}
	}
	p2 := mustProblem(t, c.post("/api/v2/"+res.Path, `{"nope":1}`), http.StatusBadRequest, resourceapi.CodeValidation)
	var fields []string
	for _, e := range p2.Errors {
		fields = append(fields, e.Field)
	}
	if want := append(required, "nope"); !slices.Equal(fields, want) {
		t.Errorf("POST /api/v2/%s {nope}: errors for %v, want %v", res.Path, fields, want)
	}

	// DELETE: 204, then 404.
	d := c.do("DELETE", item, "")
	d.mustStatus(t, http.StatusNoContent)
	if len(d.body) != 0 {
		t.Errorf("DELETE has a body: %q", d.body)
	}
	c.get(item).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	c.do("DELETE", item, "").mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
}

// mustShow checks that rec, a record as a response shows it, holds the
// values sent for each field of body (an item's fields too).
func mustShow(t *testing.T, what string, res *resourceapi.Resource, rec map[string]any, body resourceapi.Record) {
	t.Helper()
	for name, v := range body {
		f := res.Field(name)
		if f == nil || f.WriteOnly {
			continue
		}
		if tm, ok := v.(time.Time); ok {
			// Timestamps are shown in UTC to the millisecond.
			v = tm.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		if f.Type != resourceapi.TypeItems {
			if a, b := jsonText(t, rec[name]), jsonText(t, v); a != b {
				t.Errorf("%s %s: %s = %s, want %s as sent", what, res.Singular, name, a, b)
			}
			continue
		}
		got, _ := rec[name].([]any)
		sent := v.([]resourceapi.Record)
		if len(got) != len(sent) {
			t.Errorf("%s %s: %d %s, want the %d sent", what, res.Singular, len(got), name, len(sent))
			continue
		}
		for i, item := range sent {
			for k, iv := range item {
				if a, b := jsonText(t, got[i].(map[string]any)[k]), jsonText(t, iv); a != b {
					t.Errorf("%s %s: %s[%d].%s = %s, want %s as sent", what, res.Singular, name, i, k, a, b)
				}
			}
		}
	}
}

// jsonText returns v as compact JSON, for comparing a decoded response value
// with a Go value sent.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustProblem checks a version 2 error: problem details with the status and
// code.
func mustProblem(t *testing.T, r *reply, status int, code resourceapi.Code) problem {
	t.Helper()
	r.mustStatus(t, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: Content-Type %q, want application/problem+json", r.Request.Method, r.Request.URL.Path, ct)
	}
	var p problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("%s %s: %v", r.Request.Method, r.Request.URL.Path, err)
	}
	if p.Status != status || p.Code != string(code) || p.Title != http.StatusText(status) || p.RequestID != r.Header.Get("X-Request-ID") {
		t.Errorf("%s %s: problem = %+v, want status %d, code %s", r.Request.Method, r.Request.URL.Path, p, status, code)
	}
	return p
}

// testListOverHTTP checks the collection of res, which holds rec: the
// envelope, each sort, each filter and q.
func testListOverHTTP(t *testing.T, c *client, res *resourceapi.Resource, base string, rec map[string]any) {
	t.Helper()
	id := idOf(t, rec)
	r := c.get(base + "?limit=100")
	if got := objectKeys(t, r.body); !slices.Equal(got, []string{"data", "pagination"}) {
		t.Errorf("GET %s: envelope keys = %v", base, got)
	}
	all, pag := r.list(t)
	if !slices.Contains(listedIDs(t, all), id) || pag["total"] != json.Number(strconv.Itoa(len(all))) {
		t.Errorf("GET %s: %d records (total %v), want every record, %d among them", base, len(all), pag["total"], id)
	}

	// Sorts: desc is the reverse of asc, and asc is in the field's order
	// with ties by id. (Strings are left out of the order check: their
	// order is the database's collation, which storetest pins only for
	// data every collation agrees on.)
	for _, name := range res.SortableFields() {
		asc, _ := c.get(base + "?limit=100&sort=" + name).list(t)
		desc, _ := c.get(base + "?limit=100&sort=" + name + "&order=desc").list(t)
		ids := listedIDs(t, asc)
		if rev := listedIDs(t, desc); !slices.Equal(ids, reversed(rev)) || len(ids) != len(all) {
			t.Errorf("sort=%s: asc %v, desc %v; want every record, and desc the reverse of asc", name, ids, rev)
		}
		f := res.Field(name)
		if f.Type == resourceapi.TypeString {
			continue
		}
		for i := 1; i < len(asc); i++ {
			a, b := asc[i-1], asc[i]
			if cmp.Or(compareJSON(a[name], b[name]), cmp.Compare(idOf(t, a), idOf(t, b))) > 0 {
				t.Errorf("sort=%s: %v (id %d) listed before %v (id %d)", name, a[name], idOf(t, a), b[name], idOf(t, b))
			}
		}
	}

	// Filters: each selects only matching records, the one made here among
	// them when it matches.
	for _, flt := range res.Filters {
		if flt.Internal {
			continue
		}
		v := ""
		switch flt.Kind {
		case resourceapi.FilterEqual:
			v = jsonParam(rec[flt.Field])
		case resourceapi.FilterSoftDelete:
			v = resourceapi.StatusActive
		}
		if len(flt.Values) > 0 && !slices.Contains(flt.Values, v) {
			v = flt.Values[0]
		}
		recs, _ := c.get(base + "?limit=100&" + flt.Param + "=" + v).list(t)
		for _, got := range recs {
			if !filterHolds(res, flt, v, got) {
				t.Errorf("%s=%s listed %v", flt.Param, v, got)
			}
		}
		if filterHolds(res, flt, v, rec) && !slices.Contains(listedIDs(t, recs), id) {
			t.Errorf("%s=%s: %v, want %d among them", flt.Param, v, listedIDs(t, recs), id)
		}
		c.get(base+"?"+flt.Param+"=").mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
	}

	// q: a piece of the first searchable field, in upper case.
	searchable := res.SearchableFields()
	if len(searchable) == 0 {
		details := c.get(base+"?q=abc").mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		if got := detailFields(details); !slices.Equal(got, []string{"q"}) {
			t.Errorf("q on %s: details for %v, want [q]", res.Name, got)
		}
		return
	}
	text, _ := rec[searchable[0]].(string)
	if len(text) < 6 {
		t.Fatalf("%s = %q: the example is too short to search in", searchable[0], text)
	}
	q := strings.ToUpper(strings.TrimSpace(text[1 : len(text)-1]))
	recs, _ := c.get(base + "?limit=100&q=" + urlQuery(q)).list(t)
	if !slices.Contains(listedIDs(t, recs), id) {
		t.Errorf("q=%s: %v, want %d among them", q, listedIDs(t, recs), id)
	}
	for _, got := range recs {
		if !slices.ContainsFunc(searchable, func(name string) bool {
			s, _ := got[name].(string)
			return strings.Contains(strings.ToLower(s), strings.ToLower(q))
		}) {
			t.Errorf("q=%s listed %v, which does not contain it", q, got)
		}
	}
}

func urlQuery(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "%", "%25"), " ", "%20")
}

func listedIDs(t *testing.T, recs []map[string]any) []int64 {
	t.Helper()
	out := make([]int64, len(recs))
	for i, rec := range recs {
		out[i] = idOf(t, rec)
	}
	return out
}

func reversed(s []int64) []int64 {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// jsonParam writes a decoded JSON value as a query parameter.
func jsonParam(v any) string {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// filterHolds reports whether rec, as a response shows it, passes filter
// flt with value v.
func filterHolds(res *resourceapi.Resource, flt resourceapi.Filter, v string, rec map[string]any) bool {
	switch flt.Kind {
	case resourceapi.FilterEqual:
		return jsonParam(rec[flt.Field]) == v
	case resourceapi.FilterSoftDelete:
		return v == resourceapi.StatusAll || rec[res.SoftDelete] == (v == resourceapi.StatusDeleted)
	case resourceapi.FilterContains:
		list, _ := rec[flt.Field].([]any)
		return slices.Contains(list, any(v))
	}
	return false
}

// userOf returns the id of the user whose API key key is.
func userOf(t *testing.T, c *client, key string) int64 {
	t.Helper()
	caller, err := c.service.Authenticate(context.Background(), resourceapi.Credential{Scheme: resourceapi.SchemeAPIKey, Secret: key})
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return caller.UserID
}

// mustPost creates a record at path and returns it.
func mustPost(t *testing.T, c *client, path string, body any) map[string]any {
	t.Helper()
	r := c.post(path, mustJSON(t, body))
	r.mustStatus(t, http.StatusCreated)
	return r.object(t)
}

func path(res *resourceapi.Resource, id int64) string {
	return "/api/" + res.Path + "/" + strconv.FormatInt(id, 10)
}

// num64 reads a decoded JSON number.
func num64(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// mustItems checks an order's items and total: want holds product id,
// quantity and unit price for each item, in order.
func mustItems(t *testing.T, what string, order map[string]any, want [][3]int64) {
	t.Helper()
	items, _ := order["items"].([]any)
	var got [][3]int64
	var total int64
	for _, it := range items {
		item := it.(map[string]any)
		got = append(got, [3]int64{num64(t, item["product_id"]), num64(t, item["quantity"]), num64(t, item["unit_price_cents"])})
	}
	for _, w := range want {
		total += w[1] * w[2]
	}
	if !slices.Equal(got, want) || num64(t, order["total_cents"]) != total {
		t.Errorf("%s: items (product, quantity, unit price) = %v, total %v; want %v, total %d", what, got, order["total_cents"], want, total)
	}
}

func TestOrderPricing(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		a := idOf(t, mustPost(t, c, "/api/products", map[string]any{"name": "Mill", "price_cents": 250}))
		b := idOf(t, mustPost(t, c, "/api/products", map[string]any{"name": "Store", "price_cents": 1000}))
		buyer := c.mustUser("Buyer", "buyer@example.com")

		// The unit prices are the products', and the total their sum,
		// whatever the body says of either (read-only fields, which the
		// document leaves out of request bodies and the server ignores).
		lenient := c.lenient()
		order := mustPost(t, lenient, "/api/orders", map[string]any{
			"user_id": buyer, "total_cents": 1, "items": []map[string]any{
				{"product_id": a, "quantity": 2, "unit_price_cents": 1},
				{"product_id": b, "quantity": 1, "unit_price_cents": 99999},
			}})
		mustItems(t, "POST", order, [][3]int64{{a, 2, 250}, {b, 1, 1000}})
		if num64(t, order["user_id"]) != buyer || order["status"] != resourceapi.OrderPending {
			t.Errorf("order = %v, want the buyer's, pending", order)
		}
		item := path(resourceapi.Orders, idOf(t, order))

		// A product's new price is for new orders only.
		c.do("PATCH", path(resourceapi.Products, a), `{"price_cents":999}`).mustStatus(t, http.StatusOK)
		if got := c.get(item).object(t); jsonText(t, got) != jsonText(t, order) {
			t.Errorf("order after its product's price changed = %v, want %v", got, order)
		}

		// PATCH of the status keeps the items and the total.
		r := lenient.do("PATCH", item, `{"status":"paid","total_cents":7}`)
		r.mustStatus(t, http.StatusOK)
		paid := r.object(t)
		mustItems(t, "PATCH status", paid, [][3]int64{{a, 2, 250}, {b, 1, 1000}})
		if paid["status"] != resourceapi.OrderPaid {
			t.Errorf("status = %v after PATCH, want paid", paid["status"])
		}

		// PATCH of the items replaces them, at today's prices, and the
		// total follows.
		r = lenient.do("PATCH", item, fmt.Sprintf(`{"items":[{"product_id":%d,"quantity":3}],"total_cents":5}`, a))
		r.mustStatus(t, http.StatusOK)
		mustItems(t, "PATCH items", r.object(t), [][3]int64{{a, 3, 999}})
		mustItems(t, "GET after PATCH items", c.get(item).object(t), [][3]int64{{a, 3, 999}})

		// PUT too; the owner stays, the status goes back to its default.
		r = c.do("PUT", item, fmt.Sprintf(`{"items":[{"product_id":%d,"quantity":2},{"product_id":%d,"quantity":1}]}`, b, a))
		r.mustStatus(t, http.StatusOK)
		put := r.object(t)
		mustItems(t, "PUT", put, [][3]int64{{b, 2, 1000}, {a, 1, 999}})
		if num64(t, put["user_id"]) != buyer || put["status"] != resourceapi.OrderPending {
			t.Errorf("order after PUT = %v, want the buyer's, pending", put)
		}

		// The buyer's orders, nested and filtered, show the same.
		for _, list := range []string{fmt.Sprintf("/api/users/%d/orders", buyer), fmt.Sprintf("/api/orders?user_id=%d", buyer)} {
			recs, _ := c.get(list).list(t)
			if len(recs) != 1 || jsonText(t, recs[0]) != jsonText(t, put) {
				t.Errorf("GET %s = %v, want the one order %v", list, recs, put)
			}
		}

		// An order needs items, at most 100, each with a quantity.
		for _, body := range []string{`{"items":[]}`, `{}`, fmt.Sprintf(`{"items":[{"product_id":%d,"quantity":0}]}`, a),
			fmt.Sprintf(`{"items":[{"product_id":%d}]}`, a)} {
			c.post("/api/orders", body).mustError(t, http.StatusBadRequest, resourceapi.CodeValidation)
		}
	})
}

func TestReferencesToAbsentRecords(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		absent := resourceapi.MaxID
		tests := []struct {
			path, body, field string
		}{
			{"/api/reviews", fmt.Sprintf(`{"product_id":%d,"rating":5}`, absent), "product_id"},
			{"/api/comments", fmt.Sprintf(`{"article_id":%d,"body":"Hello"}`, absent), "article_id"},
			{"/api/posts", fmt.Sprintf(`{"author_id":%d,"title":"T","content":"C"}`, absent), "author_id"},
			{"/api/orders", fmt.Sprintf(`{"items":[{"product_id":%d,"quantity":1}]}`, absent), "items[0].product_id"},
		}
		for _, tt := range tests {
			details := c.post(tt.path, tt.body).mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
			if !slices.Contains(detailFields(details), tt.field) {
				t.Errorf("POST %s %s: details for %v, want one for %s", tt.path, tt.body, detailFields(details), tt.field)
			}
			p := mustProblem(t, c.post("/api/v2"+strings.TrimPrefix(tt.path, "/api"), tt.body), http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
			if !slices.ContainsFunc(p.Errors, func(e resourceapi.FieldError) bool { return e.Field == tt.field }) {
				t.Errorf("POST /api/v2 %s: errors %v, want one for %s", tt.path, p.Errors, tt.field)
			}
		}
		// A review changed to name an absent product.
		product := idOf(t, mustPost(t, c, "/api/products", map[string]any{"name": "Mill", "price_cents": 1}))
		review := idOf(t, mustPost(t, c, "/api/reviews", map[string]any{"product_id": product, "rating": 4}))
		details := c.do("PATCH", path(resourceapi.Reviews, review), fmt.Sprintf(`{"product_id":%d}`, absent)).
			mustError(t, http.StatusUnprocessableEntity, resourceapi.CodeUnprocessable)
		if !slices.Equal(detailFields(details), []string{"product_id"}) {
			t.Errorf("PATCH review to an absent product: details for %v", detailFields(details))
		}
		// Under an absent parent, a nested POST is 404: the path names
		// nothing.
		c.post(fmt.Sprintf("/api/products/%d/reviews", absent), `{"rating":5}`).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		// Nothing was created.
		if recs, _ := c.get("/api/reviews").list(t); len(recs) != 1 {
			t.Errorf("%d reviews, want the one", len(recs))
		}
	})
}

func TestDeleteUserCascades(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		victimKey := c.mustAccount("Victim", "victim@example.com", resourceapi.RoleUser)
		victim := userOf(t, c, victimKey)
		other := c.mustUser("Other", "other@example.com")
		product := idOf(t, mustPost(t, c, "/api/products", map[string]any{"name": "Mill", "price_cents": 250}))

		// The victim's records, and comments of another on the victim's
		// article (which go with it).
		article := idOf(t, mustPost(t, c, "/api/articles", map[string]any{"author_id": victim, "title": "Notes", "body": "B"}))
		otherArticle := idOf(t, mustPost(t, c, "/api/articles", map[string]any{"author_id": other, "title": "Other notes", "body": "B"}))
		gone := map[string]int64{
			"post":                   idOf(t, mustPost(t, c, "/api/posts", map[string]any{"author_id": victim, "title": "T", "content": "C"})),
			"order":                  idOf(t, mustPost(t, c, "/api/orders", map[string]any{"user_id": victim, "items": []map[string]any{{"product_id": product, "quantity": 1}}})),
			"review":                 idOf(t, mustPost(t, c, "/api/reviews", map[string]any{"user_id": victim, "product_id": product, "rating": 3})),
			"article":                article,
			"comment":                idOf(t, mustPost(t, c, "/api/comments", map[string]any{"author_id": victim, "article_id": otherArticle, "body": "Mine"})),
			"comment on the article": idOf(t, mustPost(t, c, "/api/comments", map[string]any{"author_id": other, "article_id": article, "body": "Theirs"})),
			"API key":                idOf(t, mustPost(t, c, "/api/api-keys", map[string]any{"user_id": victim, "name": "ci"})),
		}
		paths := map[string]string{
			"post": "posts", "order": "orders", "review": "reviews", "article": "articles", "comment": "comments",
			"comment on the article": "comments", "API key": "api-keys",
		}
		kept := map[string]int64{
			"post":    idOf(t, mustPost(t, c, "/api/posts", map[string]any{"author_id": other, "title": "T", "content": "C"})),
			"article": otherArticle,
			"comment": idOf(t, mustPost(t, c, "/api/comments", map[string]any{"author_id": other, "article_id": otherArticle, "body": "Kept"})),
			"product": product,
		}
		keptPaths := map[string]string{"post": "posts", "article": "articles", "comment": "comments", "product": "products"}
		lists := []string{
			fmt.Sprintf("/api/posts?author_id=%d", victim), fmt.Sprintf("/api/orders?user_id=%d", victim),
			fmt.Sprintf("/api/reviews?user_id=%d", victim), fmt.Sprintf("/api/articles?author_id=%d", victim),
			fmt.Sprintf("/api/comments?author_id=%d", victim), fmt.Sprintf("/api/comments?article_id=%d", article),
			fmt.Sprintf("/api/api-keys?user_id=%d", victim),
		}
		// Read everything first, so that a cache holds it.
		for name, id := range gone {
			c.get(fmt.Sprintf("/api/%s/%d", paths[name], id)).mustStatus(t, http.StatusOK)
		}
		for _, l := range lists {
			if recs, _ := c.get(l).list(t); len(recs) == 0 {
				t.Fatalf("GET %s is empty before the delete; the test checks nothing", l)
			}
		}
		c.as(victimKey).get("/api/posts").mustStatus(t, http.StatusOK)

		c.do("DELETE", path(resourceapi.Users, victim), "").mustStatus(t, http.StatusNoContent)

		for name, id := range gone {
			c.get(fmt.Sprintf("/api/%s/%d", paths[name], id)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		}
		for _, l := range lists {
			if recs, pag := c.get(l).list(t); len(recs) != 0 || pag["total"] != json.Number("0") {
				t.Errorf("GET %s after the user's delete = %v (total %v), want none", l, recs, pag["total"])
			}
		}
		for _, nested := range []string{"posts", "orders", "api-keys"} {
			c.get(fmt.Sprintf("/api/users/%d/%s", victim, nested)).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		}
		for name, id := range kept {
			c.get(fmt.Sprintf("/api/%s/%d", keptPaths[name], id)).mustStatus(t, http.StatusOK)
		}
		// The victim's key went with them.
		c.as(victimKey).get("/api/posts").mustError(t, http.StatusForbidden, resourceapi.CodeInvalidToken)
		// Their order's items went too: nothing keeps the product now.
		c.do("DELETE", path(resourceapi.Products, product), "").mustStatus(t, http.StatusNoContent)

		// An OAuth client goes with the service user it acts as.
		client := mustPost(t, c, "/api/oauth-clients", resourceapi.OAuthClients.Example(1))
		c.do("DELETE", path(resourceapi.Users, num64(t, client["user_id"])), "").mustStatus(t, http.StatusNoContent)
		c.get(path(resourceapi.OAuthClients, idOf(t, client))).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	})
}

func TestDeleteProduct(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		listed := mustPost(t, c, "/api/products", map[string]any{"name": "Listed", "price_cents": 250})
		reviewed := mustPost(t, c, "/api/products", map[string]any{"name": "Reviewed", "price_cents": 100})
		order := mustPost(t, c, "/api/orders", map[string]any{"items": []map[string]any{{"product_id": idOf(t, listed), "quantity": 1}}})
		review := mustPost(t, c, "/api/reviews", map[string]any{"product_id": idOf(t, reviewed), "rating": 2})
		listedReview := mustPost(t, c, "/api/reviews", map[string]any{"product_id": idOf(t, listed), "rating": 5})

		// A product that an order lists stays, and so does everything else.
		item := path(resourceapi.Products, idOf(t, listed))
		tag := c.get(item).Header.Get("ETag")
		for _, prefix := range []string{"/api", "/api/v2"} {
			r := c.do("DELETE", strings.Replace(item, "/api", prefix, 1), "")
			if prefix == "/api" {
				r.mustError(t, http.StatusConflict, resourceapi.CodeConflict)
			} else {
				mustProblem(t, r, http.StatusConflict, resourceapi.CodeConflict)
			}
		}
		if got := c.get(item).Header.Get("ETag"); got != tag {
			t.Errorf("product ETag after a refused delete = %s, want %s", got, tag)
		}
		for _, rec := range []struct {
			res *resourceapi.Resource
			obj map[string]any
		}{{resourceapi.Orders, order}, {resourceapi.Reviews, listedReview}} {
			if got := c.get(path(rec.res, idOf(t, rec.obj))).object(t); jsonText(t, got) != jsonText(t, rec.obj) {
				t.Errorf("%s after a refused delete = %v, want %v", rec.res.Singular, got, rec.obj)
			}
		}

		// A product no order lists goes, with its reviews.
		c.get(path(resourceapi.Reviews, idOf(t, review))).mustStatus(t, http.StatusOK)
		c.do("DELETE", path(resourceapi.Products, idOf(t, reviewed)), "").mustStatus(t, http.StatusNoContent)
		c.get(path(resourceapi.Reviews, idOf(t, review))).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
		if recs, _ := c.get(fmt.Sprintf("/api/reviews?product_id=%d", idOf(t, reviewed))).list(t); len(recs) != 0 {
			t.Errorf("reviews of the deleted product listed: %v", recs)
		}

		// Once the order is gone, so can the product be.
		c.do("DELETE", path(resourceapi.Orders, idOf(t, order)), "").mustStatus(t, http.StatusNoContent)
		c.do("DELETE", item, "").mustStatus(t, http.StatusNoContent)
		c.get(path(resourceapi.Reviews, idOf(t, listedReview))).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)
	})
}

func TestOwnership(t *testing.T) {
	forEachStore(t, func(t *testing.T, c *client) {
		aliceKey := c.mustAccount("Alice", "alice@example.com", resourceapi.RoleUser)
		alice, alicesID := c.as(aliceKey), userOf(t, c, aliceKey)
		bob := c.as(c.mustAccount("Bob", "bob@example.com", resourceapi.RoleUser))
		ed := c.as(c.mustAccount("Ed", "ed@example.com", resourceapi.RoleEditor))

		product := idOf(t, mustPost(t, c, "/api/products", map[string]any{"name": "Mill", "price_cents": 1}))
		article := idOf(t, mustPost(t, ed, "/api/articles", map[string]any{"title": "Notes", "body": "B"}))
		post := mustPost(t, alice, "/api/posts", map[string]any{"title": "Mine", "content": "C"})
		comment := mustPost(t, alice, "/api/comments", map[string]any{"article_id": article, "body": "Mine"})
		review := mustPost(t, alice, "/api/reviews", map[string]any{"product_id": product, "rating": 4})
		for _, rec := range []map[string]any{post, comment, review} {
			for _, owner := range []string{"author_id", "user_id"} {
				if v, ok := rec[owner]; ok && num64(t, v) != alicesID {
					t.Errorf("record %v: %s = %v, want the caller, %d", rec, owner, v, alicesID)
				}
			}
		}

		// Only the author changes their post, comment or review; anyone
		// reads them.
		for _, tt := range []struct {
			res        *resourceapi.Resource
			rec        map[string]any
			patch, put string
		}{
			{resourceapi.Posts, post, `{"title":"Taken"}`, `{"title":"Taken","content":"C"}`},
			{resourceapi.Comments, comment, `{"body":"Taken"}`, fmt.Sprintf(`{"article_id":%d,"body":"Taken"}`, article)},
			{resourceapi.Reviews, review, `{"rating":1}`, fmt.Sprintf(`{"product_id":%d,"rating":1}`, product)},
		} {
			item := path(tt.res, idOf(t, tt.rec))
			for _, who := range []*client{bob, ed} {
				who.get(item).mustStatus(t, http.StatusOK)
				who.do("PATCH", item, tt.patch).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
				who.do("PUT", item, tt.put).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
			}
			if got := c.get(item).object(t); jsonText(t, got) != jsonText(t, tt.rec) {
				t.Errorf("%s after refused changes = %v, want %v", tt.res.Singular, got, tt.rec)
			}
			alice.do("PATCH", item, tt.patch).mustStatus(t, http.StatusOK)
		}

		// Deleting: a user may not delete another's comment; an editor may
		// (moderation).
		item := path(resourceapi.Comments, idOf(t, comment))
		bob.do("DELETE", item, "").mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		ed.do("DELETE", item, "").mustStatus(t, http.StatusNoContent)
		c.get(item).mustError(t, http.StatusNotFound, resourceapi.CodeNotFound)

		// Naming someone else as the author or owner is for admins.
		for _, tt := range []struct {
			who  *client
			path string
			body map[string]any
		}{
			{bob, "/api/posts", map[string]any{"author_id": alicesID, "title": "T", "content": "C"}},
			{bob, "/api/reviews", map[string]any{"user_id": alicesID, "product_id": product, "rating": 1}},
			{ed, "/api/comments", map[string]any{"author_id": alicesID, "article_id": article, "body": "B"}},
			{ed, "/api/articles", map[string]any{"author_id": alicesID, "title": "T", "body": "B"}},
			{bob, "/api/api-keys", map[string]any{"user_id": alicesID}},
		} {
			tt.who.post(tt.path, mustJSON(t, tt.body)).mustError(t, http.StatusForbidden, resourceapi.CodeForbidden)
		}
		byAdmin := mustPost(t, c, "/api/posts", map[string]any{"author_id": alicesID, "title": "T", "content": "C"})
		if num64(t, byAdmin["author_id"]) != alicesID {
			t.Errorf("post an admin made for Alice: author_id = %v, want %d", byAdmin["author_id"], alicesID)
		}
	})
}
