package http_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/resourceapi/resourceapi"
	rhttp "github.com/resourceapi/resourceapi/http"
)

// diffValues are JSON values (and some that are not JSON) that bodies of
// the differential tests give to each field.
var diffValues = []string{
	`null`, `nul`, `nullx`, `true`, `false`, `tru`, `0`, `-0`, `-0.0`, `1`, `30`, `30.0`, `3e1`, `3E+1`, `1.5`, `-1`,
	`1e2`, `1e400`, `-1e400`, `1e-400`, `0.1e1`, `01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `123456789012345678`,
	`1234567890123456789`, `9007199254740993`, `9223372036854775807`, `9223372036854775808`,
	`-9223372036854775808`, `-9223372036854775809`, `9223372036854775807.0`, `1e18`, `1e19`, `-1e18`,
	`""`, `"x"`, `"Ann"`, `"a\u0041"`, `"\u00e9"`, "\"\xc3\xa9\"", "\"a\xffb\"", "\"\xed\xa0\x80\"", "\"\xe2\x82\"",
	`"\ud800"`, `"\udc00"`, `"\ud83d\ude00"`, `"\ud83d\\ude00"`, `"\ud83dx"`, `"\ud83d\ud83d"`, `"\ud83d\u0041"`,
	`"\"\\\/\b\f\n\r\t"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"a\x7fb\"", `"unterminated`,
	`"2026-11-21T05:07:37Z"`, `"2026-11-21T05:07:37.123456789+02:00"`, `"2026-11-21T05:07:37\u005a"`,
	`"1969-12-31T23:59:59Z"`, `"2026-11-21"`, "\"2026-11-21T05:07:37Z\xff\"",
	`[]`, `[ ]`, `["a"]`, `["a","b"]`, `["a",null]`, `[null]`, `["a",1]`, "[\"\xff\"]", `["\ud800"]`, `[["a"]]`,
	`[`, `[ `, `["a",`, `["a", `, `["a",]`, `[,]`, `["a" "b"]`, `{}`, `{ }`, `{"a":1}`, "{\"a\xff\":1}", `{"a":}`, `{"a"}`, `{,}`,
	`[{}]`, `[{},{}]`, `[null,{}]`, `[{}, 1]`, `[{"product_id":1,"quantity":2}]`,
	`[{"product_id":1,"quantity":2,"unit_price_cents":5}]`, "[{\"product_id\":1,\"unit_price_cents\":\"\xff\"}]",
	`[{"product_id":1,"product_id":"x"}]`, `[{"nope":1,"quantity":null}]`, "[{\"n\xffope\":1}]",
	`[{"quantity":1.0e0,"unit_price_cents":[1,{"a":"\ud800"}]}]`, `[{"product_\u0069d":7}]`,
	`[{"unit_price_cents":"\udc00","unit_price_cents":1}]`, "[{\"unit_price_cents\":\"\xff\",\"unit_price_cents\":1}]",
	`[[[]]]`, `[{"a":[{"b":[]}]}]`, `[1,2,3,4]`,
}

