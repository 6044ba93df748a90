package http

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/resourceapi/resourceapi"
)

// checkUTF8 returns a detail for each query parameter whose name or a value
// is not valid UTF-8, in the order of their names, and the set of their
// names. Such text is refused before anything reads it: no database takes
// it as a string (PostgreSQL fails the statement), and no response can
// show it back. Every parameter is checked, even one the request's handler
// ignores, so that the rule does not depend on which are read.
func checkUTF8(params url.Values) ([]resourceapi.FieldError, map[string]bool) {
	var details []resourceapi.FieldError
	var names map[string]bool
	for name, vs := range params {
		if utf8.ValidString(name) && !slices.ContainsFunc(vs, func(v string) bool { return !utf8.ValidString(v) }) {
			continue
		}
		if names == nil {
			names = make(map[string]bool)
		}
		names[name] = true
		details = append(details, resourceapi.FieldError{Field: strings.ToValidUTF8(truncateText(name, 64), "\uFFFD"), Message: notUTF8})
	}
	slices.SortFunc(details, func(a, b resourceapi.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return details, names
}

// ParseListQuery validates the query parameters of a list request against
// res. Parameters that are not part of the list interface are ignored, but
// any parameter that is not valid UTF-8 is refused. Every bad parameter
// gives one detail of a CodeValidation error.
//
// ParseListQuery refuses cursors (after= and before=), which only a
// server's Cursors can read: see Cursors.ParseListQuery.
func ParseListQuery(res *resourceapi.Resource, params url.Values) (resourceapi.ListQuery, error) {
	return (*Cursors)(nil).ParseListQuery(res, params)
}

// ParseListQuery is the package's ParseListQuery, reading the cursors of
// after= and before= as cs made them.
func (cs *Cursors) ParseListQuery(res *resourceapi.Resource, params url.Values) (resourceapi.ListQuery, error) {
	q := resourceapi.ListQuery{Limit: resourceapi.DefaultLimit, Sort: "id"}
	page := 1
	details, notText := checkUTF8(params)
	bad := func(param, msg string) { details = append(details, resourceapi.FieldError{Field: param, Message: msg}) }
	// one returns the single value of param; a repeated parameter is an error.
	one := func(param string) (string, bool) {
		vs, ok := params[param]
		if !ok || notText[param] {
			return "", false
		}
		if len(vs) > 1 {
			bad(param, "must be given once")
			return "", false
		}
		return vs[0], true
	}

	_, paged := params["page"]
	for _, name := range [...]string{"after", "before"} {
		v, ok := one(name)
		switch {
		case !ok:
		case q.Cursor != nil:
			bad(name, "cannot be combined with after")
		case paged:
			bad(name, "cannot be combined with page")
		default:
			c, why := cs.Decode(res, v)
			if why != "" {
				bad(name, why)
				continue
			}
			c.Before = name == "before"
			q.Cursor = &c
		}
	}
	if v, ok := one("total"); ok {
		switch v {
		case "true":
		case "false":
			q.NoTotal = true
		default:
			bad("total", "must be true or false")
		}
	}
	if v, ok := one("page"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad("page", "must be an integer")
		case resourceapi.PageRefused(n) != "":
			bad("page", resourceapi.PageRefused(n))
		default:
			page = n
		}
	}
	if v, ok := one("limit"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad("limit", "must be an integer")
		case resourceapi.LimitRefused(n) != "":
			bad("limit", resourceapi.LimitRefused(n))
		default:
			q.Limit = n
		}
	}
	if v, ok := one("sort"); ok {
		if why := resourceapi.SortRefused(res, v); why != "" {
			bad("sort", why)
		} else {
			q.Sort = v
		}
	}
	if v, ok := one("order"); ok {
		switch v {
		case "asc":
		case "desc":
			q.Desc = true
		default:
			bad("order", "must be 'asc' or 'desc'")
		}
	}
	if v, ok := one("q"); ok {
		switch {
		case len(v) > resourceapi.MaxSearchLength:
			bad("q", "must be at most "+strconv.Itoa(resourceapi.MaxSearchLength)+" bytes")
		case strings.ContainsRune(v, 0):
			bad("q", "must not contain NUL")
		default:
			q.Search = norm.NFC.String(strings.TrimSpace(v)) // as names and emails are stored
			if why := resourceapi.SearchRefused(res, q.Search); why != "" {
				bad("q", why)
			}
		}
	}
	if v, ok := one("fields"); ok {
		fields, msg := parseFields(res, v)
		if msg != "" {
			bad("fields", msg)
		}
		q.Fields = fields
	}
	for i := range res.Filters {
		f := &res.Filters[i]
		if f.Internal {
			continue
		}
		v, ok := one(f.Param)
		if notText[f.Param] {
			continue
		}
		if !ok {
			v = f.Default
		}
		if v == "" {
			if ok {
				bad(f.Param, "must not be empty")
			}
			continue
		}
		if len(f.Values) > 0 {
			i := slices.Index(f.Values, v)
			if i < 0 {
				bad(f.Param, "must be one of "+quotedList(f.Values))
				continue
			}
			v = f.Values[i] // the declaration's own string, not the request's
		}
		if f.Kind == resourceapi.FilterSoftDelete && v == resourceapi.StatusAll {
			continue
		}
		var value any = v
		if f.Kind == resourceapi.FilterEqual {
			var why string
			if value, why = parseParam(res.Field(f.Field), v); why != "" {
				bad(f.Param, why)
				continue
			}
		}
		q.Filters = append(q.Filters, resourceapi.FilterValue{Filter: f, Value: value})
	}
	q.SetPage(page)
	if why := resourceapi.CursorRefused(res, q); why != "" && !slices.ContainsFunc(details, func(d resourceapi.FieldError) bool { return d.Field == "sort" || d.Field == "order" }) {
		name := "after"
		if q.Cursor.Before {
			name = "before"
		}
		bad(name, why)
	}
	if len(details) > 0 {
		return resourceapi.ListQuery{}, &resourceapi.Error{Code: resourceapi.CodeValidation, Message: "Query parameters are not valid", Details: details}
	}
	return q, nil
}

