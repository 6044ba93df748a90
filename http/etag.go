package http

import (
	"hash/crc32"
	"net/http"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Entity tags are strong: If-Match compares strongly, and a weak tag there
// would never match, so clients could not update conditionally. A tag is a
// hash of the full rendered representation, so it changes exactly when what
// a client sees changes, and is the same on every instance and after a
// restart.

// castagnoli is the CRC-32C table; crc32 computes it with SSE4.2 or ARMv8
// CRC instructions where the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// etagOf returns the strong entity tag of a rendered body: two independent
// 32-bit CRCs of it (IEEE and Castagnoli), 16 hex digits in quotes. Both are
// hardware-accelerated, an order of magnitude faster than a byte-at-a-time
// hash on a page of records, and fixed by their standards, so every instance
// and every release computes the same tag for the same bytes. A CRC is no
// defence against someone crafting collisions, but a tag only has to change
// when a representation does, and CRCs catch every change of up to 32
// consecutive bits.
func etagOf(body []byte) string {
	var tag [etagLen]byte
	return string(appendETag(tag[:0], body))
}

// etagLen is the length of an entity tag: 16 hex digits in quotes.
const etagLen = 18

// appendETag appends etagOf(body) to b.
func appendETag(b, body []byte) []byte {
	h := uint64(crc32.ChecksumIEEE(body))<<32 | uint64(crc32.Checksum(body, castagnoli))
	var tag [etagLen]byte
	tag[0], tag[etagLen-1] = '"', '"'
	for i := etagLen - 2; i >= 1; i-- {
		tag[i] = hexDigits[h&0xf]
		h >>= 4
	}
	return append(b, tag[:]...)
}

// etag returns the entity tag of a record: the hash of its full rendering,
// with every visible field, whatever fields a request selects. It is the one
// definition used both for the ETag header and for If-Match, so a client may
// GET with fields and still update with the tag it got.
func (v *view) etag(rec resourceapi.Record) (string, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	b, err := v.appendRecord(*buf, rec, nil)
	*buf = b
	if err != nil {
		return "", err
	}
	return etagOf(b), nil
}

// updatedAt returns the record's modification time, the zero time when it
// has none. Every resource declares updated_at (resourceapi.NewResource
// insists).
func updatedAt(rec resourceapi.Record) time.Time {
	t, _ := rec["updated_at"].(time.Time)
	return t
}

// Suffixes the compressor adds to the tag of a compressed response, so that
// the compressed and identity variants have different strong tags (as RFC
// 9110 requires of different representations) while comparisons, which strip
// them, treat both as the same version of the resource.
var codingSuffixes = [...]string{"-gzip", "-deflate"}

// withCodingSuffix returns tag (strong or weak) with suffix added inside its
// quotes; anything that is not a tag is returned unchanged.
func withCodingSuffix(tag, suffix string) string {
	if len(tag) < 2 || tag[len(tag)-1] != '"' {
		return tag
	}
	return tag[:len(tag)-1] + suffix + `"`
}

// opaqueTag strips a tag's quotes and coding suffix, returning its opaque part
// and whether it was weak; ok is false for anything that is not a quoted tag.
func opaqueTag(tag string) (opaque string, weak, ok bool) {
	if strings.HasPrefix(tag, "W/") {
		tag, weak = tag[2:], true
	}
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return "", false, false
	}
	tag = tag[1 : len(tag)-1]
	for _, s := range codingSuffixes {
		if t, ok := strings.CutSuffix(tag, s); ok {
			return t, weak, true
		}
	}
	return tag, weak, true
}

// matchTags reports whether the entity-tag list in header (the values of an
// If-Match or If-None-Match header) matches current. "*" matches any current
// representation. strong comparison (If-Match) never matches a weak tag; weak
// comparison (If-None-Match) ignores weakness.
func matchTags(header []string, current string, strong bool) bool {
	cur, _, ok := opaqueTag(current)
	if !ok {
		return false
	}
	for _, line := range header {
		for rest := line; rest != ""; {
			var tag string
			tag, rest = nextTag(rest)
			if tag == "*" {
				return true
			}
			opaque, weak, ok := opaqueTag(tag)
			if ok && opaque == cur && !(strong && weak) {
				return true
			}
		}
	}
	return false
}

