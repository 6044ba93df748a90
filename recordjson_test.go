package resourceapi_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/resourceapi/resourceapi"
)

// stored returns a record of res as a store returns it: every visible field,
// with id and timestamps, the example's values, items with their looked-up
// fields, and nil for the rest.
func stored(res *resourceapi.Resource, n int) resourceapi.Record {
	at := time.Date(2026, 11, 21, 5, 7, 37, 123_000_000, time.UTC)
	rec := resourceapi.Record{}
	ex := res.Example(n)
	for _, f := range res.Fields {
		if f.WriteOnly || f.Internal {
			continue
		}
		v, ok := ex[f.Name]
		switch {
		case f.Name == "id":
			v = int64(n + 1)
		case f.Type == resourceapi.TypeTime:
			v = at
		case f.Type == resourceapi.TypeItems && ok:
			items := v.([]resourceapi.Record)
			for i := range items {
				items[i]["unit_price_cents"] = int64(250)
			}
		case !ok:
			v = f.DefaultValue()
		}
		rec[f.Name] = v
	}
	return rec
}

func TestMarshalRecordRoundTrip(t *testing.T) {
	for _, res := range resourceapi.Declared() {
		t.Run(res.Name, func(t *testing.T) {
			rec := stored(res, 3)
			b, err := resourceapi.MarshalRecord(res, rec)
			if err != nil {
				t.Fatalf("MarshalRecord: %v", err)
			}
			got, err := resourceapi.UnmarshalRecord(res, b)
			if err != nil {
				t.Fatalf("UnmarshalRecord(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, rec) {
				t.Fatalf("round trip of %s:\n got %#v\nwant %#v", b, got, rec)
			}
		})
	}
}

// TestMarshalRecordShape pins the encoding: visible fields only, in
// declaration order, timestamps as the API shows them, absent values null.
func TestMarshalRecordShape(t *testing.T) {
	rec := resourceapi.Record{
		"id": int64(7), "name": "Ann <admin>", "email": "ann@example.com", "password": "secret hash",
		"roles":      []string{"admin"},
		"created_at": time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("CET", 3600)),
	}
	b, err := resourceapi.MarshalRecord(resourceapi.Users, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":7,"name":"Ann \u003cadmin\u003e","email":"ann@example.com","age":null,"roles":["admin"],` +
		`"permissions":null,"created_at":"2026-01-02T02:04:05.006Z","updated_at":null,"deleted":null}`
	if got := string(b); got != want {
		t.Fatalf("MarshalRecord =\n%s\nwant\n%s", got, want)
	}
}

func TestMarshalRecordErrors(t *testing.T) {
	for name, rec := range map[string]resourceapi.Record{
		"int as string": {"age": "36"},
		"int type":      {"age": 36},
		"list type":     {"roles": []any{"admin"}},
		"time type":     {"created_at": "2026-01-02T03:04:05Z"},
		"year 10000":    {"created_at": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if b, err := resourceapi.MarshalRecord(resourceapi.Users, rec); err == nil {
			t.Errorf("%s: MarshalRecord = %s, want an error", name, b)
		}
	}
}

func TestUnmarshalRecord(t *testing.T) {
	users := resourceapi.Users
	got, err := resourceapi.UnmarshalRecord(users, []byte(
		`{"id":7,"name":"Ann","age":3e1,"roles":[],"created_at":"2026-01-02T04:04:05.0069+01:00","password":"x","future":{"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := resourceapi.Record{"id": int64(7), "name": "Ann", "age": int64(30), "roles": []string{},
		"created_at": time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UnmarshalRecord = %#v, want %#v (unknown and write-only names ignored, times normalized)", got, want)
	}
	for _, bad := range []string{
		`[]`, `null`, `{`, `{"id":"7"}`, `{"id":1.5}`, `{"name":1}`, `{"deleted":"yes"}`, `{"roles":[null]}`,
		`{"roles":"admin"}`, `{"created_at":"yesterday"}`, `{"created_at":"0000-01-01T00:00:00+01:00"}`, `{} {}`,
	} {
		if rec, err := resourceapi.UnmarshalRecord(users, []byte(bad)); err == nil {
			t.Errorf("UnmarshalRecord(%s) = %v, want an error", bad, rec)
		}
	}
	_, err = resourceapi.UnmarshalRecord(resourceapi.Orders, []byte(`{"items":[{"product_id":1,"quantity":"2"}]}`))
	if err == nil || !strings.Contains(err.Error(), "quantity") {
		t.Errorf("an item of the wrong type: error %v, want one naming quantity", err)
	}
}

// FuzzUnmarshalRecord feeds arbitrary bytes to UnmarshalRecord for every
// declared resource. It must never panic, and what it accepts must encode,
// and decode again to the same record: a record that crossed an engine once
// crosses it again unchanged.
func FuzzUnmarshalRecord(f *testing.F) {
	for i, res := range resourceapi.Declared() {
		b, err := resourceapi.MarshalRecord(res, stored(res, i))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	for _, s := range []string{
		`{"id":1e3,"name":"\ud800","roles":["a","\u0000"],"created_at":"9999-12-31T23:59:59.9999999-01:00"}`,
		`{"items":[{},{"product_id":null,"quantity":-0}],"total_cents":-9223372036854775808}`,
		`{"deleted":true,"age":1.0e+00,"email":"\"<>&"}`, `{"created_at":"2026-01-02T03:04:05Z"}`, `{}`, `null`, "\xff",
	} {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(3), []byte(s))
	}
	declared := resourceapi.Declared()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		res := declared[int(which)%len(declared)]
		rec, err := resourceapi.UnmarshalRecord(res, data)
		if err != nil {
			return
		}
		b1, err := resourceapi.MarshalRecord(res, rec)
		if err != nil {
			t.Fatalf("MarshalRecord of the decoded %#v: %v", rec, err)
		}
		again, err := resourceapi.UnmarshalRecord(res, b1)
		if err != nil {
			t.Fatalf("UnmarshalRecord(%s), its own encoding: %v", b1, err)
		}
		b2, err := resourceapi.MarshalRecord(res, again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
		for name, v := range rec {
			if f := res.Field(name); f == nil || f.WriteOnly {
				t.Fatalf("decoded %q, which is not a visible field", name)
			} else if v != nil && !reflect.DeepEqual(again[name], v) {
				t.Fatalf("field %s: %#v, then %#v", name, v, again[name])
			}
		}
	})
}

// TestAppendJSONString: strings are written as encoding/json writes them,
// whether they take the path without escapes or not.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "Load 1-2@load.test", "a\"b", `back\slash`, "<b>&amp;", "tab\there",
		"\x00\x1f", "\x7f", "é", "\u2028\u2029", "bad \xff utf-8", "~ !#$%'()*+,-./:;=?@[]^_`{|}"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := resourceapi.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
}

// TestMarshalRecordAllocations: an event's payload (a user as created) is
// encoded without an allocation per field: the writer encodes one for each
// write, inside the transaction every other write of the batch waits on.
func TestMarshalRecordAllocations(t *testing.T) {
	rec := stored(resourceapi.Users, 3)
	got := testing.AllocsPerRun(100, func() {
		if _, err := resourceapi.MarshalRecord(resourceapi.Users, rec); err != nil {
			t.Fatal(err)
		}
	})
	if got > 2 {
		t.Fatalf("MarshalRecord(a user) made %.0f allocations, want at most 2", got)
	}
}
