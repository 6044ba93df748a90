package http

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"strconv"
	"sync"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Cursors writes and reads the cursors of list pages (after= and before=):
// a position in a list (resourceapi.Cursor) as an opaque token that clients
// cannot forge or alter. A token is base64url (no padding) of a JSON
// payload followed by the first 16 bytes of its HMAC-SHA256 under the
// server's key, which every instance shares (cmd keeps it in the database's
// settings), so that a cursor one instance made is accepted by any other.
// The payload names the resource, the sort field and direction, the sort
// value and the id: a cursor of another list, a modified one or one made
// under another key is refused with a 400, never read.
type Cursors struct {
	key []byte
	// macs are keyed HMAC states, reused: making one hashes the key twice,
	// which cost as much as signing a cursor.
	macs sync.Pool
}

// NewCursors returns the cursors of a server with key (at least 16 bytes
// of secret); with an empty key, a random one, which only this process
// knows.
func NewCursors(key []byte) *Cursors {
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	cs := &Cursors{key: bytes.Clone(key)}
	cs.macs.New = func() any { return hmac.New(sha256.New, cs.key) }
	return cs
}

// MaxCursorLength bounds the text of a cursor parameter: a sort value is
// at most a few hundred bytes.
const MaxCursorLength = 2048

const cursorMACSize = 16

// cursorPayload is what a cursor says, in short keys to keep URLs short.
type cursorPayload struct {
	Resource string          `json:"r"`
	Sort     string          `json:"s"`
	Desc     bool            `json:"d,omitempty"`
	Value    json.RawMessage `json:"v"`
	ID       int64           `json:"i"`
}

// Encode returns the token of position c in a list of res. c.Before is not
// part of it: the parameter that carries the token says the direction.
// The payload is the JSON of cursorPayload, written by hand: a list page
// signs two cursors, and encoding/json's reflection cost more than the
// signatures.
func (cs *Cursors) Encode(res *resourceapi.Resource, c resourceapi.Cursor) string {
	var buf [256]byte
	b := append(buf[:0], `{"r":`...)
	b = resourceapi.AppendJSONString(b, res.Name)
	b = append(b, `,"s":`...)
	b = resourceapi.AppendJSONString(b, c.Sort)
	if c.Desc {
		b = append(b, `,"d":true`...)
	}
	b = append(b, `,"v":`...)
	switch x := c.Value.(type) {
	case nil:
		b = append(b, "null"...)
	case time.Time:
		b = append(b, '"')
		b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	case int64:
		b = strconv.AppendInt(b, x, 10)
	case bool:
		b = strconv.AppendBool(b, x)
	case string:
		b = resourceapi.AppendJSONString(b, x) // valid UTF-8: the store holds nothing else
	default:
		v, _ := json.Marshal(x)
		b = append(b, v...)
	}
	b = append(b, `,"i":`...)
	b = strconv.AppendInt(b, c.ID, 10)
	b = append(b, '}')
	b = cs.appendMAC(b, b)
	var out [512]byte
	return string(base64.RawURLEncoding.AppendEncode(out[:0], b))
}

// appendMAC appends to b the MAC of payload.
func (cs *Cursors) appendMAC(b, payload []byte) []byte {
	m := cs.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(cursorDomain)
	m.Write(payload)
	var sum [sha256.Size]byte
	b = append(b, m.Sum(sum[:0])[:cursorMACSize]...)
	cs.macs.Put(m)
	return b
}

// cursorDomain starts every signed payload, so that the key signs nothing
// else that could pass for a cursor.
var cursorDomain = []byte("resourceapi list cursor v1\x00")

// errCursor is the detail of every cursor that is not one of this list:
// the client learns nothing of why.
const errCursor = "is not a cursor of this list; use next_cursor or prev_cursor of a page of it, unchanged"

// Decode reads a token that Encode made for res, with the same key. It
// returns "" and the position, or why s is refused. The position is only
// as valid as what it says: ParseListQuery checks it against the request's
// sort and order (resourceapi.CursorRefused).
func (cs *Cursors) Decode(res *resourceapi.Resource, s string) (resourceapi.Cursor, string) {
	if cs == nil {
		return resourceapi.Cursor{}, errCursor
	}
	if len(s) > MaxCursorLength {
		return resourceapi.Cursor{}, "must be at most " + strconv.Itoa(MaxCursorLength) + " characters"
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) <= cursorMACSize {
		return resourceapi.Cursor{}, errCursor
	}
	payload, sum := b[:len(b)-cursorMACSize], b[len(b)-cursorMACSize:]
	var mac [cursorMACSize]byte
	if !hmac.Equal(sum, cs.appendMAC(mac[:0], payload)) {
		return resourceapi.Cursor{}, errCursor
	}
	// Past here the payload is one this server wrote; it is still read
	// with care, as the key may have been shared with an older version.
	var p cursorPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Resource != res.Name {
		return resourceapi.Cursor{}, errCursor
	}
	f := res.Field(p.Sort)
	if f == nil || !f.Sortable {
		return resourceapi.Cursor{}, errCursor
	}
	c := resourceapi.Cursor{Sort: p.Sort, Desc: p.Desc, ID: p.ID}
	if string(p.Value) != "null" {
		var ok bool
		if c.Value, ok = cursorValue(f, p.Value); !ok {
			return resourceapi.Cursor{}, errCursor
		}
	}
	return c, ""
}

// cursorValue reads the sort value of a cursor as a value of f's type.
func cursorValue(f *resourceapi.Field, raw json.RawMessage) (any, bool) {
	switch f.Type {
	case resourceapi.TypeInt:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return n, err == nil
	case resourceapi.TypeBool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err == nil
	case resourceapi.TypeString:
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil
	case resourceapi.TypeTime:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	return nil, false
}
