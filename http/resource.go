package http

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/resourceapi/resourceapi"
)

// resourceHandlers serves one resource, whatever it is: everything specific
// to users (or products, or orders) is in its declaration, so a new resource
// needs no handler code.
//
// Every rule (who may do what, validation, secrets) is the rule layer's
// (resourceapi.Service): a handler reads the request into a caller, an item
// and a record, calls the service, and writes what it returns.
type resourceHandlers struct {
	s    *Server
	res  *resourceapi.Resource
	view *view
	// notFound is the error of an id that names no record.
	notFound error
}

func (s *Server) resource(res *resourceapi.Resource) *resourceHandlers {
	return &resourceHandlers{s: s, res: res, view: newView(res), notFound: resourceapi.ErrNotFound(res)}
}

// caller returns the caller that authentication put in the request.
func caller(r *http.Request) *resourceapi.Caller { return resourceapi.CallerFrom(r.Context()) }

// handle adapts a handler that returns its error, so that every failure takes
// the one path to the client, s.writeError.
func (s *Server) handle(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// pathID reads {id}: the canonical decimal form (no sign, no leading zeros)
// of an integer from 1 to resourceapi.MaxID. Anything else cannot name a record, so it is
// 404 like an id that names none, not 400: /users/abc is a URL of nothing,
// just as /users/0 is.
func (h *resourceHandlers) pathID(r *http.Request) (int64, error) {
	id, ok := parseID(r.PathValue("id"))
	if !ok {
		return 0, h.notFound
	}
	return id, nil
}

// pathParent reads {parent} on a nested path, 0 elsewhere. A parent id that
// is not an id is a parent that does not exist: 404.
func (h *resourceHandlers) pathParent(r *http.Request) (int64, error) {
	s := r.PathValue("parent")
	if s == "" {
		return 0, nil
	}
	id, ok := parseID(s)
	if !ok {
		return 0, resourceapi.ErrNotFound(h.res.ParentResource())
	}
	return id, nil
}

// item reads the record a request addresses: {id}, and {parent} on a nested
// path.
func (h *resourceHandlers) item(r *http.Request) (resourceapi.Address, error) {
	parent, err := h.pathParent(r)
	if err != nil {
		return resourceapi.Address{}, err
	}
	id, err := h.pathID(r)
	return resourceapi.Address{ID: id, Parent: parent}, err
}

// parseID accepts the canonical decimal form of an id, 1 to
// resourceapi.MaxID.
func parseID(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 16 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id > resourceapi.MaxID {
		return 0, false
	}
	return id, true
}

// list serves GET on the collection: one page, filtered, searched and sorted
// as the query asks, in the envelope {data, pagination}.
func (h *resourceHandlers) list() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		parent, err := h.pathParent(r)
		if err != nil {
			return err
		}
		params := r.URL.Query()
		q, err := h.s.cursors.ParseListQuery(h.res, params)
		if err != nil {
			return err
		}
		page, err := h.s.service.List(r.Context(), caller(r), h.res, parent, q)
		if err != nil {
			return err
		}
		buf := getBuffer()
		defer putBuffer(buf)
		b := append(*buf, `{"data":[`...)
		for i, rec := range page.Records {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = h.view.appendRecord(b, rec, q.Fields); err != nil {
				*buf = b
				return err
			}
		}
		// A cursor page has no number; a list without its total has no
		// count of pages either.
		b = append(b, `],"pagination":{`...)
		if q.Cursor == nil {
			b = append(b, `"page":`...)
			b = strconv.AppendInt(b, int64(q.Page()), 10)
			b = append(b, ',')
		}
		b = append(b, `"limit":`...)
		b = strconv.AppendInt(b, int64(q.Limit), 10)
		if !q.NoTotal {
			b = append(b, `,"total":`...)
			b = strconv.AppendInt(b, int64(page.Total), 10)
			if q.Cursor == nil {
				b = append(b, `,"pages":`...)
				b = strconv.AppendInt(b, int64(page.Pages(q.Limit)), 10)
			}
		}
		links := h.linksOf(q, page)
		b = append(b, `,"next_cursor":`...)
		b = appendCursor(b, links.next)
		b = append(b, `,"prev_cursor":`...)
		b = appendCursor(b, links.prev)
		b = append(b, `}}`...)
		*buf = b
		h.s.setLinks(w, r, params, q, page, links)
		// A collection has no single modification time, so its validator is
		// the hash of exactly what was sent.
		writeCacheable(w, r, b, b, time.Time{})
		return nil
	})
}

