package resourceapi

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// List paging limits.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	// MaxSearchLength bounds q, in bytes.
	MaxSearchLength = 200
)

// ListQuery is a validated request for one page of a collection. Every name in
// it comes from the resource's declaration, never from the request as text.
type ListQuery struct {
	Page  int // 1-based
	Limit int
	// Sort is a sortable field of the resource. Ties break by id in the same
	// direction, so desc is the exact reverse of asc, and null sorts as the
	// smallest value (first in asc, last in desc). Strings sort by code
	// point on SQLite, and by the database's collation on PostgreSQL (the same
	// order for C and C.UTF-8 databases).
	Sort string
	Desc bool
	// Search is a case-insensitive substring matched against the searchable
	// fields; "" matches everything.
	Search  string
	Filters []FilterValue
	// Fields lists the fields to show, in declaration order; nil shows all.
	// Stores ignore it and return whole records; transports select.
	Fields []string
}

// FilterValue is one filter with the value it was given.
type FilterValue struct {
	Filter *Filter
	Value  string
}

// Offset returns the number of records before the page.
func (q ListQuery) Offset() int { return (q.Page - 1) * q.Limit }

// Page is one page of a collection.
type Page struct {
	Records []Record
	// Total counts every record that matches the query, on all pages.
	Total int
}

// Pages returns the number of pages of the given size: ceil(total/limit), 0
// when there are no records.
func (p Page) Pages(limit int) int {
	if limit <= 0 {
		return 0
	}
	return (p.Total + limit - 1) / limit
}

// ParseListQuery validates the query parameters of a list request against
// res. Parameters that are not part of the list interface are ignored. Every
// bad parameter gives one detail of a CodeValidation error.
func ParseListQuery(res *Resource, params url.Values) (ListQuery, error) {
	q := ListQuery{Page: 1, Limit: DefaultLimit, Sort: "id"}
	var details []FieldError
	bad := func(param, msg string) { details = append(details, FieldError{Field: param, Message: msg}) }
	// one returns the single value of param; a repeated parameter is an error.
	one := func(param string) (string, bool) {
		vs, ok := params[param]
		if !ok {
			return "", false
		}
		if len(vs) > 1 {
			bad(param, "must be given once")
			return "", false
		}
		return vs[0], true
	}

	if v, ok := one("page"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad("page", "must be an integer")
		case n < 1:
			bad("page", "must be at least 1")
		case n > 1_000_000_000/MaxLimit:
			bad("page", "is too large")
		default:
			q.Page = n
		}
	}
	if v, ok := one("limit"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad("limit", "must be an integer")
		case n < 1 || n > MaxLimit:
			bad("limit", "must be between 1 and "+strconv.Itoa(MaxLimit))
		default:
			q.Limit = n
		}
	}
	if v, ok := one("sort"); ok {
		if f := res.Field(v); f != nil && f.Sortable {
			q.Sort = v
		} else {
			bad("sort", "must be one of "+quotedList(res.SortableFields()))
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
		case len(v) > MaxSearchLength:
			bad("q", "must be at most "+strconv.Itoa(MaxSearchLength)+" bytes")
		case strings.ContainsRune(v, 0):
			bad("q", "must not contain NUL")
		default:
			q.Search = strings.TrimSpace(v)
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
		v, ok := one(f.Param)
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
		if f.Kind == FilterSoftDelete && v == StatusAll {
			continue
		}
		q.Filters = append(q.Filters, FilterValue{Filter: f, Value: v})
	}
	if len(details) > 0 {
		return ListQuery{}, &Error{Code: CodeValidation, Message: "Query parameters are not valid", Details: details}
	}
	return q, nil
}

// ParseFields validates a fields parameter for a single record: a
// comma-separated list of visible fields. It returns nil for "all fields".
func ParseFields(res *Resource, params url.Values) ([]string, error) {
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
		return nil, &Error{Code: CodeValidation, Message: "Query parameters are not valid",
			Details: []FieldError{{Field: "fields", Message: msg}}}
	}
	return fields, nil
}

// parseFields returns the named fields in declaration order, or why the list
// is not acceptable.
func parseFields(res *Resource, v string) ([]string, string) {
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
