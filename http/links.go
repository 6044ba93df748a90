package http

import (
	"net/http"
	"net/url"
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
// changed, so filters, sort, search, limit and fields carry over. A list
// read without page= links by cursor.
func (s *Server) setLinks(w http.ResponseWriter, r *http.Request, q resourceapi.ListQuery, page resourceapi.Page, l pageLinks) {
	params := r.URL.Query()
	_, paged := params["page"]
	delete(params, "page")
	delete(params, "after")
	delete(params, "before")
	base := s.origin(r) + r.URL.EscapedPath()
	link := func(set func(url.Values)) string {
		v := url.Values{}
		for k, vs := range params {
			v[k] = vs
		}
		if set != nil {
			set(v)
		}
		if len(v) == 0 {
			return base
		}
		return base + "?" + v.Encode()
	}
	var out []string
	add := func(rel, u string) { out = append(out, "<"+u+`>; rel="`+rel+`"`) }
	if paged {
		n := q.Page()
		setPage := func(p int) func(url.Values) {
			return func(v url.Values) { v.Set("page", strconv.Itoa(p)) }
		}
		add("first", link(setPage(1)))
		if n > 1 {
			add("prev", link(setPage(n-1)))
		}
		if page.More {
			add("next", link(setPage(n+1)))
		}
		if pages := page.Pages(q.Limit); pages > 0 {
			add("last", link(setPage(pages)))
		}
	} else {
		add("first", link(nil))
		if l.prev != "" {
			add("prev", link(func(v url.Values) { v.Set("before", l.prev) }))
		}
		if l.next != "" {
			add("next", link(func(v url.Values) { v.Set("after", l.next) }))
		}
	}
	w.Header()["Link"] = []string{strings.Join(out, ", ")}
}

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
