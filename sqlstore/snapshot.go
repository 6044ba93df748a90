package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"time"

	"github.com/resourceapi/resourceapi"
)

// SnapshotFile is the name, in a store's migrations directory, of the
// snapshot of the declarations as its migrations have them (see
// GenerateMigration).
const SnapshotFile = "declared.json"

// Snapshot is what a database's migrations have made of the declarations:
// for each resource, the facts its schema follows from (columns and their
// constraints, indexes, search, counts, default grants), and nothing its
// schema does not depend on (validation functions, examples, events).
// Committed beside the migrations, it is what GenerateMigration compares
// the declarations with to write only what is new.
type Snapshot struct {
	Resources []SnapshotResource `json:"resources"`
}

// SnapshotResource is one resource of a Snapshot.
type SnapshotResource struct {
	Name string `json:"name"`
	// SoftDelete and Owner name the resource's soft-delete and owner fields.
	SoftDelete string `json:"soft_delete,omitempty"`
	Owner      string `json:"owner,omitempty"`
	// Grants are the resource's default permissions per role
	// (Resource.DefaultGrants), as the roles table has been given them.
	Grants map[string][]resourceapi.Permission `json:"grants,omitempty"`
	Fields []SnapshotField                     `json:"fields"`
}

// SnapshotField is one field of a SnapshotResource or of its items.
type SnapshotField struct {
	Name string `json:"name"`
	// Type is "integer", "string", "boolean", "timestamp", "strings" or
	// "items".
	Type string `json:"type"`
	// NotNull: the field is the id, required, or not nullable.
	NotNull bool `json:"not_null,omitempty"`
	// Default is the field's declared default as JSON (none for a
	// timestamp): the column's DEFAULT, which a column added to a table of
	// existing records gives them.
	Default    json.RawMessage `json:"default,omitempty"`
	Secret     bool            `json:"secret,omitempty"`
	Unique     bool            `json:"unique,omitempty"`
	References string          `json:"references,omitempty"`
	Restrict   bool            `json:"restrict,omitempty"`
	Range      *SnapshotRange  `json:"range,omitempty"`
	Enum       []string        `json:"enum,omitempty"`
	// Indexed: the field is sortable or compared for equality by a filter,
	// so an index serves it.
	Indexed    bool `json:"indexed,omitempty"`
	Searchable bool `json:"searchable,omitempty"`
	// Contains lists the values a FilterContains filter selects by (an
	// index each on SQLite, one for all on PostgreSQL).
	Contains      []string       `json:"contains,omitempty"`
	DecidesAccess bool           `json:"decides_access,omitempty"`
	Items         *SnapshotItems `json:"items,omitempty"`
}

// SnapshotRange is a field's Range.
type SnapshotRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// SnapshotItems is the items table of a TypeItems field.
type SnapshotItems struct {
	Table  string          `json:"table"`
	Key    string          `json:"key"`
	Fields []SnapshotField `json:"fields"`
}

var typeNames = map[resourceapi.FieldType]string{
	resourceapi.TypeInt:     "integer",
	resourceapi.TypeString:  "string",
	resourceapi.TypeBool:    "boolean",
	resourceapi.TypeTime:    "timestamp",
	resourceapi.TypeStrings: "strings",
	resourceapi.TypeItems:   "items",
}

// SnapshotOf returns the snapshot of resources: what migrations that
// follow them have made.
func SnapshotOf(resources []*resourceapi.Resource) *Snapshot {
	s := &Snapshot{Resources: []SnapshotResource{}}
	for _, res := range resources {
		r := SnapshotResource{Name: res.Name, SoftDelete: res.SoftDelete, Owner: res.Access.Owner, Fields: []SnapshotField{}}
		if g := res.DefaultGrants(); len(g) > 0 {
			r.Grants = g
		}
		for i := range res.Fields {
			f := &res.Fields[i]
			if f.Transient {
				continue // never stored
			}
			sf := snapshotField(f)
			sf.NotNull = sf.NotNull || f.Name == "id"
			sf.Searchable = f.Searchable && !f.WriteOnly
			sf.Indexed = f.Sortable
			for _, flt := range res.Filters {
				if flt.Field != f.Name {
					continue
				}
				switch {
				case flt.Kind == resourceapi.FilterEqual && f.Name != "id": // the primary key serves id
					sf.Indexed = true
				case flt.Kind == resourceapi.FilterContains:
					sf.Contains = append(sf.Contains, flt.Values...)
				}
			}
			if f.Items != nil {
				sf.Items = &SnapshotItems{Table: f.Items.Table, Key: f.Items.Key, Fields: []SnapshotField{}}
				for j := range f.Items.Fields {
					sf.Items.Fields = append(sf.Items.Fields, snapshotField(&f.Items.Fields[j]))
				}
			}
			r.Fields = append(r.Fields, sf)
		}
		s.Resources = append(s.Resources, r)
	}
	return s
}

