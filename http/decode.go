package http

import (
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
)

// DecodeRecord decodes a JSON request body into a record of res. It only
// translates: the rule layer (Service) validates the record, and reports in
// one CodeValidation error, with a detail per field, both the values that
// could not be decoded here (unknown fields, wrong JSON types) and the
// constraints that decoded values break. pathID, when not 0, is the id in the
// path of a PUT: a body id that differs is refused. Other read-only fields are
// ignored. A name given twice counts once, with its last value.
//
// Malformed JSON, or JSON that is not an object, returns CodeBadRequest.
//
// It reads the body in one pass, with no encoding/json on its way: it is
// every POST's, PUT's and PATCH's. What it accepts and every message it
// gives are those of the decoder it replaced (encoding/json into a map of
// json.RawMessage, then each value), which its tests keep as their oracle:
// the grammar of RFC 8259 with encoding/json's nesting bound, names whose
// bytes are not UTF-8 read as encoding/json reads them (U+FFFD for each bad
// byte or lone surrogate), and text that is not UTF-8 refused, in the field
// that holds it when there is one.
func DecodeRecord(res *resourceapi.Resource, body []byte, pathID int64) (resourceapi.Record, error) {
	d := decoder{b: body}
	d.space()
	if d.i == len(body) {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is empty; a JSON object is required")
	}
	if body[d.i] != '{' {
		// encoding/json reads one whole value (any bytes after it are not
		// looked at) before it finds that the value is not an object.
		if _, ok := d.skip(); !ok {
			return nil, notJSON()
		}
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body must be a JSON object")
	}
	rec, ok := d.record(res, pathID)
	if !ok {
		return nil, notJSON()
	}
	if d.space(); d.i != len(body) {
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid JSON: unexpected data after the object")
	}
	if d.badUTF8 && !blamed(rec) {
		// The bytes are in a value that a repeated name replaced, or
		// inside an item: no field to blame.
		return nil, resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid UTF-8")
	}
	return rec, nil
}

// notJSON is the error of a body that is not JSON; a client is not told
// where (the message is the one encoding/json's errors became).
func notJSON() error {
	return resourceapi.Errorf(resourceapi.CodeBadRequest, "Request body is not valid JSON")
}

// blamed reports whether a field of rec holds an InvalidValue, whose detail
// will name the field: a value of none of the types a decoded value has.
func blamed(rec resourceapi.Record) bool {
	for _, v := range rec {
		switch v.(type) {
		case nil, int64, string, bool, time.Time, []string, []resourceapi.Record:
		default:
			return true
		}
	}
	return false
}

// maxDepth is how deeply arrays and objects may nest, the top object
// included: encoding/json's bound, so that the same bodies are refused.
const maxDepth = 10000

// decoder reads one JSON body. Its methods return false when the body is
// not JSON; the position is then of no use.
type decoder struct {
	b       []byte
	i       int
	badUTF8 bool // a string of the body holds bytes that are not UTF-8

	depth int    // open arrays and objects
	kinds uint64 // bit n: the container at depth n+1 is an object (the first 64)
	deep  []uint64
}

// space skips JSON whitespace.
func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the byte there, or 0 at the end.
func (d *decoder) next() byte {
	d.space()
	if d.i == len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// record reads the object at d.i, the body's, into a record of res.
func (d *decoder) record(res *resourceapi.Resource, pathID int64) (resourceapi.Record, bool) {
	rec := make(resourceapi.Record)
	ok := d.object(func(key []byte, esc bool) bool {
		var f *resourceapi.Field
		if esc {
			f = res.Field(d.text(key, esc))
		} else {
			f = res.Field(string(key))
		}
		switch {
		case f == nil || f.Internal:
			if _, ok := d.skip(); !ok {
				return false
			}
			rec[d.text(key, esc)] = resourceapi.InvalidValue("is not a field of " + res.Singular)
		case f.ReadOnly || f.Generate != nil:
			why := ""
			if f.Name == "id" && pathID != 0 {
				if id, ok, valid := d.int(); !valid {
					return false
				} else if !ok || id != pathID {
					why = "does not match the id in the path"
				}
			} else if text, ok := d.skip(); !ok {
				return false
			} else if !text {
				why = notUTF8 // ignored, but still text a client must not send
			}
			if why != "" {
				rec[f.Name] = resourceapi.InvalidValue(why)
			} else {
				delete(rec, f.Name) // a name given twice counts with its last value
			}
		default:
			v, why, ok := d.value(f)
			if !ok {
				return false
			}
			if why != "" {
				v = resourceapi.InvalidValue(why)
			}
			rec[f.Name] = v
		}
		return true
	})
	return rec, ok
}

// object reads the object at d.i, calling member with each name (its raw
// bytes between the quotes, and whether they hold an escape) with d.i at
// the value, which member reads.
func (d *decoder) object(member func(key []byte, esc bool) bool) bool {
	if !d.push(true) {
		return false
	}
	d.i++ // {
	if d.next() == '}' {
		d.i++
		d.pop()
		return true
	}
	for {
		if d.next() != '"' {
			return false
		}
		start := d.i + 1
		esc, _, ok := d.str()
		if !ok {
			return false
		}
		key := d.b[start : d.i-1]
		if d.next() != ':' {
			return false
		}
		d.i++
		d.space()
		if !member(key, esc) {
			return false
		}
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.pop()
			return true
		default:
			return false
		}
	}
}

