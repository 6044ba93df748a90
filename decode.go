package resourceapi

import (
	"encoding/json"
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

// invalidValue stands, in a decoded record, for a value that could not be
// decoded, with the reason; Validate reports it.
type invalidValue struct{ why string }

// InvalidValue returns what a transport puts in a record, in place of a
// value it could not decode, so that Validate reports why (a field that is
// unknown, or of the wrong JSON type) in the same error as every other
// detail of the record.
func InvalidValue(why string) any { return invalidValue{why} }

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

func fieldDefault(f *Field) any {
	if f.Default == nil {
		return nil
	}
	return f.Default()
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
