package resourceapi

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// List paging limits.
const (
	// DefaultLimit is the page size when a request names none.
	DefaultLimit = 20
	// MaxLimit is the largest page a request may ask for.
	MaxLimit = 100
	// MaxOffset bounds how many records a page may skip: deep offsets cost in
	// proportion to their depth, and no real client pages that far.
	MaxOffset = 1_000_000_000
	// MaxSearchLength bounds q, in bytes.
	MaxSearchLength = 200
)

// ListQuery is a request for one page of a collection. Every name in it
// comes from the resource's declaration, never from the request as text.
// Build one with ParseListQuery (query parameters) or NewListQuery (a
// transport's own arguments); stores call Check and refuse an invalid query
// with an error.
type ListQuery struct {
	// Offset is how many matching records come before the page.
	Offset int
	// Limit is the most records the page holds, 1 to MaxLimit.
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

// FilterValue is one filter with the value it was given: for
// FilterSoftDelete StatusActive or StatusDeleted, for FilterContains a
// string, for FilterEqual a value of its field's Go type.
type FilterValue struct {
	Filter *Filter
	Value  any
}

// Page returns the 1-based number of the page, for the pagination
// envelope: the page of Limit records that holds the first record.
func (q ListQuery) Page() int {
	if q.Limit <= 0 {
		return 1
	}
	return q.Offset/q.Limit + 1
}

// NewListQuery completes q with the defaults (sort by id, DefaultLimit) and
// checks it against res: the one constructor for transports that build
// queries from their own arguments (GraphQL), as ParseListQuery is for query
// parameters.
func NewListQuery(res *Resource, q ListQuery) (ListQuery, error) {
	if q.Sort == "" {
		q.Sort = "id"
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	return q, q.Check(res)
}

// Check reports why q is not a valid query of res, as a CodeValidation error,
// or nil. Stores call it, so a hand-built query fails with an error instead
// of reaching SQL.
func (q ListQuery) Check(res *Resource) error {
	var details []FieldError
	bad := func(field, msg string) { details = append(details, FieldError{Field: field, Message: msg}) }
	if q.Limit < 1 || q.Limit > MaxLimit {
		bad("limit", "must be between 1 and "+strconv.Itoa(MaxLimit))
	}
	if q.Offset < 0 || q.Offset > MaxOffset {
		bad("offset", "must be between 0 and "+strconv.Itoa(MaxOffset))
	}
	if f := res.Field(q.Sort); f == nil || !f.Sortable {
		bad("sort", "must be one of "+quotedList(res.SortableFields()))
	}
	if len(q.Search) > MaxSearchLength || strings.ContainsRune(q.Search, 0) {
		bad("q", "must be at most "+strconv.Itoa(MaxSearchLength)+" bytes, without NUL")
	} else if !utf8.ValidString(q.Search) {
		bad("q", notUTF8)
	} else if why := searchRefused(res, q.Search); why != "" {
		bad("q", why)
	}
	for _, fv := range q.Filters {
		if why := fv.check(res); why != "" {
			name := "filter"
			if fv.Filter != nil {
				name = fv.Filter.Param
			}
			bad(name, why)
		}
	}
	for _, name := range q.Fields {
		if !res.Visible(name) {
			bad("fields", "unknown field "+strconv.Quote(truncateText(name, 64)))
		}
	}
	if len(details) > 0 {
		return &Error{Code: CodeValidation, Message: "Query parameters are not valid", Details: details}
	}
	return nil
}

// check reports why fv cannot filter res: its filter must be one of res's
// own (so its field is declared) and its value of the filter's type.
func (fv FilterValue) check(res *Resource) string {
	f := fv.Filter
	if f == nil || !res.hasFilter(f) {
		return "is not a filter of " + res.Name
	}
	switch f.Kind {
	case FilterSoftDelete:
		if v, ok := fv.Value.(string); !ok || (v != StatusActive && v != StatusDeleted) {
			return "must be 'active' or 'deleted'"
		}
	case FilterContains:
		if s, ok := fv.Value.(string); !ok {
			return "must be a string"
		} else if !utf8.ValidString(s) {
			return notUTF8
		}
	case FilterEqual:
		if checkType(res.Field(f.Field), fv.Value) != "" {
			return "must be " + article(res.Field(f.Field).Type) + res.Field(f.Field).Type.String()
		}
	}
	return ""
}

// searchRefused returns why res cannot be searched for s, or "": a search
// needs a searchable field to match.
func searchRefused(res *Resource, s string) string {
	if s == "" || len(res.SearchableFields()) > 0 {
		return ""
	}
	return "is not available: no field of " + res.Name + " is searchable"
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

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

// notUTF8 is the detail of a parameter or string that is not valid UTF-8.
const notUTF8 = "must be valid UTF-8"

// checkUTF8 returns a detail for each query parameter whose name or a value
// is not valid UTF-8, in the order of their names, and the set of their
// names. Such text is refused before anything reads it: no database takes
// it as a string (PostgreSQL fails the statement), and no response can
// show it back. Every parameter is checked, even one the request's handler
// ignores, so that the rule does not depend on which are read.
func checkUTF8(params url.Values) ([]FieldError, map[string]bool) {
	var details []FieldError
	var names map[string]bool
	for name, vs := range params {
		if utf8.ValidString(name) && !slices.ContainsFunc(vs, func(v string) bool { return !utf8.ValidString(v) }) {
			continue
		}
		if names == nil {
			names = make(map[string]bool)
		}
		names[name] = true
		details = append(details, FieldError{Field: strings.ToValidUTF8(truncateText(name, 64), "\uFFFD"), Message: notUTF8})
	}
	slices.SortFunc(details, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return details, names
}

// ParseListQuery validates the query parameters of a list request against
// res. Parameters that are not part of the list interface are ignored, but
// any parameter that is not valid UTF-8 is refused. Every bad parameter
// gives one detail of a CodeValidation error.
func ParseListQuery(res *Resource, params url.Values) (ListQuery, error) {
	q := ListQuery{Limit: DefaultLimit, Sort: "id"}
	page := 1
	details, notText := checkUTF8(params)
	bad := func(param, msg string) { details = append(details, FieldError{Field: param, Message: msg}) }
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

	if v, ok := one("page"); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			bad("page", "must be an integer")
		case n < 1:
			bad("page", "must be at least 1")
		case n > MaxOffset/MaxLimit:
			bad("page", "is too large")
		default:
			page = n
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
			q.Search = norm.NFC.String(strings.TrimSpace(v)) // as names and emails are stored
			if why := searchRefused(res, q.Search); why != "" {
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
		if f.Kind == FilterSoftDelete && v == StatusAll {
			continue
		}
		var value any = v
		if f.Kind == FilterEqual {
			var why string
			if value, why = parseParam(res.Field(f.Field), v); why != "" {
				bad(f.Param, why)
				continue
			}
		}
		q.Filters = append(q.Filters, FilterValue{Filter: f, Value: value})
	}
	if len(details) > 0 {
		return ListQuery{}, &Error{Code: CodeValidation, Message: "Query parameters are not valid", Details: details}
	}
	q.Offset = (page - 1) * q.Limit
	return q, nil
}

// ParseFields validates a fields parameter for a single record: a
// comma-separated list of visible fields. It returns nil for "all fields".
func ParseFields(res *Resource, params url.Values) ([]string, error) {
	if details, _ := checkUTF8(params); len(details) > 0 {
		return nil, &Error{Code: CodeValidation, Message: "Query parameters are not valid", Details: details}
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

// parseParam reads a query parameter as a value of field f's type: integers
// in decimal, booleans as true or false, strings as they are.
func parseParam(f *Field, v string) (any, string) {
	switch f.Type {
	case TypeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, "must be an integer"
		}
		return n, ""
	case TypeBool:
		switch v {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "must be true or false"
	case TypeString:
		if strings.ContainsRune(v, 0) || len(v) > MaxSearchLength {
			return nil, "must be at most " + strconv.Itoa(MaxSearchLength) + " bytes, without NUL"
		}
		return v, ""
	}
	return nil, "cannot be filtered on"
}