// array reads the array at d.i, calling elem with d.i at each element (a
// byte of the body), which elem reads.
func (d *decoder) array(elem func() bool) bool {
	if !d.push(false) {
		return false
	}
	d.i++ // [
	if d.next() == ']' {
		d.i++
		d.pop()
		return true
	}
	for {
		if d.space(); d.i == len(d.b) || !elem() {
			return false
		}
		switch d.next() {
		case ',':
			d.i++
		case ']':
			d.i++
			d.pop()
			return true
		default:
			return false
		}
	}
}

// value reads the value at d.i for field f: nil for null, or why it is not
// of f's type. ok is false when the body is not JSON.
func (d *decoder) value(f *resourceapi.Field) (v any, why string, ok bool) {
	if d.i < len(d.b) && d.b[d.i] == 'n' {
		return nil, "", d.literal("null")
	}
	want := mustBe(f.Type)
	switch f.Type {
	case resourceapi.TypeInt:
		n, isInt, ok := d.int()
		if !isInt {
			return nil, want(), ok
		}
		return n, "", ok
	case resourceapi.TypeString:
		if d.i == len(d.b) || d.b[d.i] != '"' {
			return d.wrong(want())
		}
		start := d.i + 1
		esc, text, ok := d.str()
		if !ok {
			return nil, "", false
		}
		if !text {
			return nil, notUTF8, true
		}
		return d.text(d.b[start:d.i-1], esc), "", true
	case resourceapi.TypeBool:
		if d.i < len(d.b) && d.b[d.i] == 't' {
			return true, "", d.literal("true")
		}
		if d.i < len(d.b) && d.b[d.i] == 'f' {
			return false, "", d.literal("false")
		}
		return d.wrong(want())
	case resourceapi.TypeTime:
		const notTime = "must be a timestamp in RFC 3339 form, such as 2026-11-21T05:07:37Z"
		if d.i == len(d.b) || d.b[d.i] != '"' {
			return d.wrong(notTime)
		}
		start := d.i + 1
		esc, _, ok := d.str()
		if !ok {
			return nil, "", false
		}
		t, err := time.Parse(time.RFC3339Nano, d.text(d.b[start:d.i-1], esc))
		if err != nil || t.Year() < 1970 || t.Year() > 9999 {
			return nil, notTime, true
		}
		return resourceapi.Timestamp(t), "", true
	case resourceapi.TypeStrings:
		if d.i == len(d.b) || d.b[d.i] != '[' {
			return d.wrong(want())
		}
		list := make([]string, 0, 4) // non-nil when empty, as encoding/json's
		wrong, text := false, true
		ok := d.array(func() bool {
			switch {
			case d.b[d.i] == '"':
				start := d.i + 1
				esc, t, ok := d.str()
				if !ok {
					return false
				}
				text = text && t
				if !wrong {
					list = append(list, d.text(d.b[start:d.i-1], esc))
				}
				return true
			case d.b[d.i] == 'n': // a null element reads as ""
				list = append(list, "")
				return d.literal("null")
			}
			wrong = true
			_, ok := d.skip()
			return ok
		})
		switch {
		case !ok:
			return nil, "", false
		case wrong:
			return nil, want(), true
		case !text:
			return nil, notUTF8, true
		}
		return list, "", true
	case resourceapi.TypeItems:
		if d.i == len(d.b) || d.b[d.i] != '[' {
			return d.wrong(want())
		}
		items := make([]resourceapi.Record, 0, 4)
		wrong, n := false, 0
		ok := d.array(func() bool {
			n++
			if d.b[d.i] != '{' {
				wrong = true
				_, ok := d.skip()
				return ok
			}
			if wrong || n > f.Items.Max {
				_, ok := d.skip()
				return ok
			}
			item, ok := d.item(f.Items)
			items = append(items, item)
			return ok
		})
		switch {
		case !ok:
			return nil, "", false
		case wrong:
			return nil, want(), true
		case n > f.Items.Max:
			return nil, "must hold " + strconv.Itoa(f.Items.Min) + " to " + strconv.Itoa(f.Items.Max) + " items", true
		}
		return items, "", true
	}
	_, ok = d.skip()
	return nil, "cannot be written", ok
}