// snapshotField returns what a field's column follows from.
func snapshotField(f *resourceapi.Field) SnapshotField {
	sf := SnapshotField{
		Name: f.Name, Type: typeNames[f.Type], NotNull: f.Required || !f.Nullable,
		Secret: f.Secret != resourceapi.NotSecret, Unique: f.Unique, References: f.References, Restrict: f.Restrict,
		Enum: slices.Clone(f.Enum), DecidesAccess: f.DecidesAccess,
	}
	if f.Range != nil {
		sf.Range = &SnapshotRange{f.Range.Min, f.Range.Max}
	}
	if f.Default != nil && !f.Computed {
		// A computed field's default is the rule layer's (a new security
		// stamp each time), never a column's. A timestamp's default is the time it is taken: a column's DEFAULT
		// cannot hold it.
		if v := f.Default(); v != nil {
			if _, isTime := v.(time.Time); !isTime {
				b, err := json.Marshal(v)
				if err != nil {
					panic(fmt.Sprintf("field %s: default %v: %v", f.Name, v, err)) // a declaration's values are JSON values
				}
				sf.Default = b
			}
		}
	}
	return sf
}

// JSON returns the snapshot as the file SnapshotFile holds it: a field to
// a line, so that a change of the declarations is a short diff.
func (s *Snapshot) JSON() []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"resources\": [")
	for i, r := range s.Resources {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n    {\n")
		writeMember(&b, "name", r.Name)
		if r.SoftDelete != "" {
			writeMember(&b, "soft_delete", r.SoftDelete)
		}
		if r.Owner != "" {
			writeMember(&b, "owner", r.Owner)
		}
		if r.Grants != nil {
			writeMember(&b, "grants", r.Grants)
		}
		b.WriteString("      \"fields\": [")
		for j, f := range r.Fields {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n        ")
			b.Write(mustJSON(f))
		}
		b.WriteString("\n      ]\n    }")
	}
	b.WriteString("\n  ]\n}\n")
	return b.Bytes()
}

// writeMember writes a member of a resource that fields follow.
func writeMember(b *bytes.Buffer, name string, v any) {
	b.WriteString("      " + string(mustJSON(name)) + ": ")
	b.Write(mustJSON(v))
	b.WriteString(",\n")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain values only
	}
	return b
}

// ParseSnapshot reads a snapshot from its JSON.
func ParseSnapshot(b []byte) (*Snapshot, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("snapshot of the declarations: %w", err)
	}
	var check func(res string, fields []SnapshotField) error
	check = func(res string, fields []SnapshotField) error {
		for _, f := range fields {
			if !slices.Contains(slices.Collect(maps.Values(typeNames)), f.Type) || (f.Type == "items") != (f.Items != nil) {
				return fmt.Errorf("snapshot of the declarations: %s.%s: bad type %q", res, f.Name, f.Type)
			}
			if f.Items != nil {
				if err := check(res+"."+f.Name, f.Items.Fields); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range s.Resources {
		if err := check(r.Name, r.Fields); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// ReadSnapshot reads SnapshotFile from a migrations directory.
func ReadSnapshot(migrations fs.FS) (*Snapshot, error) {
	b, err := fs.ReadFile(migrations, SnapshotFile)
	if err != nil {
		return nil, err
	}
	return ParseSnapshot(b)
}

// resource returns the resource named name, or nil.
func (s *Snapshot) resource(name string) *SnapshotResource {
	for i := range s.Resources {
		if s.Resources[i].Name == name {
			return &s.Resources[i]
		}
	}
	return nil
}

// field returns the field named name, or nil.
func (r *SnapshotResource) field(name string) *SnapshotField {
	return fieldNamed(r.Fields, name)
}

func fieldNamed(fields []SnapshotField, name string) *SnapshotField {
	for i := range fields {
		if fields[i].Name == name {
			return &fields[i]
		}
	}
	return nil
}