// diffBodies returns bodies for res: each field with each value, and
// bodies whose shape is the point.
func diffBodies(res *resourceapi.Resource) []string {
	bodies := []string{
		``, ` `, " \t\r\n ", `{}`, ` {} `, "{}\n", `{} {}`, `{}x`, `{}}`, `{},`, "{}\x00", "{}\xff", `[]`, `[] x`, `null`,
		`nullx`, `1`, `1x`, `01`, `-`, `"x"`, `"x`, `true`, `tru`, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`,
		`{,}`, `{"a" 1}`, `{1:1}`, `{"a":1 "b":2}`, "\xff", "{\"\xff\":1}", "{\"a\":\"\xff\",\"a\":1}", `{"":1}`,
		"\ufeff{}", `{"a":1}` + strings.Repeat(" ", 10), "\v{}", `}`, `]`, `[1,]`, `[1 2]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"a":` + strings.Repeat(`{"b":`, 9999) + `1` + strings.Repeat("}", 9999) + `}`,
		`{"a":` + strings.Repeat(`{"b":`, 9998) + `1` + strings.Repeat("}", 9998) + `}`,
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 99) + `}`,
	}
	for _, f := range res.Fields {
		for _, v := range diffValues {
			bodies = append(bodies,
				`{"`+f.Name+`":`+v+`}`,
				`{ "`+f.Name+`" : `+v+` , "zz":1 }`,
				`{"`+f.Name+`":`+v+`,"`+f.Name+`":"\u00e9"}`,
				`{"`+f.Name+`":"\u00e9","`+f.Name+`":`+v+`}`,
				"{\""+f.Name+"\":\"\xff\",\""+f.Name+"\":"+v+"}",
			)
		}
		// Nesting at encoding/json's bound and past it, inside an item
		// (the record, the list and the item are three levels).
		for _, n := range []int{9997, 9998} {
			bodies = append(bodies, `{"`+f.Name+`":[{"product_id":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}]}`)
		}
		bodies = append(bodies, `{"`+strings.ToUpper(f.Name)+`":1}`, `{"\u00`+fmt.Sprintf("%x", f.Name[0])+f.Name[1:]+`":1}`)
	}
	// Whole records, as clients send them, and each of their beginnings.
	whole := []string{`{"name":"A\u00e9","roles":["a",null],"items":[{"product_id":1,"unit_price_cents":"\ud800"}],"age":1.5e1}`}
	for n := range 3 {
		if res.Example == nil {
			break
		}
		if b, err := resourceapi.MarshalRecord(res, res.Example(n)); err == nil {
			whole = append(whole, string(b))
		}
	}
	for _, b := range whole {
		for i := range len(b) + 1 {
			bodies = append(bodies, b[:i])
		}
	}
	return bodies
}

// diffPathIDs are the path ids a body is decoded with: none (POST, PATCH)
// and a PUT's.
var diffPathIDs = []int64{0, 1, 7, 30, -1}

// TestDecodeRecordAsEncodingJSON holds DecodeRecord to the decoder it
// replaced, on every declared resource: the same record, the same error.
func TestDecodeRecordAsEncodingJSON(t *testing.T) {
	// The race detector makes the whole set take half a minute and has
	// nothing to find in it: an eighth of it then.
	step := 1
	if raceEnabled || testing.Short() {
		step = 8
	}
	n := 0
	for _, res := range resourceapi.Declared() {
		for i, body := range diffBodies(res) {
			if i%step != 0 {
				continue
			}
			for _, id := range diffPathIDs {
				checkAsEncodingJSON(t, res, []byte(body), id)
				n++
			}
		}
	}
	t.Logf("%d bodies", n)
}

// FuzzDecodeRecordAsEncodingJSON is TestDecodeRecordAsEncodingJSON on
// arbitrary bodies, for a resource chosen by r.
func FuzzDecodeRecordAsEncodingJSON(f *testing.F) {
	declared := resourceapi.Declared()
	for i, res := range declared {
		for j, body := range diffBodies(res) {
			if len(body) < 2000 && j%24 == i%24 {
				f.Add([]byte(body), uint8(i), diffPathIDs[j%len(diffPathIDs)])
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, r uint8, pathID int64) {
		checkAsEncodingJSON(t, declared[int(r)%len(declared)], body, pathID)
	})
}

func checkAsEncodingJSON(t *testing.T, res *resourceapi.Resource, body []byte, pathID int64) {
	t.Helper()
	got, gotErr := rhttp.DecodeRecord(res, body, pathID)
	want, wantErr := oracleDecodeRecord(res, body, pathID)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("%s, path id %d, body %q:\nerror %v,\nwant  %v", res.Name, pathID, truncated(body), gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s, path id %d, body %q:\nrecord %#v,\nwant   %#v", res.Name, pathID, truncated(body), got, want)
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *resourceapi.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return false
	}
	return ea.Code == eb.Code && ea.Message == eb.Message && reflect.DeepEqual(ea.Details, eb.Details)
}

func truncated(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

// decodeBodies are request bodies as clients send them, with what
// DecodeRecord may allocate for each at most: the record's map (two), and
// for each string its bytes (the body's buffer goes back to its pool) and
// its interface value; lists and items their slices. The decoder of
// encoding/json took 31, 15, 47 and 57.
var decodeBodies = []struct {
	name   string
	res    *resourceapi.Resource
	body   string
	allocs float64
}{
	{"post", resourceapi.Users, `{"name":"Load 1","email":"load-1@load.test","age":30}`, 6},
	{"patch", resourceapi.Users, `{"age":42}`, 2},
	{"roles", resourceapi.Users, `{"name":"Ann","email":"ann@example.com","roles":["admin","editor"],"deleted":false}`, 10},
	{"order", resourceapi.Orders, `{"user_id":1,"items":[{"product_id":1,"quantity":2},{"product_id":2,"quantity":1}]}`, 8},
}

// TestDecodeRecordAllocations pins what decoding a body costs in
// allocations.
func TestDecodeRecordAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts; .ci/run runs this test without it")
	}
	for _, c := range decodeBodies {
		body := []byte(c.body)
		if _, err := rhttp.DecodeRecord(c.res, body, 0); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := testing.AllocsPerRun(100, func() { rhttp.DecodeRecord(c.res, body, 0) })
		if got > c.allocs {
			t.Errorf("%s: DecodeRecord allocates %.0f times, more than %.0f", c.name, got, c.allocs)
		}
		if testing.Verbose() {
			old := testing.AllocsPerRun(100, func() { oracleDecodeRecord(c.res, body, 0) })
			t.Logf("%s: %.0f allocations (encoding/json's: %.0f)", c.name, got, old)
		}
	}
}

// BenchmarkDecodeRecord decodes the bodies of decodeBodies; "json" is the
// decoder of encoding/json it replaced.
func BenchmarkDecodeRecord(b *testing.B) {
	for _, c := range decodeBodies {
		body := []byte(c.body)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rhttp.DecodeRecord(c.res, body, 0)
			}
		})
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				oracleDecodeRecord(c.res, body, 0)
			}
		})
	}
}
