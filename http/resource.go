package http

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/resourceapi/resourceapi"
)

// resourceHandlers serves one resource, whatever it is: everything specific
// to users (or products, or orders) is in its declaration, so a new resource
// needs no handler code.
type resourceHandlers struct {
	s    *Server
	res  *resourceapi.Resource
	view *view
	// perms are the permissions of each action, built once rather than per
	// request.
	perms map[resourceapi.Action]resourceapi.Permission
	// notFound is the error of an id that names no record.
	notFound error
}

func (s *Server) resource(res *resourceapi.Resource) *resourceHandlers {
	h := &resourceHandlers{s: s, res: res, view: newView(res), perms: map[resourceapi.Action]resourceapi.Permission{}}
	for _, a := range []resourceapi.Action{resourceapi.ActionRead, resourceapi.ActionWrite, resourceapi.ActionDelete} {
		h.perms[a] = resourceapi.PermissionFor(res.Name, a)
	}
	h.notFound = resourceapi.Errorf(resourceapi.CodeNotFound, "%s not found", capitalize(res.Singular))
	return h
}

// handle adapts a handler that returns its error, so that every failure takes
// the one path to the client, s.writeError.
func (s *Server) handle(f func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// permit returns the caller when it may perform action on the resource.
func (h *resourceHandlers) permit(r *http.Request, action resourceapi.Action) (*resourceapi.Caller, error) {
	caller := resourceapi.CallerFrom(r.Context())
	if caller == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeUnauthenticated, "Authentication required")
	}
	if p := h.perms[action]; !caller.Can(p) {
		return nil, resourceapi.Errorf(resourceapi.CodeForbidden, "Permission denied: %s", p)
	}
	return caller, nil
}

// pathID reads {id}: the canonical decimal form (no sign, no leading zeros)
// of an integer from 1 to resourceapi.MaxID. Anything else cannot name a record, so it is
// 404 like an id that names none, not 400: /users/abc is a URL of nothing,
// just as /users/0 is.
func (h *resourceHandlers) pathID(r *http.Request) (int64, error) {
	s := r.PathValue("id")
	if len(s) == 0 || len(s) > 16 || s[0] == '0' {
		return 0, h.notFound
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, h.notFound
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id > resourceapi.MaxID {
		return 0, h.notFound
	}
	return id, nil
}

// list serves GET on the collection: one page, filtered, searched and sorted
// as the query asks, in the envelope {data, pagination}.
func (h *resourceHandlers) list() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := h.permit(r, resourceapi.ActionRead); err != nil {
			return err
		}
		q, err := resourceapi.ParseListQuery(h.res, r.URL.Query())
		if err != nil {
			return err
		}
		page, err := h.s.store.List(r.Context(), h.res, q)
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
		b = append(b, `],"pagination":{"page":`...)
		b = strconv.AppendInt(b, int64(q.Page), 10)
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(q.Limit), 10)
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, int64(page.Total), 10)
		b = append(b, `,"pages":`...)
		b = strconv.AppendInt(b, int64(page.Pages(q.Limit)), 10)
		b = append(b, `}}`...)
		*buf = b
		// A collection has no single modification time, so its validator is
		// the hash of exactly what was sent.
		writeCacheable(w, r, b, etagOf(b), time.Time{})
		return nil
	})
}

// get serves GET on one record, with only the requested fields if asked.
func (h *resourceHandlers) get() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := h.permit(r, resourceapi.ActionRead); err != nil {
			return err
		}
		id, err := h.pathID(r)
		if err != nil {
			return err
		}
		var fields []string
		if r.URL.RawQuery != "" {
			if fields, err = resourceapi.ParseFields(h.res, r.URL.Query()); err != nil {
				return err
			}
		}
		rec, err := h.s.store.Get(r.Context(), h.res, id)
		if err != nil {
			return err
		}
		return h.writeRecord(w, r, http.StatusOK, rec, fields)
	})
}

// create serves POST on the collection: 201 with the new record and its
// Location.
func (h *resourceHandlers) create() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		caller, err := h.permit(r, resourceapi.ActionWrite)
		if err != nil {
			return err
		}
		rec, err := h.decode(w, r, caller, resourceapi.ModeCreate, 0)
		if err != nil {
			return err
		}
		out, err := h.s.store.Create(r.Context(), h.res, rec)
		if err != nil {
			return err
		}
		// Built from the request's own path, so the version prefix it had
		// (/api/v2/users) is kept.
		w.Header().Set("Location", r.URL.Path+"/"+strconv.FormatInt(out.ID(), 10))
		return h.writeRecord(w, r, http.StatusCreated, out, nil)
	})
}

