package resourceapi

import (
	"strconv"
	"strings"
	"unicode/utf8"
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
// Build one with NewListQuery (each transport reads its own wire format
// into one: REST's query parameters in package http, GraphQL's arguments);
// stores call Check and refuse an invalid query with an error.
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
	// Cursor, when set, is where the page starts instead of Offset (which
	// is then 0): the records right after it in the list's order, or, with
	// Cursor.Before, the Limit records right before it. The page is then
	// one range read of an index whatever its depth, and records added or
	// removed before the cursor move no record into or out of it.
	Cursor *Cursor
	// NoTotal says the caller needs no Total: the store leaves it -1 and
	// skips counting.
	NoTotal bool
}

// Cursor is a position in a sorted list: the value of the sort field and
// the id of one record (the last of a page, or the first for Before). It
// is only valid for the sort and direction it was made in; a transport
// hands it to clients in a form they cannot forge (package http signs it).
type Cursor struct {
	// Sort and Desc are the order the position is in.
	Sort string
	Desc bool
	// Value is the record's value of Sort, of its field's Go type, or nil
	// for null.
	Value any
	// ID is the record's id, which breaks ties of Value.
	ID int64
	// Before asks for the records before the position rather than after it.
	Before bool
}

// CursorOf returns the position of rec in the order of q, for a page
// after it (before false) or before it.
func (q ListQuery) CursorOf(rec Record, before bool) Cursor {
	return Cursor{Sort: q.Sort, Desc: q.Desc, Value: rec[q.Sort], ID: rec.ID(), Before: before}
}

// CursorRefused returns why q's cursor cannot be used with the rest of q
// on res, or "" (also when q has none): it must be of q's own sort and
// direction, name a possible record, and not be combined with an offset.
func CursorRefused(res *Resource, q ListQuery) string {
	c := q.Cursor
	switch {
	case c == nil:
		return ""
	case q.Offset != 0:
		return "cannot be combined with page or offset"
	case c.Sort != q.Sort || c.Desc != q.Desc:
		return "was made for another sort or order; keep the sort and order of the request that returned it"
	case c.ID < 1 || c.ID > MaxID:
		return "is not a position in this list"
	}
	f := res.Field(c.Sort)
	if f == nil || !f.Sortable {
		return "is not a position in this list"
	}
	if c.Value == nil {
		if !f.Nullable {
			return "is not a position in this list"
		}
		return ""
	}
	if checkType(f, c.Value) != "" {
		return "is not a position in this list"
	}
	return ""
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
// queries from their own arguments (GraphQL, the command line); REST's
// ParseListQuery, in package http, reads query parameters by the same rules.
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
	if why := LimitRefused(q.Limit); why != "" {
		bad("limit", why)
	}
	if why := OffsetRefused(q.Offset); why != "" {
		bad("offset", why)
	}
	if why := SortRefused(res, q.Sort); why != "" {
		bad("sort", why)
	} else if why := CursorRefused(res, q); why != "" {
		name := "after"
		if q.Cursor.Before {
			name = "before"
		}
		bad(name, why)
	}
	if len(q.Search) > MaxSearchLength || strings.ContainsRune(q.Search, 0) {
		bad("q", "must be at most "+strconv.Itoa(MaxSearchLength)+" bytes, without NUL")
	} else if !utf8.ValidString(q.Search) {
		bad("q", notUTF8)
	} else if why := SearchRefused(res, q.Search); why != "" {
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

// SearchRefused returns why res cannot be searched for s, or "": a search
// needs a searchable field to match.
func SearchRefused(res *Resource, s string) string {
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
	// Total counts every record that matches the query, on all pages; -1
	// when the query asked for none (ListQuery.NoTotal).
	Total int
	// More reports that records follow the page in the direction it was
	// read: after its last record, or, for a page before a cursor, before
	// its first.
	More bool
}

// Pages returns the number of pages of the given size: ceil(total/limit), 0
// when there are no records.
func (p Page) Pages(limit int) int {
	if limit <= 0 || p.Total < 0 {
		return 0
	}
	return (p.Total + limit - 1) / limit
}

// notUTF8 is the detail of a parameter or string that is not valid UTF-8.
const notUTF8 = "must be valid UTF-8"

// LimitRefused returns why n cannot be the size of a page (ListQuery.Limit,
// the limit of every door), or "".
func LimitRefused(n int) string {
	if n < 1 || n > MaxLimit {
		return "must be between 1 and " + strconv.Itoa(MaxLimit)
	}
	return ""
}

// OffsetRefused returns why n cannot be the offset of a page
// (ListQuery.Offset), or "".
func OffsetRefused(n int) string {
	if n < 0 || n > MaxOffset {
		return "must be between 0 and " + strconv.Itoa(MaxOffset)
	}
	return ""
}

// PageRefused returns why n cannot be the 1-based number of a page, or "":
// page numbers stop where the offset of a page of MaxLimit records would
// pass MaxOffset.
func PageRefused(n int) string {
	switch {
	case n < 1:
		return "must be at least 1"
	case n > MaxOffset/MaxLimit:
		return "is too large"
	}
	return ""
}

// SortRefused returns why name cannot sort the lists of res, or "".
func SortRefused(res *Resource, name string) string {
	if f := res.Field(name); f == nil || !f.Sortable {
		return "must be one of " + quotedList(res.SortableFields())
	}
	return ""
}

// SetPage sets the offset of q to that of the 1-based page of q.Limit
// records. The page must be one PageRefused accepts.
func (q *ListQuery) SetPage(page int) { q.Offset = (page - 1) * q.Limit }
