package resourceapi

import (
	"fmt"
	"slices"
	"strings"
)

// FieldType is the JSON and storage type of a field.
type FieldType int

// Field types. A record holds int64, string, bool, time.Time or []string values
// for them, or nil for null.
const (
	TypeInt FieldType = iota + 1
	TypeString
	TypeBool
	TypeTime
	TypeStrings
)

func (t FieldType) String() string {
	switch t {
	case TypeInt:
		return "integer"
	case TypeString:
		return "string"
	case TypeBool:
		return "boolean"
	case TypeTime:
		return "timestamp"
	case TypeStrings:
		return "array of strings"
	}
	return fmt.Sprintf("FieldType(%d)", int(t))
}

// Field declares one field of a resource: its type, how it may be written, and
// the constraints on its value. Everything a transport or a store needs to know
// about a field is here, so that a new resource is a declaration, not code.
type Field struct {
	Name string
	Type FieldType

	// ReadOnly fields are set by the service (id, timestamps); request bodies
	// that carry them have them ignored.
	ReadOnly bool
	// WriteOnly fields are accepted in bodies but never shown, selected, sorted
	// or searched (password).
	WriteOnly bool
	// Secret fields hold a credential that is hashed before it is stored.
	Secret bool
	// Required fields must be present and non-null on create and replace.
	Required bool
	// Nullable fields accept null.
	Nullable bool
	// AdminOnly fields may be written only by an admin (roles).
	AdminOnly bool
	// Keep fields are left as stored when a replace (PUT) omits them, instead
	// of being reset to null or their default.
	Keep bool
	// Unique fields are unique across the resource, case-insensitively for
	// strings; the store enforces it and reports CodeConflict.
	Unique bool
	// Sortable fields may be named by the sort query parameter.
	Sortable bool
	// Searchable fields are matched, as a case-insensitive substring, by q.
	Searchable bool

	// Default returns the value of an absent field on create; nil means null.
	Default func() any
	// Normalize rewrites a non-null value before it is checked and stored.
	Normalize func(v any) any
	// Check returns why a non-null, normalized value is not acceptable, or "".
	Check func(v any) string
}

// FilterKind says how a filter's value selects records.
type FilterKind int

// Filter kinds.
const (
	// FilterSoftDelete selects by the resource's soft-delete flag: "active"
	// (the default), "deleted" or "all".
	FilterSoftDelete FilterKind = iota + 1
	// FilterContains selects records whose list field contains the value.
	FilterContains
	// FilterEqual selects records whose field equals the value.
	FilterEqual
)

// Soft-delete filter values.
const (
	StatusActive  = "active"
	StatusDeleted = "deleted"
	StatusAll     = "all"
)

// Filter declares a list query parameter that narrows a collection.
type Filter struct {
	Param string
	Kind  FilterKind
	// Field is the field the filter reads.
	Field string
	// Values lists the accepted values; empty accepts any.
	Values []string
	// Default applies when the parameter is absent; "" applies no filter.
	Default string
}

// Resource declares one collection of the REST API: its fields, filters and
// sort order. Stores build their SQL from it, only ever from these names.
type Resource struct {
	// Name is the collection's path segment, table and permission resource.
	Name string
	// Singular names one record in messages ("user").
	Singular string
	Fields   []Field
	Filters  []Filter
	// SoftDelete names the boolean field that marks a record soft-deleted, if
	// the resource has one.
	SoftDelete string
	// Retain, when set, is an invariant that writes may not break: at least one
	// active record holds a value in a list field (the last admin).
	Retain *Retain

	fields map[string]*Field
}