// nextTag splits the first entity tag (or "*") off a comma-separated list.
// Quoted tags may contain commas, so the list is scanned, not split.
func nextTag(s string) (tag, rest string) {
	s = strings.TrimLeft(s, " \t,")
	if s == "" {
		return "", ""
	}
	start := 0
	if strings.HasPrefix(s, "W/") {
		start = 2
	}
	if start < len(s) && s[start] == '"' {
		if end := strings.IndexByte(s[start+1:], '"'); end >= 0 {
			n := start + 1 + end + 1
			return s[:n], s[n:]
		}
		return s, "" // unterminated: take the rest as one (non-matching) tag
	}
	if i := strings.IndexByte(s, ','); i >= 0 {
		return strings.TrimSpace(s[:i]), s[i+1:]
	}
	return strings.TrimSpace(s), ""
}

// notModified evaluates the conditional headers of a GET or HEAD (RFC 9110
// section 13.2.2): If-None-Match when present, else If-Modified-Since, which
// only single records answer (modified is zero for a collection).
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header["If-None-Match"]; len(inm) > 0 {
		return matchTags(inm, etag, false)
	}
	if modified.IsZero() {
		return false
	}
	ims := headerValue(r.Header, "If-Modified-Since")
	if ims == "" {
		return false
	}
	t, err := http.ParseTime(ims)
	// HTTP dates have whole seconds, so the stored time is compared at that
	// precision: a record changed later within the same second still counts
	// as unmodified, which is the protocol's known limit.
	return err == nil && !modified.Truncate(time.Second).After(t)
}

// writeCondition turns the conditional headers of a PUT, PATCH or DELETE into
// a precondition that the store checks inside its write transaction, against
// the record as it is then, so that two clients cannot both win a race on the
// same version. It returns nil when the request has none.
func (v *view) writeCondition(r *http.Request) resourceapi.Condition {
	ifMatch := r.Header.Values("If-Match")
	ifNoneMatch := r.Header.Values("If-None-Match")
	var unmodifiedSince time.Time
	if len(ifMatch) == 0 {
		// If-Unmodified-Since is ignored when If-Match is present, and when
		// it is not a valid date (RFC 9110 section 13.1.4).
		if t, err := http.ParseTime(r.Header.Get("If-Unmodified-Since")); err == nil {
			unmodifiedSince = t
		}
	}
	if len(ifMatch) == 0 && len(ifNoneMatch) == 0 && unmodifiedSince.IsZero() {
		return nil
	}
	return func(current resourceapi.Record) error {
		var tag string
		if current != nil && (len(ifMatch) > 0 || len(ifNoneMatch) > 0) {
			var err error
			if tag, err = v.etag(current); err != nil {
				return err
			}
		}
		switch {
		case len(ifMatch) > 0 && current == nil:
			return resourceapi.Errorf(resourceapi.CodePreconditionFailed,
				"If-Match was given but the %s does not exist", v.res.Singular)
		case len(ifMatch) > 0 && !matchTags(ifMatch, tag, true):
			return resourceapi.Errorf(resourceapi.CodePreconditionFailed,
				"The %s has changed: If-Match does not match its current ETag; fetch it again and retry", v.res.Singular)
		case !unmodifiedSince.IsZero() && current != nil && updatedAt(current).Truncate(time.Second).After(unmodifiedSince):
			return resourceapi.Errorf(resourceapi.CodePreconditionFailed,
				"The %s has been modified since If-Unmodified-Since", v.res.Singular)
		case len(ifNoneMatch) > 0 && current != nil && matchTags(ifNoneMatch, tag, false):
			return resourceapi.Errorf(resourceapi.CodePreconditionFailed,
				"If-None-Match matches the current %s", v.res.Singular)
		}
		return nil
	}
}

// appendHTTPDate appends t as an HTTP date (RFC 9110 section 5.6.7, the
// IMF-fixdate), byte for byte what t.UTC().AppendFormat(b, http.TimeFormat)
// appends, without interpreting the layout: Last-Modified is on every GET of
// a record, where the layout's interpretation cost more than a rendering of
// the record's fields.
func appendHTTPDate(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, http.TimeFormat)
	}
	hour, min, sec := t.Clock()
	b = append(b, httpWeekdays[3*t.Weekday():3*t.Weekday()+3]...)
	b = append(b, ',', ' ')
	b = append2(b, day)
	b = append(b, ' ')
	b = append(b, httpMonths[3*(month-1):3*month]...)
	b = append(b, ' ')
	b = append2(b, year/100)
	b = append2(b, year%100)
	b = append(b, ' ')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, min)
	b = append(b, ':')
	b = append2(b, sec)
	return append(b, " GMT"...)
}

const (
	httpWeekdays = "SunMonTueWedThuFriSat"
	httpMonths   = "JanFebMarAprMayJunJulAugSepOctNovDec"
)
