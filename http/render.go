package http

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Header values shared by every response. net/http only reads header value
// slices, so assigning these directly saves an allocation per header on the
// hot path; nothing in this package appends to them.
var (
	contentTypeJSON    = []string{"application/json"}
	contentTypeProblem = []string{"application/problem+json"}
	cacheRevalidate    = []string{"private, no-cache"}
	noStore            = []string{"no-store"}
)

// Records are rendered by appending to pooled buffers rather than through
// encoding/json and intermediate maps: rendering is most of the work of a
// GET, and this way it costs no allocation.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 4096)
	return &b
}}

// maxPooledBuffer keeps one huge response from pinning its buffer forever.
const maxPooledBuffer = 256 << 10

func getBuffer() *[]byte { return bufPool.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// writeJSON writes a complete JSON body with its length, so that HEAD gets
// the same Content-Length as GET and the compressor can decide at once.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	w.Write(body)
}

// view renders the records of one resource: its visible fields in
// declaration order, with their keys pre-encoded.
type view struct {
	res    *resourceapi.Resource
	fields []column
	byName map[string]*column
	// once are the generated secrets (an API key) that a create response
	// shows, once, after the visible fields.
	once []column
}

type column struct {
	name string
	key  string // `"name":`
	// items, for a list of objects, are the objects' fields in declaration
	// order, their keys pre-encoded like the record's.
	items []column
}

func newView(res *resourceapi.Resource) *view {
	v := &view{res: res, byName: make(map[string]*column)}
	for _, name := range res.VisibleFields() {
		c := column{name: name, key: string(resourceapi.AppendJSONString(nil, name)) + ":"}
		if f := res.Field(name); f.Items != nil {
			for _, sub := range f.Items.Fields {
				c.items = append(c.items, column{name: sub.Name, key: string(resourceapi.AppendJSONString(nil, sub.Name)) + ":"})
			}
		}
		v.fields = append(v.fields, c)
	}
	for i := range v.fields {
		v.byName[v.fields[i].name] = &v.fields[i]
	}
	for _, f := range res.Fields {
		if f.Generate != nil && f.Secret != resourceapi.NotSecret {
			v.once = append(v.once, column{name: f.Name, key: string(resourceapi.AppendJSONString(nil, f.Name)) + ":"})
		}
	}
	return v
}

// appendOnce adds to a rendered record (b ends with its closing brace) the
// generated secrets rec carries: only the record Create returns has them.
func (v *view) appendOnce(b []byte, rec resourceapi.Record) []byte {
	for _, c := range v.once {
		s, ok := rec[c.name].(string)
		if !ok || len(b) == 0 || b[len(b)-1] != '}' {
			continue
		}
		b = append(b[:len(b)-1], ',')
		b = append(b, c.key...)
		b = resourceapi.AppendJSONString(b, s)
		b = append(b, '}')
	}
	return b
}

// appendRecord renders rec as a JSON object holding exactly the given fields
// (every visible field when fields is nil), in declaration order. A field the
// record lacks is null. Names in fields must be visible fields, as
// ParseFields and ParseListQuery guarantee.
func (v *view) appendRecord(b []byte, rec resourceapi.Record, fields []string) ([]byte, error) {
	var err error
	b = append(b, '{')
	if fields == nil {
		for i := range v.fields {
			c := &v.fields[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, c.key...)
			if b, err = c.appendValue(b, rec[c.name]); err != nil {
				return b, fmt.Errorf("render %s field %s: %w", v.res.Singular, c.name, err)
			}
		}
		return append(b, '}'), nil
	}
	for i, name := range fields {
		c := v.byName[name]
		if c == nil {
			return b, fmt.Errorf("render %s: %q is not a visible field", v.res.Singular, name)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.key...)
		if b, err = c.appendValue(b, rec[name]); err != nil {
			return b, fmt.Errorf("render %s field %s: %w", v.res.Singular, name, err)
		}
	}
	return append(b, '}'), nil
}

// appendValue renders the value of column c: a list of objects with their
// fields in declaration order, anything else by appendValue.
func (c *column) appendValue(b []byte, v any) ([]byte, error) {
	items, ok := v.([]resourceapi.Record)
	if c.items == nil || !ok {
		return appendValue(b, v)
	}
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j := range c.items {
			sub := &c.items[j]
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, sub.key...)
			var err error
			if b, err = appendValue(b, item[sub.name]); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendValue renders one record value. Records hold int64, string, bool,
// time.Time, []string or nil; other types would be a store's bug, rendered
// through encoding/json so the output stays valid JSON.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case string:
		return resourceapi.AppendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case time.Time:
		return appendTime(b, x)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = resourceapi.AppendJSONString(b, s)
		}
		return append(b, ']'), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("unsupported number %v", x)
		}
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendTime renders t as RFC 3339 in UTC with exactly three fractional
// digits, the one timestamp format of the API: 2026-11-21T05:07:37.123Z.
// Every response holds two per record, so it is written by hand rather than
// through time.Format.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return b, fmt.Errorf("timestamp %v has no RFC 3339 form", t)
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, '"')
	b = append2(b, year/100)
	b = append2(b, year%100)
	b = append(b, '-')
	b = append2(b, int(month))
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, min)
	b = append(b, ':')
	b = append2(b, sec)
	b = append(b, '.', byte('0'+ms/100))
	b = append2(b, ms%100)
	return append(b, 'Z', '"'), nil
}

// twoDigits holds "00" to "99".
const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// append2 appends n (0 to 99) as two digits.
func append2(b []byte, n int) []byte { return append(b, twoDigits[2*n], twoDigits[2*n+1]) }

const hexDigits = "0123456789abcdef"
