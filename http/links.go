package http

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/resourceapi/resourceapi"
)

// pageLinks are the neighbours of one list page: cursors for the envelope
// and the RFC 8288 Link header.
type pageLinks struct {
	next, prev string // cursors, "" when there is none
}

// linksOf returns the cursors of the pages beside page, which q read. A
// page read forwards (from the start, a page number or after=) has a next
// page when the store found more, and a previous one when it did not start
// the list; a page read backwards (before=) the opposite. An empty page
// after (before) a cursor points back (on) at the same position.
func (h *resourceHandlers) linksOf(q resourceapi.ListQuery, page resourceapi.Page) pageLinks {
	var l pageLinks
	recs := page.Records
	cs := h.s.cursors
	before := q.Cursor != nil && q.Cursor.Before
	if len(recs) == 0 {
		if q.Cursor != nil {
			tok := cs.Encode(h.res, *q.Cursor)
			if before {
				l.next = tok
			} else {
				l.prev = tok
			}
		}
		return l
	}
	if before || page.More {
		l.next = cs.Encode(h.res, q.CursorOf(recs[len(recs)-1], false))
	}
	if (before && page.More) || (!before && (q.Cursor != nil || q.Offset > 0)) {
		l.prev = cs.Encode(h.res, q.CursorOf(recs[0], true))
	}
	return l
}

// appendCursor appends a cursor to an envelope: a JSON string, or null.
func appendCursor(b []byte, tok string) []byte {
	if tok == "" {
		return append(b, "null"...)
	}
	// Tokens are base64url: nothing to escape.
	b = append(b, '"')
	b = append(b, tok...)
	return append(b, '"')
}

// setLinks sets the Link header (RFC 8288) of a list page: first, prev
// and next, and last for a page-numbered list (page=) whose total is
// known. Each is the absolute URL of the request with only its position
// changed, so filters, sort, search, limit and fields carry over; params
// are the request's query parameters. A list read without page= links by
// cursor.
//
// The query of each link is what url.Values.Encode would make of params
// with the position set (keys sorted, values escaped), but the other
// parameters are escaped once for all the links, and the header is one
// string built in place.
func (s *Server) setLinks(w http.ResponseWriter, r *http.Request, params url.Values, q resourceapi.ListQuery, page resourceapi.Page, l pageLinks) {
	_, paged := params["page"]
	// The other parameters, sorted, each with all its values escaped:
	// "k=v1&k=v2".
	var others [8]linkParam
	kept := others[:0]
	for k, vs := range params {
		if k == "page" || k == "after" || k == "before" {
			continue
		}
		var enc strings.Builder
		ek := url.QueryEscape(k)
		for i, v := range vs {
			if i > 0 {
				enc.WriteByte('&')
			}
			enc.WriteString(ek)
			enc.WriteByte('=')
			enc.WriteString(url.QueryEscape(v))
		}
		kept = append(kept, linkParam{k, enc.String()})
	}
	slices.SortFunc(kept, func(a, b linkParam) int { return strings.Compare(a.key, b.key) })
	origin, path := s.origin(r), r.URL.EscapedPath()
	var b strings.Builder
	b.Grow(4 * (len(origin) + len(path) + 64))
	// add adds the link rel to the request with name=value in its place
	// (no parameter when name is ""). Names and values need no escaping:
	// page numbers and cursors (base64url).
	add := func(rel, name, value string) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('<')
		b.WriteString(origin)
		b.WriteString(path)
		sep := byte('?')
		put := func(pair ...string) {
			b.WriteByte(sep)
			sep = '&'
			for _, p := range pair {
				b.WriteString(p)
			}
		}
		for _, p := range kept {
			if name != "" && name < p.key {
				put(name, "=", value)
				name = ""
			}
			put(p.enc)
		}
		if name != "" {
			put(name, "=", value)
		}
		b.WriteString(`>; rel="`)
		b.WriteString(rel)
		b.WriteByte('"')
	}
	if paged {
		n := q.Page()
		add("first", "page", "1")
		if n > 1 {
			add("prev", "page", strconv.Itoa(n-1))
		}
		if page.More {
			add("next", "page", strconv.Itoa(n+1))
		}
		if pages := page.Pages(q.Limit); pages > 0 {
			add("last", "page", strconv.Itoa(pages))
		}
	} else {
		add("first", "", "")
		if l.prev != "" {
			add("prev", "before", l.prev)
		}
		if l.next != "" {
			add("next", "after", l.next)
		}
	}
	w.Header()["Link"] = []string{b.String()}
}

// linkParam is a query parameter of the links: its name, and its values
// escaped.
type linkParam struct{ key, enc string }

// origin returns the scheme and host the client reached the server at:
// https when the connection is TLS or a trusted proxy says it was
// (X-Forwarded-Proto), and the Host header when it is a plain host name or
// address, so that a hostile Host cannot shape the URLs.
func (s *Server) origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	} else if p := r.Header.Get("X-Forwarded-Proto"); p == "https" && s.fromTrustedProxy(r) {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	peer := remoteAddr(r)
	for _, p := range s.trustedProxies {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

// validHost accepts host[:port] made of the characters of a DNS name, an
// IPv4 address or a bracketed IPv6 address.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return false
		}
	}
	return true
}
