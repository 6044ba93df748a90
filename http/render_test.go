package http_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

var stringSeeds = []string{
	"", "plain", `quote " and backslash \`, "tab\tnewline\nreturn\rbackspace\bformfeed\f",
	"\x00\x01\x1f\x7f", "<script>&amp;</script>", "héllo wörld ✓ 日本語 🎉",
	"line\u2028sep\u2029para", "bad \xff utf8 \xc3\x28 \xe2\x82", "\xed\xa0\x80 surrogate",
	"\ufffd already", strings.Repeat("a", 300),
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringSeeds {
		want, _ := json.Marshal(s)
		if got := rhttp.AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
	// It appends; it does not overwrite.
	if got := string(rhttp.AppendString([]byte("x:"), "y")); got != `x:"y"` {
		t.Errorf("AppendString appended to x: gives %s", got)
	}
}

// FuzzAppendString checks the string encoder against encoding/json: the same
// bytes, valid JSON, and a round trip to the string with invalid UTF-8
// replaced.
func FuzzAppendString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := rhttp.AppendString(nil, s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json gives %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s, not valid JSON: %v", s, got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip of %q gives %q", s, back)
		}
	})
}

func TestAppendTime(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 5, 7, 37, 123_456_789, time.UTC), `"2026-11-21T05:07:37.123Z"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05.000Z"`},
		{time.Date(2026, 11, 21, 7, 7, 37, 999_999_999, time.FixedZone("CEST", 2*3600)), `"2026-11-21T05:07:37.999Z"`},
		{time.Date(1, 1, 1, 0, 0, 0, 1_000_000, time.UTC), `"0001-01-01T00:00:00.001Z"`},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), `"9999-12-31T23:59:59.000Z"`},
	}
	for _, tt := range tests {
		got, err := rhttp.AppendTime(nil, tt.t)
		if err != nil || string(got) != tt.want {
			t.Errorf("AppendTime(%v) = %s, %v; want %s", tt.t, got, err, tt.want)
		}
	}
	if _, err := rhttp.AppendTime(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("AppendTime of year 10000 did not fail")
	}
}

func FuzzAppendTime(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1795237657), int64(123456789))
	f.Add(int64(-62135596800), int64(999999999))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec%1e9)
		got, err := rhttp.AppendTime(nil, tm)
		if y := tm.UTC().Year(); y < 0 || y > 9999 {
			if err == nil {
				t.Fatalf("AppendTime(%v) = %s, want an error", tm, got)
			}
			return
		}
		want := `"` + tm.UTC().Format("2006-01-02T15:04:05.000Z07:00") + `"`
		if err != nil || string(got) != want {
			t.Fatalf("AppendTime(%v) = %s, %v; want %s", tm, got, err, want)
		}
	})
}

