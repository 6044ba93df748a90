package http_test

// The decoder of request bodies as it was before it had a parser of its own:
// encoding/json into a map of json.RawMessage, then each value. It is kept,
// unchanged but for its names, as the oracle that FuzzDecodeRecordAsEncodingJSON
// and TestDecodeRecordAsEncodingJSON hold DecodeRecord to: the same record and
// the same error for every body.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
)

// oracleDecodeRecord decodes a JSON request body into a record of res. It only
// translates: the rule layer (Service) validates the record, and reports in
// one CodeValidation error, with a detail per field, both the values that
// could not be decoded here (unknown fields, wrong JSON types) and the
// constraints that decoded values break. pathID, when not 0, is the id in the
// path of a PUT: a body id that differs is refused. Other read-only fields are
// ignored.
//
// Malformed JSON, or JSON that is not an object, returns CodeBadRequest.
func oracleDecodeRecord(res *resourceapi.Resource, body []byte, pathID int64) (resourceapi.Record, error) {
	raw, err := oracleDecodeObject(body)
	if err != nil {
		return nil, err
	}
	rec := make(resourceapi.Record, len(raw))
	blamed := false // a field holds an InvalidValue
	invalid := func(name, why string) { rec[name], blamed = resourceapi.InvalidValue(why), true }
	for name, msg := range raw {
		f := res.Field(name)
		switch {
		case f == nil || f.Internal:
			invalid(name, "is not a field of "+res.Singular)
		case f.ReadOnly || f.Generate != nil:
			if name == "id" && pathID != 0 {
				if id, ok := oracleDecodeInt(msg); !ok || id != pathID {
					invalid(name, "does not match the id in the path")
				}
			} else if !oracleValidJSONText(msg) {
				invalid(name, oracleNotUTF8) // ignored, but still text a client must not send
			}
		default:
			v, why := oracleDecodeValue(f, msg)
			if why != "" {
				invalid(name, why)
				continue
			}
			rec[name] = v
		}
	}
	if !utf8.Valid(body) && !blamed {
		// The bytes are in a name, or in a value that a repeated name
		// replaced: no field to blame.
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid UTF-8")
	}
	return rec, nil
}

// oracleDecodeObject parses body as exactly one JSON object.
func oracleDecodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body must be a JSON object")
		}
		if errors.Is(err, io.EOF) {
			return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is empty; a JSON object is required")
		}
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid JSON")
	}
	if raw == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body must be a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid JSON: unexpected data after the object")
	}
	return raw, nil
}

// oracleDecodeValue decodes one JSON value for f. It returns nil for JSON null and a
// message when the value is not of f's type.
func oracleDecodeValue(f *resourceapi.Field, msg json.RawMessage) (any, string) {
	if string(msg) == "null" {
		return nil, ""
	}
	want := "must be " + oracleTypeArticle(f.Type) + f.Type.String()
	switch f.Type {
	case resourceapi.TypeInt:
		n, ok := oracleDecodeInt(msg)
		if !ok {
			return nil, want
		}
		return n, ""
	case resourceapi.TypeString:
		var s string
		if json.Unmarshal(msg, &s) != nil {
			return nil, want
		}
		if !oracleValidJSONText(msg) {
			return nil, oracleNotUTF8
		}
		return s, ""
	case resourceapi.TypeBool:
		var b bool
		if json.Unmarshal(msg, &b) != nil {
			return nil, want
		}
		return b, ""
	case resourceapi.TypeStrings:
		var list []string
		if json.Unmarshal(msg, &list) != nil || list == nil {
			return nil, want
		}
		if !oracleValidJSONText(msg) {
			return nil, oracleNotUTF8
		}
		return list, ""
	case resourceapi.TypeTime:
		// RFC 3339, with a zone (Z or an offset), stored and shown in UTC
		// to the millisecond, as every timestamp of the API.
		var str string
		if json.Unmarshal(msg, &str) != nil {
			return nil, "must be a timestamp in RFC 3339 form, such as 2026-11-21T05:07:37Z"
		}
		t, err := time.Parse(time.RFC3339Nano, str)
		if err != nil || t.Year() < 1970 || t.Year() > 9999 {
			return nil, "must be a timestamp in RFC 3339 form, such as 2026-11-21T05:07:37Z"
		}
		return resourceapi.Timestamp(t), ""
	case resourceapi.TypeItems:
		var raw []map[string]json.RawMessage
		if json.Unmarshal(msg, &raw) != nil || raw == nil || slices.ContainsFunc(raw, func(m map[string]json.RawMessage) bool { return m == nil }) {
			return nil, want
		}
		if len(raw) > f.Items.Max {
			return nil, "must hold " + strconv.Itoa(f.Items.Min) + " to " + strconv.Itoa(f.Items.Max) + " items"
		}
		items := make([]resourceapi.Record, len(raw))
		for i, obj := range raw {
			item := make(resourceapi.Record, len(obj))
			for name, m := range obj {
				sub := f.Items.Field(name)
				switch {
				case sub == nil:
					item[name] = resourceapi.InvalidValue("is not a field of an item")
				case sub.ReadOnly:
					if !oracleValidJSONText(m) {
						item[name] = resourceapi.InvalidValue(oracleNotUTF8)
					}
				default:
					v, why := oracleDecodeValue(sub, m)
					if why != "" {
						item[name] = resourceapi.InvalidValue(why)
						continue
					}
					item[name] = v
				}
			}
			items[i] = item
		}
		return items, ""
	}
	return nil, "cannot be written"
}

// oracleValidJSONText reports whether the strings of a JSON value hold only valid
// UTF-8: no invalid byte sequence and no \u escape of an unpaired surrogate
// half. encoding/json silently replaces both with U+FFFD, so a client's
// text would be stored other than it sent it; such a value is refused
// instead. msg is a syntactically valid JSON value.
func oracleValidJSONText(msg []byte) bool {
	if !utf8.Valid(msg) {
		return false
	}
	for i := 0; i < len(msg); i++ {
		if msg[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(msg) || msg[i] != 'u' {
			continue
		}
		r, ok := oracleHex4(msg[i+1:])
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF: // a low half without a high one
			return false
		case r >= 0xD800 && r <= 0xDBFF: // a high half needs a low one next
			if i+2 >= len(msg) || msg[i+1] != '\\' || msg[i+2] != 'u' {
				return false
			}
			low, ok := oracleHex4(msg[i+3:])
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// oracleHex4 reads the four hex digits of a \u escape.
func oracleHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// oracleDecodeInt accepts a JSON number with an integral value that fits in int64,
// including forms such as 30.0 and 3e1.
func oracleDecodeInt(msg json.RawMessage) (int64, bool) {
	if len(msg) == 0 || !(msg[0] == '-' || (msg[0] >= '0' && msg[0] <= '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(msg), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(msg), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// oracleTypeArticle is the indefinite article of a type's name in messages ("must be
// an integer").
func oracleTypeArticle(t resourceapi.FieldType) string {
	if t == resourceapi.TypeInt || t == resourceapi.TypeStrings {
		return "an "
	}
	return "a "
}

// oracleNotUTF8 is the detail of a parameter or string that is not valid UTF-8.
const oracleNotUTF8 = "must be valid UTF-8"
