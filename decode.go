package resourceapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteMode says which kind of write a request body is decoded for.
type WriteMode int

// Write modes.
const (
	// ModeCreate: required fields must be present; absent fields take their
	// defaults.
	ModeCreate WriteMode = iota + 1
	// ModeReplace: required fields must be present; absent fields become null
	// or their default, except Keep fields, which stay as stored.
	ModeReplace
	// ModePatch: only the fields present change.
	ModePatch
)

// DecodeRecord decodes a JSON request body into a record of res. It only
// translates: the rule layer (Service) validates the record, and reports in
// one CodeValidation error, with a detail per field, both the values that
// could not be decoded here (unknown fields, wrong JSON types) and the
// constraints that decoded values break. pathID, when not 0, is the id in the
// path of a PUT: a body id that differs is refused. Other read-only fields are
// ignored.
//
// Malformed JSON, or JSON that is not an object, returns CodeBadRequest.
func DecodeRecord(res *Resource, body []byte, pathID int64) (Record, error) {
	raw, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	rec := make(Record, len(raw))
	for name, msg := range raw {
		f := res.Field(name)
		switch {
		case f == nil || f.Internal:
			rec[name] = invalidValue{"is not a field of " + res.Singular}
		case f.ReadOnly || f.Generate != nil:
			if name == "id" && pathID != 0 {
				if id, ok := decodeInt(msg); !ok || id != pathID {
					rec[name] = invalidValue{"does not match the id in the path"}
				}
			} else if !validJSONText(msg) {
				rec[name] = invalidValue{notUTF8} // ignored, but still text a client must not send
			}
		default:
			v, why := decodeValue(f, msg)
			if why != "" {
				rec[name] = invalidValue{why}
				continue
			}
			rec[name] = v
		}
	}
	if !utf8.Valid(body) && !slices.ContainsFunc(slices.Collect(maps.Values(rec)), func(v any) bool { _, bad := v.(invalidValue); return bad }) {
		// The bytes are in a name, or in a value that a repeated name
		// replaced: no field to blame.
		return nil, Errorf(CodeBadRequest, "Request body is not valid UTF-8")
	}
	return rec, nil
}

// invalidValue stands, in a decoded record, for a value that could not be
// decoded, with the reason; Validate reports it.
type invalidValue struct{ why string }

// Validate checks and normalizes, in place, a record of res about to be
// written in the given mode: required fields, nulls, and each field's
// constraints. In ModeReplace, absent fields that are not Keep fields are set
// to null, so that the replace clears them. Defaults of absent fields are the
// store's to apply when it inserts. Values must already have their field's Go
// type. Every bad field gives one detail of a CodeValidation error.
func Validate(res *Resource, rec Record, mode WriteMode) error {
	var details []FieldError
	bad := func(field, msg string) { details = append(details, FieldError{Field: field, Message: msg}) }
	// Values that failed to decode, and names that are no field, each get
	// their detail here and no other (not "is required").
	for name, v := range rec {
		if inv, ok := v.(invalidValue); ok {
			bad(name, inv.why)
			delete(rec, name)
		} else if res.Field(name) == nil {
			bad(name, "is not a field of "+res.Singular)
			delete(rec, name)
		}
	}
	failed := make(map[string]bool, len(details))
	for _, d := range details {
		failed[d.Field] = true
	}
	for i := range res.Fields {
		f := &res.Fields[i]
		v, present := rec[f.Name]
		if f.ReadOnly || f.Generate != nil {
			delete(rec, f.Name)
			continue
		}
		if failed[f.Name] {
			continue
		}
		if !present {
			switch {
			case mode != ModePatch && f.Required:
				bad(f.Name, "is required")
			case mode == ModeReplace && !f.Keep && !f.Transient:
				rec[f.Name] = fieldDefault(f)
			}
			continue
		}
		if f.Type == TypeItems && v != nil {
			items, itemDetails := validateItems(f, v)
			if len(itemDetails) > 0 {
				details = append(details, itemDetails...)
				continue
			}
			v = items
		}
		v, why := checkValue(f, v)
		if why != "" {
			bad(f.Name, why)
			continue
		}
		rec[f.Name] = v
	}
	if len(details) == 0 && res.Check != nil {
		details = res.Check(rec, mode)
	}
	if len(details) == 0 {
		return nil
	}
	order := make(map[string]int, len(res.Fields))
	for i, f := range res.Fields {
		order[f.Name] = i
	}
	// An item's detail (items[2].quantity) sorts with its field.
	field := func(name string) string {
		if i := strings.IndexAny(name, "[."); i > 0 {
			return name[:i]
		}
		return name
	}
	slices.SortStableFunc(details, func(a, b FieldError) int {
		ia, oka := order[field(a.Field)]
		ib, okb := order[field(b.Field)]
		if oka && okb && ia == ib {
			return strings.Compare(a.Field, b.Field)
		}
		switch {
		case oka && okb:
			return ia - ib
		case oka != okb: // declared fields first, then unknown ones by name
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Field, b.Field)
	})
	return &Error{Code: CodeValidation, Message: "Request body is not valid", Details: details}
}