// ParseFields validates a fields parameter for a single record: a
// comma-separated list of visible fields. It returns nil for "all fields".
func ParseFields(res *resourceapi.Resource, params url.Values) ([]string, error) {
	if details, _ := checkUTF8(params); len(details) > 0 {
		return nil, &resourceapi.Error{Code: resourceapi.CodeValidation, Message: "Query parameters are not valid", Details: details}
	}
	vs, ok := params["fields"]
	if !ok {
		return nil, nil
	}
	msg := "must be given once"
	var fields []string
	if len(vs) == 1 {
		fields, msg = parseFields(res, vs[0])
	}
	if msg != "" {
		return nil, &resourceapi.Error{Code: resourceapi.CodeValidation, Message: "Query parameters are not valid",
			Details: []resourceapi.FieldError{{Field: "fields", Message: msg}}}
	}
	return fields, nil
}

// parseFields returns the named fields in declaration order, or why the list
// is not acceptable.
func parseFields(res *resourceapi.Resource, v string) ([]string, string) {
	want := make(map[string]bool)
	var unknown []string
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !res.Visible(name) {
			if len(name) > 64 {
				name = name[:64] + "..."
			}
			unknown = append(unknown, name)
			continue
		}
		want[name] = true
	}
	if len(unknown) > 0 {
		if len(unknown) > 5 {
			unknown = append(unknown[:5], "...")
		}
		return nil, "unknown field(s) " + strings.Join(unknown, ", ") + "; fields are " + strings.Join(res.VisibleFields(), ", ")
	}
	if len(want) == 0 {
		return nil, "must name at least one field"
	}
	fields := make([]string, 0, len(want))
	for _, name := range res.VisibleFields() {
		if want[name] {
			fields = append(fields, name)
		}
	}
	return fields, ""
}

// parseParam reads a query parameter as a value of field f's type: integers
// in decimal, booleans as true or false, strings as they are.
func parseParam(f *resourceapi.Field, v string) (any, string) {
	switch f.Type {
	case resourceapi.TypeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, "must be an integer"
		}
		return n, ""
	case resourceapi.TypeBool:
		switch v {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "must be true or false"
	case resourceapi.TypeString:
		if strings.ContainsRune(v, 0) || len(v) > resourceapi.MaxSearchLength {
			return nil, "must be at most " + strconv.Itoa(resourceapi.MaxSearchLength) + " bytes, without NUL"
		}
		return v, ""
	}
	return nil, "cannot be filtered on"
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
