package resourceapi

import (
	"fmt"
	"slices"
	"strings"
	"time"
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
	// TypeItems is a list of objects declared by the field's Items, stored
	// as rows of a table of their own, in order.
	TypeItems
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
	case TypeItems:
		return "array of objects"
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
	// Internal fields are kept by the store and read by the rule layer only:
	// never accepted in a body (a client is told it is no field), shown,
	// sorted, searched or documented. They are ReadOnly and Computed: the
	// rule layer sets them (a user that is an OAuth client's service user).
	Internal bool
	// Secret says how a field that holds a credential is hashed before it is
	// stored (in the column <name>_hash); the plain value is never stored.
	Secret SecretKind
	// Generate makes the service create the value when a record is created
	// (an API key, a client id), from the validated record; a body's value
	// is ignored, and "" leaves the field unset. The plain value of a
	// generated secret is returned once, in the record Create returns, and
	// never again.
	Generate func(rec Record) (string, error)
	// Computed fields are read-only to clients but set by the rule layer
	// (Resource.Compute or BeforeCreate) before a write, and stored.
	Computed bool
	// Transient fields are accepted in request bodies for the rule layer to
	// check (a current password, Resource.Confirm), and are never stored or
	// shown. A Transient field is WriteOnly.
	Transient bool
	// RenewedBy, on a Computed field that is neither accepted nor shown
	// (ReadOnly and WriteOnly: a user's security stamp), lists the fields
	// whose change gives it a new value, from Default, in the same write: a
	// secret field whenever a write sets it, any other when a write changes
	// its stored value. Every new record takes a value from Default too.
	RenewedBy []string
	// References names the resource whose record id this field holds. The
	// database enforces it (a foreign key); deleting the referenced record
	// deletes this one with it, unless Restrict.
	References string
	// Restrict makes a reference keep the referenced record from being
	// deleted while this one exists (CodeConflict), instead of deleting
	// this one with it.
	Restrict bool
	// Items declares the objects of a TypeItems field.
	Items *Items
	// Lookup, on a read-only field of an item, copies a value from another
	// record when the item is written (an order item's unit price from its
	// product).
	Lookup *Lookup
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
	// DecidesAccess marks a field that authentication reads to decide what
	// a caller may do (a user's roles, password or email, an API key's
	// hash). Where accounts are cached across processes (PostgreSQL), a
	// change of such a field, or of the owner or soft-delete state of a
	// record that has one, and the deletion of such a record, move the
	// identity version (identityversion.go); its migration's triggers
	// follow from this mark.
	DecidesAccess bool

	// Range bounds an integer field's value; Length a string field's length,
	// in characters; Enum lists the values a string field (or each element of
	// a list of strings) may take. Validate checks them (after Normalize,
	// before Check), and the API's contract shows them.
	Range  *Range
	Length *Range
	Enum   []string

	// Default returns the value of an absent field on create; nil means null.
	Default func() any
	// Normalize rewrites a non-null value before it is checked and stored.
	Normalize func(v any) any
	// Check returns why a non-null, normalized value is not acceptable, or "".
	Check func(v any) string
}

// Range is an inclusive range of integers.
type Range struct{ Min, Max int64 }

// Items declares the objects of a TypeItems field: each is a row of Table,
// which references the record in column Key and keeps the objects' order.
type Items struct {
	Table  string
	Key    string
	Fields []Field
	// Min and Max bound the number of objects.
	Min, Max int
}

// Field returns the item field with the given name, or nil.
func (it *Items) Field(name string) *Field {
	for i := range it.Fields {
		if it.Fields[i].Name == name {
			return &it.Fields[i]
		}
	}
	return nil
}

