package sqlstore_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/resourceapi/resourceapi/sqlstore"
)

// stringLists are stored lists as SQLite and PostgreSQL return them, and
// what neither does but a hand-edited row could hold.
var stringLists = []string{
	`[]`, ` [ ] `, `["user"]`, `["admin", "user"]`, `["admin","editor","user"]`, "[\"a\",\n\t\"b\"]\r\n",
	`["caf\u00e9"]`, `["café", "日本", "🙂"]`, `["a\"b"]`, `["a\\b"]`, `["tab\tin"]`, `["\u0000"]`,
	`[""]`, `["", ""]`, `null`, ``, `[`, `["a"`, `["a",]`, `["a" "b"]`, `[1]`, `["a"] x`, `{"a":1}`,
	"[\"\xff\"]", "[\"a\x01\"]", `["a"]]`, `[,"a"]`,
}

// TestDecodeStrings checks that the store's reader of lists returns what
// json.Unmarshal into a []string{} returns, for every list and error.
func TestDecodeStrings(t *testing.T) {
	for _, raw := range stringLists {
		check(t, raw)
	}
}

func FuzzDecodeStrings(f *testing.F) {
	for _, raw := range stringLists {
		f.Add(raw)
	}
	f.Fuzz(check)
}

func check(t *testing.T, raw string) {
	want := []string{}
	wantErr := json.Unmarshal([]byte(raw), &want)
	got, err := sqlstore.DecodeStrings([]byte(raw))
	if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("DecodeStrings(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, err, want, wantErr)
	}
	var m maker
	got, err = sqlstore.DecodeStringsWith([]byte(raw), &m)
	if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Errorf("DecodeStringsWith(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, err, want, wantErr)
	}
}

// maker is a sqlstore.StringMaker that copies.
type maker struct{}

func (*maker) String(b []byte) string { return string(b) }
func (*maker) Strings(n int) []string { return make([]string, n) }

// BenchmarkDecodeStrings reads a user's roles as PostgreSQL prints them,
// with the store's reader and with json.Unmarshal.
func BenchmarkDecodeStrings(b *testing.B) {
	raw := []byte(`["editor", "user"]`)
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			if _, err := sqlstore.DecodeStrings(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			list := []string{}
			if err := json.Unmarshal(raw, &list); err != nil {
				b.Fatal(err)
			}
		}
	})
}