// replace serves PUT on a record: it replaces the record, or creates it with
// that id (201 with Location) when there is none.
func (h *resourceHandlers) replace() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, rec, err := h.decodeItem(w, r, resourceapi.ModeReplace)
		if err != nil {
			return err
		}
		out, created, err := h.s.store.Replace(r.Context(), h.res, id, rec, h.view.writeCondition(r))
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

// decodeItem checks that the caller may write, and reads the record's id and
// the body of a write to it (PUT or PATCH).
func (h *resourceHandlers) decodeItem(w http.ResponseWriter, r *http.Request, mode resourceapi.WriteMode) (int64, resourceapi.Record, error) {
	caller, err := h.permit(r, resourceapi.ActionWrite)
	if err != nil {
		return 0, nil, err
	}
	id, err := h.pathID(r)
	if err != nil {
		return 0, nil, err
	}
	rec, err := h.decode(w, r, caller, mode, id)
	return id, rec, err
}

// update serves PATCH on a record: only the fields sent change.
func (h *resourceHandlers) update() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		id, patch, err := h.decodeItem(w, r, resourceapi.ModePatch)
		if err != nil {
			return err
		}
		out, err := h.s.store.Update(r.Context(), h.res, id, patch, h.view.writeCondition(r))
		if err != nil {
			return err
		}
		return h.writeRecord(w, r, http.StatusOK, out, nil)
	})
}

// remove serves DELETE on a record: 204, no body.
func (h *resourceHandlers) remove() http.Handler {
	return h.s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := h.permit(r, resourceapi.ActionDelete); err != nil {
			return err
		}
		id, err := h.pathID(r)
		if err != nil {
			return err
		}
		if err := h.s.store.Delete(r.Context(), h.res, id, h.view.writeCondition(r)); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

// decode reads and validates the body of a write, checks that caller may
// write the fields it sets, and hashes its secrets, so that what reaches the
// store is valid, allowed and free of plain secrets.
func (h *resourceHandlers) decode(w http.ResponseWriter, r *http.Request, caller *resourceapi.Caller, mode resourceapi.WriteMode, id int64) (resourceapi.Record, error) {
	body, err := h.s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	rec, err := resourceapi.DecodeRecord(h.res, *body, mode, id)
	putBuffer(body) // DecodeRecord copies what it keeps
	if err != nil {
		return nil, err
	}
	if err := h.res.Authorize(caller, rec); err != nil {
		return nil, err
	}
	if err := resourceapi.HashSecrets(h.res, rec, h.s.hasher); err != nil {
		return nil, err
	}
	return rec, nil
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
	tag, body := etagOf(full), full
	if fields != nil {
		b, err := h.view.appendRecord(full, rec, fields)
		*buf = b
		if err != nil {
			return err
		}
		body = b[len(full):]
	}
	if status == http.StatusOK && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeCacheable(w, r, body, tag, updatedAt(rec))
		return nil
	}
	hd := w.Header()
	hd.Set("ETag", tag)
	if lm := updatedAt(rec); !lm.IsZero() {
		hd.Set("Last-Modified", lm.UTC().Format(http.TimeFormat))
	}
	writeJSON(w, status, body)
	return nil
}

// writeCacheable sends the 200 response of a GET (or HEAD) with its
// validators, or 304 when the client's copy is current. The 304 declares the
// length of the 200 it stands for, so that the compressor gives it the tag
// that 200 would have had (see compressWriter.notModified); the length itself
// is not sent.
func writeCacheable(w http.ResponseWriter, r *http.Request, body []byte, tag string, modified time.Time) {
	h := w.Header()
	h["Etag"] = []string{tag} // the canonical form of ETag, set without canonicalizing
	h["Cache-Control"] = cacheRevalidate
	if !modified.IsZero() {
		h["Last-Modified"] = []string{modified.UTC().Format(http.TimeFormat)}
	}
	if notModified(r, tag, modified) {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// capitalize upper-cases the first letter of an ASCII word, for messages.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