// Lookup copies, when an item is written, field Field of the record of
// Resource whose id is in the item's field By.
type Lookup struct {
	Resource, By, Field string
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
	// Internal filters are applied by the rule layer (a caller's own
	// records), never read from a request.
	Internal bool
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
	// Hidden names an Internal boolean field; records where it is true are
	// shown only to admins: lists and their totals leave them out for anyone
	// else (an internal filter on the field, which NewResource adds), and
	// reading one by id is CodeNotFound, except for the record's owner. A
	// record that another names (a post's author) is still read through the
	// reference. Changing or deleting one by id is CodeNotFound to them
	// too. Hidden records publish no events: subscriptions deliver events
	// to every subscriber alike.
	Hidden string
	// Retain, when set, is an invariant that writes may not break: at least one
	// active record holds a value in a list field (the last admin).
	Retain *Retain
	// Access says who may touch the records beyond holding the permission
	// <Name>:<action>: their owner, and whether the owner alone may.
	Access Access
	// Compute, when set, fills the Computed fields of a record about to be
	// written (after validation, with every field the write will store).
	Compute func(rec Record)
	// Parent names the field, with References, that nests the resource
	// under another in paths: /<parent>/{id}/<name> lists the parent's
	// records, and a record addressed through another parent is not found.
	Parent string
	// Path is the collection's path segment when it differs from Name
	// (api-keys for the table api_keys).
	Path string
	// Events names the event each kind of write publishes once it has
	// committed ({OpCreate: "userCreated"}): GraphQL subscriptions deliver
	// them. The store records the event in the write's own transaction, so
	// a committed write's event is never lost.
	Events map[Op]string
	// Example returns the n-th example of a valid create body (values of
	// the fields' Go types; owner and parent left out, so the creator owns
	// it), distinct for each n: for the API documentation, and for tests
	// that go over every resource.
	Example func(n int) Record
	// Check, when set, checks what a record's fields must agree on, after
	// each field passed its own checks. It sees the fields the write sets
	// (all of them but Keep fields, except in ModePatch).
	Check func(rec Record, mode WriteMode) []FieldError
	// Confirm, when set, lists fields that a record's owner changes only by
	// confirming it with their current password (see Confirm).
	Confirm *Confirm
	// Companion, when set, declares the record a new record needs created
	// with it (an OAuth client's service user), given the new record after
	// validation and generation. The Service validates the companion by
	// its resource's rules, with internal values (Prerequisite), and the
	// store creates both in one transaction.
	Companion func(rec Record) (companion Prerequisite, internal Record)

	fields map[string]*Field
	// permissions are PermissionFor(Name, a) for each of Actions, built
	// once: the rule layer checks one on every request.
	permissions [3]Permission
}