func TestAppendValue(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{int64(-42), "-42"},
		{int64(math.MaxInt64), "9223372036854775807"},
		{"s", `"s"`},
		{true, "true"},
		{false, "false"},
		{[]string(nil), "[]"},
		{[]string{}, "[]"},
		{[]string{"a", `"b"`}, `["a","\"b\""]`},
		{7, "7"},
		{1.5, "1.5"},
		{map[string]int{"a": 1}, `{"a":1}`},
	}
	for _, tt := range tests {
		got, err := rhttp.AppendValue(nil, tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("AppendValue(%#v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), make(chan int)} {
		if got, err := rhttp.AppendValue(nil, v); err == nil {
			t.Errorf("AppendValue(%v) = %s, want an error", v, got)
		}
	}
}

func TestRenderRecord(t *testing.T) {
	rec := resourceapi.Record{
		"id": int64(7), "name": "Ann", "email": "ann@example.com", "age": nil, "roles": []string(nil),
		"permissions": []string{"posts:read"}, "created_at": time.Date(2026, 11, 21, 5, 7, 37, 123_000_000, time.UTC), "updated_at": time.Date(2026, 11, 21, 5, 7, 38, 0, time.UTC),
		"deleted": false, "password": "hash-must-not-show",
	}
	got, err := rhttp.RenderRecord(resourceapi.Users, rec, nil)
	want := `{"id":7,"name":"Ann","email":"ann@example.com","age":null,"roles":[],"permissions":["posts:read"],"created_at":"2026-11-21T05:07:37.123Z","updated_at":"2026-11-21T05:07:38.000Z","deleted":false}`
	if err != nil || string(got) != want {
		t.Errorf("RenderRecord = %s, %v\nwant %s", got, err, want)
	}
	// Absent fields are null; selection keeps the given (declaration) order.
	got, err = rhttp.RenderRecord(resourceapi.Users, resourceapi.Record{"id": int64(1)}, []string{"id", "age"})
	if err != nil || string(got) != `{"id":1,"age":null}` {
		t.Errorf("RenderRecord with fields = %s, %v", got, err)
	}
	if _, err := rhttp.RenderRecord(resourceapi.Users, rec, []string{"password"}); err == nil {
		t.Error("rendering a write-only field did not fail")
	}
	if _, err := rhttp.RenderRecord(resourceapi.Users, resourceapi.Record{"age": math.NaN()}, nil); err == nil {
		t.Error("rendering NaN did not fail")
	}
	// The ETag depends on the visible representation only.
	a, _ := rhttp.RecordETag(resourceapi.Users, rec)
	rec2 := maps(rec)
	rec2["password"] = "another hash"
	b, _ := rhttp.RecordETag(resourceapi.Users, rec2)
	rec2["age"] = int64(1)
	c, _ := rhttp.RecordETag(resourceapi.Users, rec2)
	if a != b || a == c || a != rhttp.ETagOf([]byte(want)) || !strongETag.MatchString(a) {
		t.Errorf("ETags: %s, %s (password changed), %s (age changed); want equal, equal, different", a, b, c)
	}
}

func maps(rec resourceapi.Record) resourceapi.Record {
	out := resourceapi.Record{}
	for k, v := range rec {
		out[k] = v
	}
	return out
}

// FuzzRenderRecord renders users with arbitrary values and checks the result
// against encoding/json: valid JSON, the visible fields in order, and each
// value as encoding/json would give it.
func FuzzRenderRecord(f *testing.F) {
	f.Add(int64(1), "Ann", "ann@example.com", int64(30), true, "admin", "user", int64(1795237657123), false)
	f.Add(int64(0), "\x00\"\\<>&\u2028", "\xff@\xfe", int64(-1), false, "", "\xe2\x82", int64(0), true)
	f.Fuzz(func(t *testing.T, id int64, name, email string, age int64, hasAge bool, role1, role2 string, ms int64, deleted bool) {
		ts := time.UnixMilli(ms % 253402300799999).UTC() // within year 9999
		rec := resourceapi.Record{
			"id": id, "name": name, "email": email, "roles": []string{role1, role2},
			"created_at": ts, "updated_at": ts, "deleted": deleted, "password": "x",
		}
		if hasAge {
			rec["age"] = age
		}
		got, err := rhttp.RenderRecord(resourceapi.Users, rec, nil)
		if err != nil {
			if ts.Year() < 0 {
				return
			}
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Fatalf("invalid JSON: %s", got)
		}
		var back map[string]json.RawMessage
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if len(back) != len(resourceapi.Users.VisibleFields()) {
			t.Fatalf("rendered %d fields: %s", len(back), got)
		}
		for _, field := range resourceapi.Users.VisibleFields() {
			v := rec[field]
			if tm, ok := v.(time.Time); ok {
				v = tm.Format("2006-01-02T15:04:05.000Z07:00")
			}
			want, _ := json.Marshal(v)
			if !bytes.Equal(back[field], want) {
				t.Fatalf("%s = %s, encoding/json gives %s", field, back[field], want)
			}
		}
		sel := []string{"email", "deleted"}
		part, err := rhttp.RenderRecord(resourceapi.Users, rec, sel)
		if err != nil || !json.Valid(part) || !slices.Equal(jsonKeys(t, part), sel) {
			t.Fatalf("selected %v: %s, %v", sel, part, err)
		}
	})
}

func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token()
	var keys []string
	for dec.More() {
		tok, _ := dec.Token()
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return keys
}

func TestETagMatching(t *testing.T) {
	const cur = `"0123456789abcdef"`
	tests := []struct {
		header []string
		strong bool
		want   bool
	}{
		{[]string{cur}, true, true},
		{[]string{`"0123456789abcdef-gzip"`}, true, true},
		{[]string{`"0123456789abcdef-deflate"`}, true, true},
		{[]string{`"0123456789abcdef-br"`}, true, false},
		{[]string{`W/` + cur}, true, false},
		{[]string{`W/` + cur}, false, true},
		{[]string{`W/"0123456789abcdef-gzip"`}, false, true},
		{[]string{`*`}, true, true},
		{[]string{` "a" , ` + cur + ` `}, true, true},
		{[]string{`"a,b", ` + cur}, true, true}, // commas inside tags
		{[]string{`"a"`, cur}, true, true},
		{[]string{`"a"`}, false, false},
		{[]string{`0123456789abcdef`}, false, false},
		{[]string{`"0123456789abcdef`}, false, false},
		{[]string{``}, false, false},
		{[]string{`,,,`}, false, false},
	}
	for _, tt := range tests {
		if got := rhttp.MatchTags(tt.header, cur, tt.strong); got != tt.want {
			t.Errorf("MatchTags(%q, strong %v) = %v, want %v", tt.header, tt.strong, got, tt.want)
		}
	}
	if got := rhttp.WithCodingSuffix(`W/"abc"`, "-gzip"); got != `W/"abc-gzip"` {
		t.Errorf("WithCodingSuffix weak = %s", got)
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "APPLICATION/JSON": true, "application/json;charset=utf-8": true,
		`application/json; charset="UTF-8"`: true, "application/json; charset=utf8": true, "application/problem+json": true,
		"application/json; charset=iso-8859-1": false, "text/json": false, "application/jsonp": false, "": false,
		"application/x-www-form-urlencoded": false, "multipart/form-data": false, "application/+json": true,
	} {
		if got := rhttp.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
	for id, want := range map[string]bool{"a": true, strings.Repeat("Z", 128): true, strings.Repeat("Z", 129): false, "": false, "a b": false, "a\n": false} {
		if got := rhttp.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestRenderItems(t *testing.T) {
	rec := resourceapi.Record{"id": int64(4), "user_id": int64(2), "status": "paid", "total_cents": int64(30),
		"items": []resourceapi.Record{{"unit_price_cents": int64(10), "quantity": int64(3), "product_id": int64(1)}}}
	got, err := rhttp.RenderRecord(resourceapi.Orders, rec, []string{"id", "items"})
	want := `{"id":4,"items":[{"product_id":1,"quantity":3,"unit_price_cents":10}]}`
	if err != nil || string(got) != want {
		t.Errorf("RenderRecord = %s, %v; want %s (item fields in declaration order)", got, err, want)
	}
	got, _ = rhttp.RenderRecord(resourceapi.Orders, resourceapi.Record{"items": []resourceapi.Record{}}, []string{"items"})
	if string(got) != `{"items":[]}` {
		t.Errorf("no items render as %s, want []", got)
	}
	// Declaration order, not the alphabet's.
	lines := resourceapi.NewResource(resourceapi.Resource{Name: "carts", Singular: "cart", Fields: []resourceapi.Field{
		{Name: "id", Type: resourceapi.TypeInt, ReadOnly: true},
		{Name: "lines", Type: resourceapi.TypeItems, Items: &resourceapi.Items{Table: "cart_lines", Key: "cart_id", Max: 9,
			Fields: []resourceapi.Field{{Name: "zone", Type: resourceapi.TypeString}, {Name: "amount", Type: resourceapi.TypeInt}}}},
		{Name: "created_at", Type: resourceapi.TypeTime, ReadOnly: true},
		{Name: "updated_at", Type: resourceapi.TypeTime, ReadOnly: true},
	}})
	got, err = rhttp.RenderRecord(lines, resourceapi.Record{"lines": []resourceapi.Record{{"amount": int64(2), "zone": "b"}}}, []string{"lines"})
	if want := `{"lines":[{"zone":"b","amount":2}]}`; err != nil || string(got) != want {
		t.Errorf("RenderRecord = %s, %v; want %s", got, err, want)
	}
}