// checkValue checks a present value of field f: null, type, normalization
// and constraints. It returns the value to store, or why it is refused.
func checkValue(f *Field, v any) (any, string) {
	if v == nil {
		if !f.Nullable || f.Required {
			return nil, "must not be null"
		}
		return nil, ""
	}
	if why := checkType(f, v); why != "" {
		return nil, why
	}
	if f.Normalize != nil {
		v = f.Normalize(v)
	}
	if why := checkLimits(f, v); why != "" {
		return nil, why
	}
	if f.Check != nil {
		if why := f.Check(v); why != "" {
			return nil, why
		}
	}
	return v, ""
}

// checkLimits checks a value of the field's type against its declared
// Range, Length and Enum.
func checkLimits(f *Field, v any) string {
	if r := f.Range; r != nil {
		if n, ok := v.(int64); ok && (n < r.Min || n > r.Max) {
			return "must be between " + strconv.FormatInt(r.Min, 10) + " and " + strconv.FormatInt(r.Max, 10)
		}
	}
	if r := f.Length; r != nil {
		if s, ok := v.(string); ok {
			if n := int64(utf8.RuneCountInString(s)); n < r.Min || n > r.Max {
				return "must be " + strconv.FormatInt(r.Min, 10) + " to " + strconv.FormatInt(r.Max, 10) + " characters"
			}
		}
	}
	if len(f.Enum) > 0 {
		bad := false
		switch x := v.(type) {
		case string:
			bad = !slices.Contains(f.Enum, x)
		case []string:
			bad = slices.ContainsFunc(x, func(e string) bool { return !slices.Contains(f.Enum, e) })
		}
		if bad {
			return "must be one of " + quotedList(f.Enum)
		}
	}
	return ""
}

// validateItems checks the objects of a TypeItems field: their number, and
// each object's fields, as a record's are checked; read-only item fields are
// dropped (the rule layer fills them). Details name the item and its field:
// items[2].quantity.
func validateItems(f *Field, v any) ([]Record, []FieldError) {
	items, ok := v.([]Record)
	if !ok {
		return nil, []FieldError{{Field: f.Name, Message: "must be " + article(f.Type) + f.Type.String()}}
	}
	var details []FieldError
	if n := len(items); n < f.Items.Min || n > f.Items.Max {
		return nil, []FieldError{{Field: f.Name, Message: "must hold " + itoa(f.Items.Min) + " to " + itoa(f.Items.Max) + " items"}}
	}
	out := make([]Record, len(items))
	for i, item := range items {
		prefix := f.Name + "[" + itoa(i) + "]."
		clean := make(Record, len(f.Items.Fields))
		for name, val := range item {
			sub := f.Items.Field(name)
			switch inv, invalid := val.(invalidValue); {
			case invalid:
				details = append(details, FieldError{Field: prefix + name, Message: inv.why})
			case sub == nil:
				details = append(details, FieldError{Field: prefix + name, Message: "is not a field of an item"})
			}
		}
		for j := range f.Items.Fields {
			sub := &f.Items.Fields[j]
			val, present := item[sub.Name]
			if _, invalid := val.(invalidValue); invalid || sub.ReadOnly {
				continue
			}
			if !present {
				if sub.Required {
					details = append(details, FieldError{Field: prefix + sub.Name, Message: "is required"})
				} else {
					clean[sub.Name] = fieldDefault(sub)
				}
				continue
			}
			val, why := checkValue(sub, val)
			if why != "" {
				details = append(details, FieldError{Field: prefix + sub.Name, Message: why})
				continue
			}
			clean[sub.Name] = val
		}
		out[i] = clean
	}
	return out, details
}