// get serves GET on one record, with only the requested fields if asked.
func (h *resourceHandlers) get() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		item, err := h.item(r)
		if err != nil {
			return err
		}
		var fields []string
		if r.URL.RawQuery != "" {
			if fields, err = ParseFields(h.res, r.URL.Query()); err != nil {
				return err
			}
		}
		rec, memo, err := h.s.service.GetMemo(r.Context(), caller(r), h.res, item)
		if err != nil {
			return err
		}
		if memo != nil && fields == nil {
			return h.writeMemo(w, r, rec, memo)
		}
		return h.writeRecord(w, r, http.StatusOK, rec, fields)
	})
}

// rendered is a record's full rendering and its validators as a GET sends
// them, kept in the record's memo (resourceapi.Memo) under the view that
// rendered it: a GET of a record the store shares renders it once, and
// every later GET of the same record sends the same bytes. The store drops
// the memo with the record, so it is never older than what the record
// cache answers.
type rendered struct {
	body []byte
	// vals are ETag, Last-Modified (up to lm) and Content-Length, one
	// after the other, as writeCacheable makes them.
	vals     string
	lm       int
	modified time.Time
}

// writeMemo sends the 200 of a GET of rec, which came with memo: from the
// rendering the memo holds, or rendered now and kept there.
func (h *resourceHandlers) writeMemo(w http.ResponseWriter, r *http.Request, rec resourceapi.Record, memo *resourceapi.Memo) error {
	out, _ := memo.Load(h.view).(*rendered)
	if out == nil {
		buf := getBuffer()
		defer putBuffer(buf)
		body, err := h.view.appendRecord(*buf, rec, nil)
		*buf = body
		if err != nil {
			return err
		}
		out = &rendered{modified: updatedAt(rec)}
		// One allocation for the body and its validators.
		b := make([]byte, 0, len(body)+cacheableLen)
		b = append(b, body...)
		b, out.lm = appendValidators(b, body, out.modified, len(body))
		out.body = b[:len(body):len(body)]
		out.vals = unsafe.String(&b[len(body)], len(b)-len(body)) // never written again
		out.lm -= len(body)
		memo.Store(h.view, out)
	}
	sendCacheable(w, r, out.body, out.vals, out.lm, out.modified)
	return nil
}

// create serves POST on the collection: 201 with the new record and its
// Location. With an Idempotency-Key, the record is created once per key.
func (h *resourceHandlers) create() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		parent, err := h.pathParent(r)
		if err != nil {
			return err
		}
		render := func(w http.ResponseWriter, out resourceapi.Record) error {
			// Built from the request's own path, so the version prefix it
			// had (/api/v2/users) is kept.
			w.Header().Set("Location", r.URL.Path+"/"+strconv.FormatInt(out.ID(), 10))
			return h.writeRecord(w, r, http.StatusCreated, out, nil)
		}
		rec, ctx, err := h.decode(w, r, 0, render)
		if err != nil {
			return err
		}
		out, err := h.s.service.Create(ctx, caller(r), h.res, parent, rec)
		if err != nil {
			_, err = replay(w, err)
			return err
		}
		return render(w, out)
	})
}

// replace serves PUT on a record: it replaces the record, or creates it with
// that id (201 with Location) when there is none.
func (h *resourceHandlers) replace() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		item, rec, _, err := h.decodeItem(w, r, true, nil)
		if err != nil {
			return err
		}
		out, created, err := h.s.service.Replace(r.Context(), caller(r), h.res, item, rec, h.view.writeCondition(r))
		if err != nil {
			return err
		}
		if created {
			w.Header().Set("Location", r.URL.Path)
			return h.writeRecord(w, r, http.StatusCreated, out, nil)
		}
		return h.writeRecord(w, r, http.StatusOK, out, nil)
	})
}