// NewResource checks a declaration and indexes it. It panics on a declaration
// error, which is a programming error found by any test that loads it.
func NewResource(r Resource) *Resource {
	r.fields = make(map[string]*Field, len(r.Fields))
	for i := range r.Fields {
		f := &r.Fields[i]
		if _, dup := r.fields[f.Name]; dup || f.Name == "" {
			panic(fmt.Sprintf("resource %s: bad or duplicate field %q", r.Name, f.Name))
		}
		r.fields[f.Name] = f
	}
	for _, name := range []string{"id", "created_at", "updated_at"} {
		if f := r.fields[name]; f == nil || !f.ReadOnly {
			panic(fmt.Sprintf("resource %s: read-only field %q missing", r.Name, name))
		}
	}
	for _, flt := range r.Filters {
		if flt.Kind != FilterSoftDelete && r.fields[flt.Field] == nil {
			panic(fmt.Sprintf("resource %s: filter %s reads unknown field %q", r.Name, flt.Param, flt.Field))
		}
	}
	if r.SoftDelete != "" {
		if f := r.fields[r.SoftDelete]; f == nil || f.Type != TypeBool {
			panic(fmt.Sprintf("resource %s: soft-delete field %q is not a boolean field", r.Name, r.SoftDelete))
		}
	}
	return &r
}

// Retain declares that at least one active (not soft-deleted) record must hold
// Value in the list field Field. A write that would leave none fails with
// CodeUnprocessable and Message.
type Retain struct {
	Field, Value, Message string
}

// Holds reports whether rec counts toward r's Retain invariant: it is active
// and its Retain field contains the value. It is false when r has no Retain.
func (r *Resource) Holds(rec Record) bool {
	if r.Retain == nil || rec == nil || (r.SoftDelete != "" && rec.Bool(r.SoftDelete)) {
		return false
	}
	return contains(rec.Strings(r.Retain.Field), r.Retain.Value)
}

// Authorize checks that caller may write the fields present in rec: a field
// marked AdminOnly needs an admin. It returns CodeForbidden otherwise.
func (r *Resource) Authorize(caller *Caller, rec Record) error {
	for _, f := range r.Fields {
		if _, sent := rec[f.Name]; sent && f.AdminOnly && !caller.IsAdmin() {
			return Errorf(CodeForbidden, "Only an admin may set %s", f.Name)
		}
	}
	return nil
}

// DefaultValue returns the value field f takes when a record is inserted
// without it: its declared default, or nil.
func (f *Field) DefaultValue() any { return fieldDefault(f) }

// Field returns the declared field with the given name, or nil.
func (r *Resource) Field(name string) *Field { return r.fields[name] }

// Visible reports whether name is a field that responses show.
func (r *Resource) Visible(name string) bool {
	f := r.fields[name]
	return f != nil && !f.WriteOnly
}

// VisibleFields returns the names of the fields responses show, in declaration
// order.
func (r *Resource) VisibleFields() []string {
	names := make([]string, 0, len(r.Fields))
	for _, f := range r.Fields {
		if !f.WriteOnly {
			names = append(names, f.Name)
		}
	}
	return names
}

// SortableFields returns the names sort accepts, in declaration order.
func (r *Resource) SortableFields() []string {
	var names []string
	for _, f := range r.Fields {
		if f.Sortable {
			names = append(names, f.Name)
		}
	}
	return names
}

// Filter returns the filter read from query parameter param, or nil.
func (r *Resource) Filter(param string) *Filter {
	for i := range r.Filters {
		if r.Filters[i].Param == param {
			return &r.Filters[i]
		}
	}
	return nil
}

// MaxID is the largest record id: 2^53-1, the largest integer that every JSON
// client (JavaScript's numbers) holds exactly. Stores never assign a larger
// one, and transports accept none.
const MaxID = 1<<53 - 1

// Record is one resource instance: field name to value (int64, string, bool,
// time.Time, []string, or nil for null).
type Record map[string]any

// ID returns the record's id, or 0 when it has none.
func (rec Record) ID() int64 {
	id, _ := rec["id"].(int64)
	return id
}

// Clone returns a copy of rec that shares nothing with it.
func (rec Record) Clone() Record {
	out := make(Record, len(rec))
	for k, v := range rec {
		if list, ok := v.([]string); ok {
			v = slices.Clone(list)
		}
		out[k] = v
	}
	return out
}

// Strings returns the []string value of field name, or nil.
func (rec Record) Strings(name string) []string {
	v, _ := rec[name].([]string)
	return v
}

// Bool returns the boolean value of field name, false when absent or null.
func (rec Record) Bool(name string) bool {
	v, _ := rec[name].(bool)
	return v
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
