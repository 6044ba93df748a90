package graph

import (
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
)

// parseEnvelope reads the body of a POST in the shape nearly every client
// sends: one JSON object of the members query (a string), operationName (a
// string or null), variables and extensions (objects or null), each at most
// once and named exactly so, whose strings have no escapes and whose
// variables and extensions are strings, numbers, booleans and nulls. It
// returns what encoding/json makes of such a body in fromBody (numbers as
// json.Number), in one pass and without reflection. ok is false for any
// other body, which fromBody decodes with encoding/json as before: nested
// values, escapes, other or repeated members, a name in other case, other
// types, anything malformed. body is valid UTF-8.
//
// The query is returned as its bytes in body, and p.Query left as it was:
// the caller makes it a string, or takes the text it keeps of a document
// it knows (fastPlans), which saves a copy of the document per request.
// The variables are checked and returned as their object's text in body,
// p.Variables left as it was: the caller decodes them (decodeVariables)
// unless a plan reads its one variable from the text (planVariable). nil
// for none or null.
func parseEnvelope(body []byte, p *graphql.RawParams) (query, variables []byte, ok bool) {
	s := scanner{b: body}
	if !s.byte('{') {
		return nil, nil, false
	}
	var seen [4]bool
	hasQuery := false
	if !s.byte('}') {
		for {
			name, ok := s.str()
			if !ok || !s.byte(':') {
				return nil, nil, false
			}
			var i int
			switch string(name) {
			case "query":
				i = 0
				q, ok := s.str()
				if !ok {
					return nil, nil, false
				}
				query, hasQuery = q, true
			case "operationName":
				i = 1
				if !s.null() {
					n, ok := s.str()
					if !ok {
						return nil, nil, false
					}
					p.OperationName = string(n)
				}
			case "variables":
				i = 2
				s.space()
				start := s.i
				if _, ok = s.flatObject(false); !ok {
					return nil, nil, false
				}
				variables = s.b[start:s.i]
				if string(variables) == "null" {
					variables = nil
				}
			case "extensions":
				i = 3
				if p.Extensions, ok = s.flatObject(true); !ok {
					return nil, nil, false
				}
			default:
				return nil, nil, false
			}
			if seen[i] {
				return nil, nil, false
			}
			seen[i] = true
			if s.byte(',') {
				continue
			}
			if s.byte('}') {
				break
			}
			return nil, nil, false
		}
	}
	s.space()
	if s.i != len(s.b) || !hasQuery || len(query) == 0 {
		return nil, nil, false
	}
	return query, variables, true
}

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte reads c after any white space.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// literal reads lit after any white space.
func (s *scanner) literal(lit string) bool {
	s.space()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

func (s *scanner) null() bool { return s.literal("null") }

// str reads a string without escapes or control characters, and returns
// its bytes (in b).
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	for j := s.i; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[s.i:j]
			s.i = j + 1
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// number reads a JSON number.
func (s *scanner) number() (json.Number, bool) {
	s.space()
	b, start := s.b, s.i
	j := start
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return "", false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return "", false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return "", false
		}
	}
	s.i = j
	return json.Number(b[start:j]), true
}

// decodeVariables returns the variables whose text parseEnvelope
// returned, as encoding/json decodes them (nil for none).
func decodeVariables(text []byte) map[string]any {
	if text == nil {
		return nil
	}
	s := scanner{b: text}
	m, _ := s.flatObject(true)
	return m
}

// planVariable returns the value of the variables whose text
// parseEnvelope returned when they are one member, named name, whose value
// is a string (without escapes): what decodeVariables would return as a
// map of that one string. ok is false for anything else.
func planVariable(text []byte, name string) (string, bool) {
	s := scanner{b: text}
	if !s.byte('{') {
		return "", false
	}
	n, ok := s.str()
	if !ok || string(n) != name || !s.byte(':') {
		return "", false
	}
	v, ok := s.str()
	if !ok || !s.byte('}') || s.i != len(s.b) {
		return "", false
	}
	return string(v), true
}

// flatObject reads null (a nil map) or an object whose members are
// strings, numbers, booleans or nulls; a member named twice keeps its last
// value, as encoding/json does. With keep false it only reads it, and
// returns a nil map.
func (s *scanner) flatObject(keep bool) (map[string]any, bool) {
	if s.null() {
		return nil, true
	}
	if !s.byte('{') {
		return nil, false
	}
	var m map[string]any
	if keep {
		m = map[string]any{}
	}
	if s.byte('}') {
		return m, true
	}
	for {
		name, ok := s.str()
		if !ok || !s.byte(':') {
			return nil, false
		}
		s.space()
		if s.i == len(s.b) {
			return nil, false
		}
		var v any
		switch c := s.b[s.i]; {
		case c == '"':
			str, ok := s.str()
			if !ok {
				return nil, false
			}
			if keep {
				v = string(str)
			}
		case c == 't' && s.literal("true"):
			v = true
		case c == 'f' && s.literal("false"):
			v = false
		case c == 'n' && s.null():
			v = nil
		case c == '-' || (c >= '0' && c <= '9'):
			n, ok := s.number()
			if !ok {
				return nil, false
			}
			if keep {
				v = n
			}
		default:
			return nil, false
		}
		if keep {
			m[string(name)] = v
		}
		if s.byte(',') {
			continue
		}
		if s.byte('}') {
			return m, true
		}
		return nil, false
	}
}