// decodeItem reads the record's id and the body of a write to it (PUT or
// PATCH); a PUT's body may not name another id. render is as for decode.
func (h *resourceHandlers) decodeItem(w http.ResponseWriter, r *http.Request, put bool, render func(http.ResponseWriter, resourceapi.Record) error) (resourceapi.Address, resourceapi.Record, context.Context, error) {
	item, err := h.item(r)
	if err != nil {
		return item, nil, nil, err
	}
	bodyID := int64(0)
	if put {
		bodyID = item.ID
	}
	rec, ctx, err := h.decode(w, r, bodyID, render)
	return item, rec, ctx, err
}

// update serves PATCH on a record: only the fields sent change. With an
// Idempotency-Key, the change is made once per key.
func (h *resourceHandlers) update() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		render := func(w http.ResponseWriter, out resourceapi.Record) error {
			return h.writeRecord(w, r, http.StatusOK, out, nil)
		}
		item, patch, ctx, err := h.decodeItem(w, r, false, render)
		if err != nil {
			return err
		}
		out, err := h.s.service.Update(ctx, caller(r), h.res, item, patch, h.view.writeCondition(r))
		if err != nil {
			_, err = replay(w, err)
			return err
		}
		return render(w, out)
	})
}

// remove serves DELETE on a record: 204, no body.
func (h *resourceHandlers) remove() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		item, err := h.item(r)
		if err != nil {
			return err
		}
		if err := h.s.service.Delete(r.Context(), caller(r), h.res, item, h.view.writeCondition(r)); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

// decode reads the JSON body of a write into a record; the rule layer
// validates it. pathID, when not 0, is the id a PUT body may not contradict.
// With render (POST and PATCH), a request's Idempotency-Key is read first,
// and the context returned carries its resourceapi.Idempotency, whose
// response is what render writes for the record stored; otherwise, and
// without a key, it is the request's.
func (h *resourceHandlers) decode(w http.ResponseWriter, r *http.Request, pathID int64, render func(http.ResponseWriter, resourceapi.Record) error) (resourceapi.Record, context.Context, error) {
	key := ""
	if render != nil {
		var err error
		if key, err = ParseIdempotencyKey(r.Header); err != nil {
			return nil, nil, err
		}
	}
	body, err := h.s.readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	defer putBuffer(body) // DecodeRecord copies what it keeps
	rec, err := DecodeRecord(h.res, *body, pathID)
	if err != nil {
		return nil, nil, err
	}
	ctx := r.Context()
	if key != "" {
		ctx = resourceapi.WithIdempotency(ctx, idempotency(r, key, *body, render))
	}
	return rec, ctx, nil
}

// writeRecord sends one record (only fields, when not nil) with its
// validators. The ETag is always that of the full record, so it can be used
// in If-Match whatever fields the client asked for.
func (h *resourceHandlers) writeRecord(w http.ResponseWriter, r *http.Request, status int, rec resourceapi.Record, fields []string) error {
	buf := getBuffer()
	defer putBuffer(buf)
	full, err := h.view.appendRecord(*buf, rec, nil)
	*buf = full
	if err != nil {
		return err
	}
	body := full
	if fields != nil {
		b, err := h.view.appendRecord(full, rec, fields)
		*buf = b
		if err != nil {
			return err
		}
		body = b[len(full):]
	}
	if status == http.StatusOK && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeCacheable(w, r, body, full, updatedAt(rec))
		return nil
	}
	tag := etagOf(full)
	if status == http.StatusCreated && len(h.view.once) > 0 {
		// return=minimal is not honoured here: the secret is shown only
		// in this response, and would be lost.
		// The tag stays that of the stored representation, without the
		// secret, so that the client can update with it.
		body = h.view.appendOnce(body, rec)
		*buf = body
		w.Header()["Cache-Control"] = noStore
	}
	hd := w.Header()
	hd.Set("ETag", tag)
	if lm := updatedAt(rec); !lm.IsZero() {
		hd.Set("Last-Modified", lm.UTC().Format(http.TimeFormat))
	}
	if !(status == http.StatusCreated && len(h.view.once) > 0) && preferMinimal(r) {
		// RFC 7240: no body; the validators and Location still say
		// what was stored and where.
		hd["Preference-Applied"] = []string{"return=minimal"}
		if status == http.StatusOK {
			status = http.StatusNoContent
		} else {
			hd["Content-Length"] = []string{"0"}
		}
		w.WriteHeader(status)
		return nil
	}
	writeJSON(w, status, body)
	return nil
}