// NewResource checks a declaration and indexes it. It panics on a declaration
// error, which is a programming error found by any test that loads it.
func NewResource(r Resource) *Resource {
	r.fields = make(map[string]*Field, len(r.Fields))
	for i, a := range Actions {
		r.permissions[i] = PermissionFor(r.Name, a)
	}
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
	if r.Hidden != "" {
		if f := r.fields[r.Hidden]; f == nil || f.Type != TypeBool || !f.Internal {
			panic(fmt.Sprintf("resource %s: hidden field %q is not an internal boolean field", r.Name, r.Hidden))
		}
		r.Filters = append(r.Filters, Filter{Kind: FilterEqual, Field: r.Hidden, Internal: true})
	}
	if o := r.Access.Owner; o != "" {
		if f := r.fields[o]; f == nil || f.Type != TypeInt {
			panic(fmt.Sprintf("resource %s: owner field %q is not an integer field", r.Name, o))
		}
	}
	for role, actions := range r.Access.Grants {
		if role != RoleUser && role != RoleEditor {
			panic(fmt.Sprintf("resource %s: grants of role %q: only %s and %s have grants of their own (%s holds every permission)", r.Name, role, RoleUser, RoleEditor, RoleAdmin))
		}
		for i, a := range actions {
			if !slices.Contains(Actions, a) || slices.Contains(actions[:i], a) {
				panic(fmt.Sprintf("resource %s: grants of role %s: bad or repeated action %q", r.Name, role, a))
			}
		}
	}
	if c := r.Confirm; c != nil {
		if f := r.fields[c.With]; f == nil || !f.Transient || r.Access.Owner == "" {
			panic(fmt.Sprintf("resource %s: Confirm.With %q must be a transient field of a resource with an owner", r.Name, c.With))
		}
		for _, name := range c.Fields {
			if r.fields[name] == nil {
				panic(fmt.Sprintf("resource %s: Confirm names unknown field %q", r.Name, name))
			}
		}
	}
	if r.Path == "" {
		r.Path = r.Name
	}
	if p := r.Parent; p != "" {
		if f := r.fields[p]; f == nil || f.References == "" {
			panic(fmt.Sprintf("resource %s: parent field %q has no References", r.Name, p))
		}
	}
	// Owner and parent fields filter lists: the rule layer narrows lists with
	// them, and clients may filter on them too (orders?user_id=7), except on
	// the id itself.
	for _, name := range []string{r.Access.Owner, r.Parent} {
		if name == "" || slices.ContainsFunc(r.Filters, func(f Filter) bool { return f.Field == name && f.Kind == FilterEqual }) {
			continue
		}
		flt := Filter{Param: name, Kind: FilterEqual, Field: name}
		if name == "id" {
			flt.Param, flt.Internal = "", true
		}
		r.Filters = append(r.Filters, flt)
	}
	for _, f := range r.Fields {
		if f.Computed && !f.ReadOnly {
			panic(fmt.Sprintf("resource %s: computed field %q must be read-only", r.Name, f.Name))
		}
		if f.Internal && (!f.ReadOnly || !f.Computed || f.WriteOnly || f.Sortable || f.Searchable || f.Unique) {
			panic(fmt.Sprintf("resource %s: internal field %q must be read-only and computed, and no more", r.Name, f.Name))
		}
		if f.Transient && (!f.WriteOnly || f.ReadOnly || f.Required || f.Secret != NotSecret) {
			panic(fmt.Sprintf("resource %s: transient field %q must be write-only, optional, and stored as nothing", r.Name, f.Name))
		}
		for _, name := range f.RenewedBy {
			if !f.ReadOnly || !f.WriteOnly || !f.Computed || f.Default == nil || r.fields[name] == nil {
				panic(fmt.Sprintf("resource %s: field %q renewed by %q: it must be read-only, write-only, computed and have a Default, and %q a field", r.Name, f.Name, name, name))
			}
		}
		if f.References != "" && f.Type != TypeInt {
			panic(fmt.Sprintf("resource %s: reference %q is not an integer field", r.Name, f.Name))
		}
		if (f.Type == TypeItems) != (f.Items != nil) {
			panic(fmt.Sprintf("resource %s: field %q: Items goes with TypeItems", r.Name, f.Name))
		}
		if f.Items != nil {
			for _, sub := range f.Items.Fields {
				if sub.Type == TypeItems || sub.Type == TypeStrings || sub.Type == TypeTime {
					panic(fmt.Sprintf("resource %s: item field %s.%s must be an integer, string or boolean", r.Name, f.Name, sub.Name))
				}
				if l := sub.Lookup; l != nil && (!sub.ReadOnly || f.Items.Field(l.By) == nil) {
					panic(fmt.Sprintf("resource %s: item field %s.%s: a lookup is read-only and reads a field of the item", r.Name, f.Name, sub.Name))
				}
			}
		}
	}
	return &r
}

// Confirm declares that a write by a record's owner that changes one of
// Fields (a secret field: that sets it) must carry, in the Transient field
// With, the owner's current password, which the rule layer checks as a
// sign-in checks it (throttled, a wrong one counted as a failed guess). An
// admin changing another user's record needs none; a user without a
// password cannot confirm, so only an admin changes these fields for them.
type Confirm struct {
	Fields []string
	With   string
}

// SecretKind says how a secret field is hashed.
type SecretKind int

// Secret kinds.
const (
	NotSecret SecretKind = iota
	// SecretPassword is chosen by a person: hashed slowly, with a salt
	// (PasswordHasher), and checked against one known record.
	SecretPassword
	// SecretToken is generated with at least 128 bits of entropy: hashed
	// with SHA-256 (HashToken), which is enough for such a secret and lets a
	// credential be found by its hash.
	SecretToken
)

// Op is an operation on a resource, as the rule layer authorizes it.
type Op int

// Operations.
const (
	OpRead Op = iota + 1
	OpCreate
	OpReplace
	OpUpdate
	OpDelete
)

// Action returns the permission action an operation needs: read, write or
// delete.
func (o Op) Action() Action {
	switch o {
	case OpRead:
		return ActionRead
	case OpDelete:
		return ActionDelete
	}
	return ActionWrite
}

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpCreate:
		return "create"
	case OpReplace:
		return "replace"
	case OpUpdate:
		return "update"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Access declares, beyond the <resource>:<action> permission, who may touch