// wrong skips the value at d.i, which is not of its field's type.
func (d *decoder) wrong(why string) (any, string, bool) {
	_, ok := d.skip()
	return nil, why, ok
}

// item reads the object at d.i, an item of a TypeItems field. Its details
// stay in the item: Validate names the item and its field.
func (d *decoder) item(it *resourceapi.Items) (resourceapi.Record, bool) {
	item := make(resourceapi.Record)
	ok := d.object(func(key []byte, esc bool) bool {
		var sub *resourceapi.Field
		name := ""
		if esc {
			name = d.text(key, esc)
			sub = it.Field(name)
		} else if sub = itemField(it, key); sub != nil {
			name = sub.Name
		} else {
			name = d.text(key, esc)
		}
		switch {
		case sub == nil:
			if _, ok := d.skip(); !ok {
				return false
			}
			item[name] = resourceapi.InvalidValue("is not a field of an item")
		case sub.ReadOnly:
			text, ok := d.skip()
			if !ok {
				return false
			}
			if !text {
				item[name] = resourceapi.InvalidValue(notUTF8)
			} else {
				delete(item, name)
			}
		default:
			v, why, ok := d.value(sub)
			if !ok {
				return false
			}
			if why != "" {
				v = resourceapi.InvalidValue(why)
			}
			item[name] = v
		}
		return true
	})
	return item, ok
}

// itemField is it.Field for a name's bytes, without making a string of
// them.
func itemField(it *resourceapi.Items, key []byte) *resourceapi.Field {
	for i := range it.Fields {
		if string(key) == it.Fields[i].Name {
			return &it.Fields[i]
		}
	}
	return nil
}

// int reads the value at d.i as an integer: a JSON number with an integral
// value that fits in int64, including forms such as 30.0 and 3e1. isInt is
// false for any other value; ok is false when the body is not JSON.
func (d *decoder) int() (n int64, isInt, ok bool) {
	if d.i == len(d.b) || !(d.b[d.i] == '-' || (d.b[d.i] >= '0' && d.b[d.i] <= '9')) {
		_, ok := d.skip()
		return 0, false, ok
	}
	start := d.i
	if !d.number() {
		return 0, false, false
	}
	n, isInt = decodeInt(d.b[start:d.i])
	return n, isInt, true
}

