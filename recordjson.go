package resourceapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// timeLayout is the one timestamp format the service shows: RFC 3339 in UTC
// with exactly three fractional digits (2026-11-21T05:07:37.123Z).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalRecord encodes rec, a record of res, as a JSON object of its visible
// fields in declaration order, as the API shows them: a field rec lacks is
// null, timestamps are RFC 3339 in UTC with milliseconds, items are objects
// of their declared fields. Write-only fields (secrets) are never encoded. It
// fails when a value does not have its field's Go type (a bug of whoever
// built the record) or a timestamp has no RFC 3339 form.
//
// It is how a record leaves the process with an event (the outbox, an engine
// shared by instances); UnmarshalRecord reads it back.
func MarshalRecord(res *Resource, rec Record) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	first := true
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.WriteOnly || f.Internal {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendJSONString(b, f.Name)
		b = append(b, ':')
		var err error
		if b, err = appendFieldValue(b, f, rec[f.Name]); err != nil {
			return nil, fmt.Errorf("encode %s field %s: %w", res.Singular, f.Name, err)
		}
	}
	return append(b, '}'), nil
}

// appendFieldValue appends v, a value of field f, as JSON.
func appendFieldValue(b []byte, f *Field, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	wrong := func() ([]byte, error) { return b, fmt.Errorf("%T is not a %s value", v, f.Type) }
	switch f.Type {
	case TypeInt:
		n, ok := v.(int64)
		if !ok {
			return wrong()
		}
		return strconv.AppendInt(b, n, 10), nil
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return wrong()
		}
		return AppendJSONString(b, s), nil
	case TypeBool:
		x, ok := v.(bool)
		if !ok {
			return wrong()
		}
		return strconv.AppendBool(b, x), nil
	case TypeTime:
		t, ok := v.(time.Time)
		if !ok {
			return wrong()
		}
		t = Timestamp(t)
		if y := t.Year(); y < 0 || y > 9999 {
			return b, fmt.Errorf("timestamp %v has no RFC 3339 form", t)
		}
		b = append(b, '"')
		b = t.AppendFormat(b, timeLayout)
		return append(b, '"'), nil
	case TypeStrings:
		list, ok := v.([]string)
		if !ok {
			return wrong()
		}
		b = append(b, '[')
		for i, s := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, s)
		}
		return append(b, ']'), nil
	case TypeItems:
		items, ok := v.([]Record)
		if !ok {
			return wrong()
		}
		b = append(b, '[')
		for i, item := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			for j := range f.Items.Fields {
				sub := &f.Items.Fields[j]
				if j > 0 {
					b = append(b, ',')
				}
				b = AppendJSONString(b, sub.Name)
				b = append(b, ':')
				var err error
				if b, err = appendFieldValue(b, sub, item[sub.Name]); err != nil {
					return b, fmt.Errorf("item %d field %s: %w", i, sub.Name, err)
				}
			}
			b = append(b, '}')
		}
		return append(b, ']'), nil
	}
	return b, fmt.Errorf("field type %v cannot be encoded", f.Type)
}

// safeASCII marks the ASCII bytes that appear in a JSON string as they are.
// It matches encoding/json's default escaping (which also escapes <, > and &
// so that a body mistaken for HTML cannot carry markup), so the two produce
// the same bytes.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendJSONString appends s as a JSON string, byte for byte as
// encoding/json writes it: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped. Records, events and the REST API's bodies and
// cursors are written with it.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', jsonHex[c>>4], jsonHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', jsonHex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const jsonHex = "0123456789abcdef"

// UnmarshalRecord decodes a record of res that MarshalRecord encoded. Each
// value must have its field's JSON type (null for absent values); timestamps
// are any RFC 3339 time, normalized as Timestamp does, whose year in UTC is
// 0 to 9999. Names that are not visible fields of res are ignored, and
// fields the object lacks are absent from the record: an instance of another
// version, whose declaration has a field more or less, still reads the
// fields both know. Items are whole objects: an item field the JSON lacks
// is nil, as MarshalRecord encodes it.
func UnmarshalRecord(res *Resource, data []byte) (Record, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("decode %s: not a JSON object", res.Singular)
	}
	rec := make(Record, len(res.Fields))
	for i := range res.Fields {
		f := &res.Fields[i]
		msg, ok := raw[f.Name]
		if !ok || f.WriteOnly || f.Internal {
			continue
		}
		v, err := unmarshalValue(f, msg)
		if err != nil {
			return nil, fmt.Errorf("decode %s field %s: %w", res.Singular, f.Name, err)
		}
		rec[f.Name] = v
	}
	return rec, nil
}

var errJSONType = errors.New("wrong JSON type")

// unmarshalValue decodes one JSON value of field f to its Go type.
func unmarshalValue(f *Field, msg json.RawMessage) (any, error) {
	if string(msg) == "null" {
		return nil, nil
	}
	switch f.Type {
	case TypeInt:
		n, ok := decodeInt(msg)
		if !ok {
			return nil, fmt.Errorf("%w: want an integer", errJSONType)
		}
		return n, nil
	case TypeString:
		var s string
		if err := json.Unmarshal(msg, &s); err != nil {
			return nil, fmt.Errorf("%w: want a string", errJSONType)
		}
		return s, nil
	case TypeBool:
		var x bool
		if err := json.Unmarshal(msg, &x); err != nil {
			return nil, fmt.Errorf("%w: want a boolean", errJSONType)
		}
		return x, nil
	case TypeTime:
		var s string
		if err := json.Unmarshal(msg, &s); err != nil {
			return nil, fmt.Errorf("%w: want an RFC 3339 string", errJSONType)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("want an RFC 3339 time: %w", err)
		}
		t = Timestamp(t)
		if y := t.Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("time %q is out of range", s)
		}
		return t, nil
	case TypeStrings:
		var elems []json.RawMessage
		if err := json.Unmarshal(msg, &elems); err != nil {
			return nil, fmt.Errorf("%w: want an array of strings", errJSONType)
		}
		list := make([]string, len(elems))
		for i, e := range elems {
			if string(e) == "null" || json.Unmarshal(e, &list[i]) != nil {
				return nil, fmt.Errorf("%w: want an array of strings", errJSONType)
			}
		}
		return list, nil
	case TypeItems:
		var objs []json.RawMessage
		if err := json.Unmarshal(msg, &objs); err != nil {
			return nil, fmt.Errorf("%w: want an array of objects", errJSONType)
		}
		items := make([]Record, len(objs))
		for i, o := range objs {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(o, &obj); err != nil || obj == nil {
				return nil, fmt.Errorf("%w: item %d: want an object", errJSONType, i)
			}
			item := make(Record, len(f.Items.Fields))
			for j := range f.Items.Fields {
				sub := &f.Items.Fields[j]
				m, ok := obj[sub.Name]
				if !ok {
					item[sub.Name] = nil // as MarshalRecord writes an absent value
					continue
				}
				v, err := unmarshalValue(sub, m)
				if err != nil {
					return nil, fmt.Errorf("item %d field %s: %w", i, sub.Name, err)
				}
				item[sub.Name] = v
			}
			items[i] = item
		}
		return items, nil
	}
	return nil, fmt.Errorf("field type %v cannot be decoded", f.Type)
}