// a resource's records. Admins may always do what their permissions allow.
type Access struct {
	// Owner names the integer field that holds the id of the user a record
	// belongs to; "id" for users, whose records belong to themselves. On
	// create, an absent owner is the caller, and only an admin may name
	// someone else.
	Owner string
	// Self lists the operations a record's owner may perform without holding
	// the permission (a user reads and patches their own record).
	Self []Op
	// Private restricts every operation on a record to its owner (and
	// admins): others get CodeForbidden, and lists show a caller only their
	// own records.
	Private bool
	// Guarded restricts changing records (PUT, PATCH) to their owner (and
	// admins); anyone with the read permission reads them, and anyone with
	// the delete permission deletes them (moderation).
	Guarded bool
	// Grants lists the actions on the resource that each role grants by
	// default ({RoleUser: {ActionRead}}): RoleUser or RoleEditor, which
	// also has every grant of RoleUser; RoleAdmin holds every permission
	// already. DefaultRoles is made of them, and so are the roles a new
	// database starts with; a new grant reaches an existing database through
	// a generated migration, which adds it to the roles there without
	// undoing what an operator changed (docs/architecture.md).
	Grants map[string][]Action
}

// DefaultGrants returns the permissions on r that each role grants by
// default, from Access.Grants: RoleEditor's include RoleUser's. Roles without
// any are absent; RoleAdmin always is (it holds "*:*").
func (r *Resource) DefaultGrants() map[string][]Permission {
	out := map[string][]Permission{}
	for _, role := range []string{RoleUser, RoleEditor} {
		var perms []Permission
		for _, a := range Actions {
			if slices.Contains(r.Access.Grants[role], a) || slices.ContainsFunc(roleIncludes[role], func(inc string) bool {
				return slices.Contains(r.Access.Grants[inc], a)
			}) {
				perms = append(perms, PermissionFor(r.Name, a))
			}
		}
		if perms != nil {
			out[role] = perms
		}
	}
	return out
}

// permission returns PermissionFor(r.Name, a), without building it for one
// of Actions.
func (r *Resource) permission(a Action) Permission {
	if i := slices.Index(Actions, a); i >= 0 && i < len(r.permissions) && r.permissions[i] != "" {
		return r.permissions[i]
	}
	return PermissionFor(r.Name, a)
}

// restricts reports whether only a record's owner (or an admin) may perform
// op on it.
func (a Access) restricts(op Op) bool {
	switch op {
	case OpReplace, OpUpdate:
		return a.Private || a.Guarded
	}
	return a.Private
}

// selfMay reports whether a record's owner may perform op without the
// permission.
func (a Access) selfMay(op Op) bool { return slices.Contains(a.Self, op) }

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

// authorizeFields checks that caller may write the fields present in rec: a
// field marked AdminOnly needs an admin. It returns CodeForbidden otherwise.
func (r *Resource) authorizeFields(caller *Caller, rec Record) error {
	for _, f := range r.Fields {
		if _, sent := rec[f.Name]; sent && f.AdminOnly && !caller.IsAdmin() {
			return Errorf(CodeForbidden, "Only an admin may set %s", f.Name)
		}
	}
	return nil
}

// CreatableByPut reports whether a PUT to an absent id may create a record:
// not when the service generates part of it (a key, a client's secret) or
// creates what it needs (Companion), which only POST does.
func (r *Resource) CreatableByPut() bool {
	if r.Companion != nil {
		return false
	}
	for _, f := range r.Fields {
		if f.Generate != nil {
			return false
		}
	}
	return true
}

// ParentOf returns the parent id rec holds, or 0 when the resource is not
// nested.
func (r *Resource) ParentOf(rec Record) int64 {
	if r.Parent == "" || rec == nil {
		return 0
	}
	id, _ := rec[r.Parent].(int64)
	return id
}

// ParentResource returns the resource records are nested under in paths
// (the resource the Parent field references), or nil.
func (r *Resource) ParentResource() *Resource {
	if r.Parent == "" {
		return nil
	}
	return ResourceNamed(r.fields[r.Parent].References)
}

// parentIsOwner reports whether the parent of nested paths is the owning
// user (/users/{id}/orders).
func (r *Resource) parentIsOwner() bool {
	return r.Parent != "" && r.Parent == r.Access.Owner
}

// equalFilter returns the FilterEqual filter on field name.
func (r *Resource) equalFilter(name string) *Filter {
	for i := range r.Filters {
		if f := &r.Filters[i]; f.Kind == FilterEqual && f.Field == name {
			return f
		}
	}
	panic(fmt.Sprintf("resource %s: no filter on %s", r.Name, name)) // NewResource adds it
}

// hasFilter reports whether f is one of r's own filters (by identity).
func (r *Resource) hasFilter(f *Filter) bool {
	for i := range r.Filters {
		if &r.Filters[i] == f {
			return true
		}
	}
	return false
}