// decodeInt converts num, a JSON number, to an integer when its value is
// one that fits in int64.
func decodeInt(num []byte) (int64, bool) {
	// Up to 18 digits without a fraction or an exponent cannot overflow.
	if len(num) <= 18 {
		neg := num[0] == '-'
		digits := num
		if neg {
			digits = num[1:]
		}
		var n int64
		plain := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// skip reads any one value at d.i. text is whether its strings (names
// included) hold only valid UTF-8: no invalid byte sequence and no \u
// escape of an unpaired surrogate half.
//
// It keeps no stack of its own beyond a bit per open container, so a deep
// body costs a bit per level (encoding/json's bound applies).
func (d *decoder) skip() (text, ok bool) {
	text = true
	base := d.depth
	for {
		// A value at d.i.
		d.space()
		if d.i == len(d.b) {
			return text, false
		}
		switch c := d.b[d.i]; c {
		case '{', '[':
			obj := c == '{'
			if !d.push(obj) {
				return text, false
			}
			d.i++
			d.space()
			if d.i < len(d.b) && (obj && d.b[d.i] == '}' || !obj && d.b[d.i] == ']') {
				d.i++
				d.pop()
				break
			}
			if obj {
				if !d.key(&text) {
					return text, false
				}
			}
			continue
		case '"':
			_, t, ok := d.str()
			if !ok {
				return text, false
			}
			text = text && t
		case 't':
			if !d.literal("true") {
				return text, false
			}
		case 'f':
			if !d.literal("false") {
				return text, false
			}
		case 'n':
			if !d.literal("null") {
				return text, false
			}
		default:
			if !d.number() {
				return text, false
			}
		}
		// After a value: close what ends here, or go on to the next.
		for {
			if d.depth == base {
				return text, true
			}
			obj := d.top()
			c := d.next()
			switch {
			case c == ',':
				d.i++
				if obj && !d.key(&text) {
					return text, false
				}
			case obj && c == '}' || !obj && c == ']':
				d.i++
				d.pop()
				continue
			default:
				return text, false
			}
			break
		}
	}
}

// key reads an object's name and its colon, inside skip.
func (d *decoder) key(text *bool) bool {
	if d.next() != '"' {
		return false
	}
	_, t, ok := d.str()
	*text = *text && t
	if !ok || d.next() != ':' {
		return false
	}
	d.i++
	return true
}

// push opens an array or object, if the bound allows.
func (d *decoder) push(obj bool) bool {
	if d.depth >= maxDepth {
		return false
	}
	n := d.depth
	d.depth++
	word := &d.kinds
	if n >= 64 {
		for len(d.deep) < n/64 {
			d.deep = append(d.deep, 0)
		}
		word = &d.deep[n/64-1]
	}
	bit := uint64(1) << (n % 64)
	if obj {
		*word |= bit
	} else {
		*word &^= bit
	}
	return true
}

func (d *decoder) pop() { d.depth-- }

// top reports whether the innermost open container is an object.
func (d *decoder) top() bool {
	n := d.depth - 1
	word := d.kinds
	if n >= 64 {
		word = d.deep[n/64-1]
	}
	return word&(uint64(1)<<(n%64)) != 0
}

// literal reads lit (true, false or null) at d.i.
func (d *decoder) literal(lit string) bool {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// number reads a JSON number at d.i; it ends where the grammar does.
func (d *decoder) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i == len(b):
		return false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	d.i = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// str reads the string at d.i (at its opening quote). esc is whether it
// holds an escape; text whether it is valid UTF-8 once unescaped (no
// invalid byte, no unpaired surrogate half); a byte sequence that is not
// UTF-8 also marks the body.
func (d *decoder) str() (esc, text, ok bool) {
	b := d.b
	i := d.i + 1
	start := i
	text = true
	ascii := true
	for {
		if i == len(b) {
			return esc, text, false
		}
		c := b[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:i]) {
				d.badUTF8 = true
				text = false
			}
			d.i = i + 1
			return esc, text, true
		case c < 0x20:
			return esc, text, false
		case c >= utf8.RuneSelf:
			ascii = false
			i++
		case c != '\\':
			i++
		default:
			esc = true
			if i+1 == len(b) {
				return esc, text, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b[i+2:])
				if !ok {
					return esc, text, false
				}
				i += 6
				switch {
				case r >= 0xDC00 && r <= 0xDFFF: // a low half without a high one
					text = false
				case r >= 0xD800 && r <= 0xDBFF: // a high half needs a low one next
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if low, ok := hex4(b[i+2:]); ok && low >= 0xDC00 && low <= 0xDFFF {
							i += 6
							break
						}
					}
					text = false
				}
			default:
				return esc, text, false
			}
		}
	}
}

// text returns the string whose raw bytes, between its quotes, are raw, as
// encoding/json reads it: escapes resolved, and each byte that is not UTF-8
// and each unpaired surrogate half U+FFFD. raw is a valid JSON string's.
func (d *decoder) text(raw []byte, esc bool) string {
	if !esc && utf8.Valid(raw) {
		return string(raw)
	}
	out := make([]byte, 0, len(raw)+2*utf8.UTFMax)
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, _ := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					low := rune(-1)
					if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						low, _ = hex4(raw[i+2:])
					}
					if dec := utf16.DecodeRune(r, low); dec != utf8.RuneError {
						i += 6
						out = utf8.AppendRune(out, dec)
						continue
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default: // " \ /
				out = append(out, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return string(out)
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

// mustBe returns the detail of a value that is not of type t: "must be
// an integer". It is made only for a value that needs it.
func mustBe(t resourceapi.FieldType) func() string {
	return func() string { return "must be " + typeArticle(t) + t.String() }
}

// typeArticle is the indefinite article of a type's name in messages ("must be
// an integer").
func typeArticle(t resourceapi.FieldType) string {
	if t == resourceapi.TypeInt || t == resourceapi.TypeStrings {
		return "an "
	}
	return "a "
}

// notUTF8 is the detail of a parameter or string that is not valid UTF-8.
const notUTF8 = "must be valid UTF-8"