// preferMinimal reports whether a write asks for no representation in its
// response (RFC 7240 "Prefer: return=minimal"); return=representation, the
// default, and any other preference leave the response as it is.
func preferMinimal(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(v, ",") {
			pref, _, _ = strings.Cut(pref, ";") // parameters of the preference
			name, value, _ := strings.Cut(strings.TrimSpace(pref), "=")
			if strings.EqualFold(strings.TrimSpace(name), "return") {
				// The first return preference counts.
				switch strings.Trim(strings.TrimSpace(value), `"`) {
				case "minimal":
					return true
				case "representation":
					return false
				}
			}
		}
	}
	return false
}

// cacheableLen is the room writeCacheable needs for an entity tag, a
// Last-Modified date and a Content-Length.
const cacheableLen = etagLen + len(http.TimeFormat) + 20

// writeCacheable sends the 200 response of a GET (or HEAD) with its
// validators, or 304 when the client's copy is current. Its entity tag is
// that of tagged, the full representation (body itself, or a record's full
// rendering when body has only some of its fields). The 304 declares the
// length of the 200 it stands for, so that the compressor gives it the tag
// that 200 would have had (see compressWriter.notModified); the length itself
// is not sent.
func writeCacheable(w http.ResponseWriter, r *http.Request, body, tagged []byte, modified time.Time) {
	// ETag, Last-Modified and Content-Length are one string, and their
	// values live in the request's shared state (requestInfo.vals): one
	// allocation instead of six on every GET of a record.
	info := infoFrom(r)
	var buf [cacheableLen]byte
	b, lm := appendValidators(buf[:0], tagged, modified, len(body))
	var all string
	if !info.cacheBufUsed && len(b) <= len(info.cacheBuf) {
		// The request's own bytes, written once and never again (the
		// header map holds strings over them until the response is
		// sent): no allocation.
		info.cacheBufUsed = true
		n := copy(info.cacheBuf[:], b)
		all = unsafe.String(&info.cacheBuf[0], n)
	} else {
		all = string(b)
	}
	sendCacheable(w, r, body, all, lm, modified)
}

// appendValidators appends to b the values of ETag (the tag of tagged),
// Last-Modified (none for the zero time) and Content-Length (n), one after
// the other, and returns where Last-Modified ends.
func appendValidators(b, tagged []byte, modified time.Time, n int) ([]byte, int) {
	b = appendETag(b, tagged)
	if !modified.IsZero() {
		b = appendHTTPDate(b, modified)
	}
	lm := len(b)
	return strconv.AppendInt(b, int64(n), 10), lm
}

// sendCacheable is writeCacheable with the validators made: all holds
// appendValidators' values, Last-Modified's ending at lm.
func sendCacheable(w http.ResponseWriter, r *http.Request, body []byte, all string, lm int, modified time.Time) {
	h := w.Header()
	// Each header gets a slice of its own capacity, so that adding a value
	// to one (Header.Add) cannot overwrite another.
	vals := infoFrom(r).vals[1:4]
	tag := all[:etagLen]
	vals[0] = tag
	h["Etag"] = vals[0:1:1] // the canonical form of ETag, set without canonicalizing
	h["Cache-Control"] = cacheRevalidate
	if lm > etagLen {
		vals[1] = all[etagLen:lm]
		h["Last-Modified"] = vals[1:2:2]
	}
	vals[2] = all[lm:]
	h["Content-Length"] = vals[2:3:3]
	if notModified(r, tag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = contentTypeJSON
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// endSessions ends every session of the user in the path (DELETE
// /api/users/{id}/sessions): 204, or what Service.EndSessions refuses.
func (s *Server) endSessions() http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, ok := parseID(r.PathValue("id"))
		if !ok {
			return resourceapi.ErrNotFound(resourceapi.Users)
		}
		if err := s.service.EndSessions(r.Context(), caller(r), id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}