// checkType reports a value whose Go type is not its field's (a caller that
// built the record by hand), and strings no store can hold.
func checkType(f *Field, v any) string {
	ok := false
	switch f.Type {
	case TypeInt:
		_, ok = v.(int64)
	case TypeString:
		var s string
		if s, ok = v.(string); ok && strings.IndexByte(s, 0) >= 0 {
			return "must not contain NUL characters"
		} else if ok && !utf8.ValidString(s) {
			return notUTF8
		}
	case TypeBool:
		_, ok = v.(bool)
	case TypeStrings:
		var list []string
		if list, ok = v.([]string); ok && slices.ContainsFunc(list, func(s string) bool { return strings.IndexByte(s, 0) >= 0 }) {
			return "must not contain NUL characters"
		} else if ok && slices.ContainsFunc(list, func(s string) bool { return !utf8.ValidString(s) }) {
			return notUTF8
		}
	case TypeItems:
		_, ok = v.([]Record)
	case TypeTime:
		_, ok = v.(time.Time)
	}
	if !ok {
		return "must be " + article(f.Type) + f.Type.String()
	}
	return ""
}

// decodeObject parses body as exactly one JSON object.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, Errorf(CodeBadRequest, "Request body must be a JSON object")
		}
		if errors.Is(err, io.EOF) {
			return nil, Errorf(CodeBadRequest, "Request body is empty; a JSON object is required")
		}
		return nil, Errorf(CodeBadRequest, "Request body is not valid JSON")
	}
	if raw == nil {
		return nil, Errorf(CodeBadRequest, "Request body must be a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Errorf(CodeBadRequest, "Request body is not valid JSON: unexpected data after the object")
	}
	return raw, nil
}

func fieldDefault(f *Field) any {
	if f.Default == nil {
		return nil
	}
	return f.Default()
}

// decodeValue decodes one JSON value for f. It returns nil for JSON null and a
// message when the value is not of f's type.
func decodeValue(f *Field, msg json.RawMessage) (any, string) {
	if string(msg) == "null" {
		return nil, ""
	}
	want := "must be " + article(f.Type) + f.Type.String()
	switch f.Type {
	case TypeInt:
		n, ok := decodeInt(msg)
		if !ok {
			return nil, want
		}
		return n, ""
	case TypeString:
		var s string
		if json.Unmarshal(msg, &s) != nil {
			return nil, want
		}
		if !validJSONText(msg) {
			return nil, notUTF8
		}
		return s, ""
	case TypeBool:
		var b bool
		if json.Unmarshal(msg, &b) != nil {
			return nil, want
		}
		return b, ""
	case TypeStrings:
		var list []string
		if json.Unmarshal(msg, &list) != nil || list == nil {
			return nil, want
		}
		if !validJSONText(msg) {
			return nil, notUTF8
		}
		return list, ""
	case TypeTime:
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
		return Timestamp(t), ""
	case TypeItems:
		var raw []map[string]json.RawMessage
		if json.Unmarshal(msg, &raw) != nil || raw == nil || slices.ContainsFunc(raw, func(m map[string]json.RawMessage) bool { return m == nil }) {
			return nil, want
		}
		if len(raw) > f.Items.Max {
			return nil, "must hold " + itoa(f.Items.Min) + " to " + itoa(f.Items.Max) + " items"
		}
		items := make([]Record, len(raw))
		for i, obj := range raw {
			item := make(Record, len(obj))
			for name, m := range obj {
				sub := f.Items.Field(name)
				switch {
				case sub == nil:
					item[name] = invalidValue{"is not a field of an item"}
				case sub.ReadOnly:
					if !validJSONText(m) {
						item[name] = invalidValue{notUTF8}
					}
				default:
					v, why := decodeValue(sub, m)
					if why != "" {
						item[name] = invalidValue{why}
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

// validJSONText reports whether the strings of a JSON value hold only valid
// UTF-8: no invalid byte sequence and no \u escape of an unpaired surrogate
// half. encoding/json silently replaces both with U+FFFD, so a client's
// text would be stored other than it sent it; such a value is refused
// instead. msg is a syntactically valid JSON value.
func validJSONText(msg []byte) bool {
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
		r, ok := hex4(msg[i+1:])
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
			low, ok := hex4(msg[i+3:])
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
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

// decodeInt accepts a JSON number with an integral value that fits in int64,
// including forms such as 30.0 and 3e1.
func decodeInt(msg json.RawMessage) (int64, bool) {
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

func article(t FieldType) string {
	if t == TypeInt || t == TypeStrings {
		return "an "
	}
	return "a "
}