func (r *Resource) parentFilter() *Filter { return r.equalFilter(r.Parent) }

func (r *Resource) ownerFilter() *Filter { return r.equalFilter(r.Access.Owner) }

// OwnerOf returns the id of the user rec belongs to, or 0 when the resource
// has no owner or rec names none.
func (r *Resource) OwnerOf(rec Record) int64 {
	if r.Access.Owner == "" || rec == nil {
		return 0
	}
	id, _ := rec[r.Access.Owner].(int64)
	return id
}

// DefaultValue returns the value field f takes when a record is inserted
// without it: its declared default, or nil.
func (f *Field) DefaultValue() any { return fieldDefault(f) }

// Field returns the declared field with the given name, or nil.
func (r *Resource) Field(name string) *Field { return r.fields[name] }

// Visible reports whether name is a field that responses show.
func (r *Resource) Visible(name string) bool {
	f := r.fields[name]
	return f != nil && !f.WriteOnly && !f.Internal
}

// VisibleFields returns the names of the fields responses show, in declaration
// order.
func (r *Resource) VisibleFields() []string {
	names := make([]string, 0, len(r.Fields))
	for _, f := range r.Fields {
		if !f.WriteOnly && !f.Internal {
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

// SearchableFields returns the names q matches, in declaration order; q is
// refused when there are none.
func (r *Resource) SearchableFields() []string {
	var names []string
	for _, f := range r.Fields {
		if f.Searchable && !f.WriteOnly {
			names = append(names, f.Name)
		}
	}
	return names
}

// HiddenFrom reports whether rec is a record of r that c may not see: a
// Hidden record, and c neither an admin nor its owner. A nil rec is not.
// The caller is asked first: for an admin the record's fields are not read,
// which a GET of a cached record would otherwise do only here (its
// rendering is cached beside it), at the cost of a cache miss or two.
func (r *Resource) HiddenFrom(c *Caller, rec Record) bool {
	if r.Hidden == "" || rec == nil || c.IsAdmin() || !rec.Bool(r.Hidden) {
		return false
	}
	owner := r.OwnerOf(rec)
	return owner == 0 || c == nil || owner != c.UserID
}

// hiddenFilter returns the internal filter on the Hidden field.
func (r *Resource) hiddenFilter() *Filter { return r.equalFilter(r.Hidden) }

// Filter returns the filter read from query parameter param, or nil.
func (r *Resource) Filter(param string) *Filter {
	for i := range r.Filters {
		if r.Filters[i].Param == param && !r.Filters[i].Internal {
			return &r.Filters[i]
		}
	}
	return nil
}

// IfCreated is a record value that a replace stores only if it creates the
// record; a replace of an existing record leaves that field as stored. The
// rule layer uses it for the owner of a record a PUT may create.
type IfCreated struct{ Value any }

// IfChanged is a record value that a write stores only if, in the same
// write, one of Fields takes a value other than the stored one (a secret
// field: is set at all); otherwise the field keeps what is stored. A write
// that creates the record stores Value. The rule layer uses it to renew a
// user's security stamp when their email changes (Field.RenewedBy), which
// only the write's transaction can tell.
type IfChanged struct {
	Fields []string
	Value  any
}

// Changes reports whether writing change over cur (a stored record) changes
// one of fields: a field of res that is not shown (a secret) changes
// whenever change sets it; another when its value differs from cur's, a
// unique string as uniqueness compares it (ignoring case: an email whose
// case alone changes names the same account).
func (r *Resource) Changes(cur, change Record, fields []string) bool {
	for _, name := range fields {
		v, sent := change[name]
		if !sent {
			continue
		}
		f := r.fields[name]
		if f == nil || f.WriteOnly {
			return true
		}
		if f.Unique && f.Type == TypeString {
			// Lower-cased as the store keys them (not EqualFold's
			// folding, which differs for a few characters).
			a, _ := cur[name].(string)
			b, _ := v.(string)
			if keyA, keyB := strings.ToLower(a), strings.ToLower(b); keyA != keyB {
				return true
			}
			continue
		}
		if !sameValue(cur[name], v) {
			return true
		}
	}
	return false
}

// sameValue reports whether two values of a record are equal.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case nil:
		return b == nil
	case string, int64, bool:
		return a == b
	}
	return false
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
