package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/resourceapi/resourceapi"
)

// column returns the column that stores field f. A secret is stored only as
// its hash, in <name>_hash.
func column(f *resourceapi.Field) string {
	if f.Secret != resourceapi.NotSecret {
		return f.Name + "_hash"
	}
	return f.Name
}

// keyColumn returns the column that enforces a unique string field
// case-insensitively: <name>_key holds resourceapi.UniqueKey of the value
// (NFC, lower-cased) under a UNIQUE constraint, the same on every database.
func keyColumn(f *resourceapi.Field) string {
	if f.Unique && f.Type == resourceapi.TypeString {
		return f.Name + "_key"
	}
	return ""
}

type columnValue struct {
	name  string
	value any
}

// writeColumns returns the columns a write of v to field f sets.
func writeColumns(f *resourceapi.Field, v any) []columnValue {
	cvs := []columnValue{{column(f), v}}
	if key := keyColumn(f); key != "" {
		s, _ := v.(string)
		cvs = append(cvs, columnValue{key, resourceapi.UniqueKey(s)})
	}
	return cvs
}

// columns is the select list of a resource's visible fields and how to scan
// a row of it into a record.
type columns struct {
	list   string
	fields []*resourceapi.Field
	// byID is the statement of a read of one record by id (Store.get
	// without a suffix), built once: without the identity version, and
	// with it (versionColumn).
	byID [2]string
}

// readColumns returns the columns a read of res selects: every visible
// field, items as a JSON aggregate of their table (see Dialect.Items).
func (s *Store) readColumns(res *resourceapi.Resource) *columns {
	return s.columnSet(res).read
}

// writeColumns returns the columns a write of res returns: the visible fields
// stored in res's own table (the write knows the items it wrote).
func (s *Store) returnColumns(res *resourceapi.Resource) *columns {
	return s.columnSet(res).write
}

type columnSet struct{ read, write *columns }

// itemsColumn is the expression, over a row of res's table, whose value is
// the JSON array of the items of field f, in order, each object with the
// item fields by name.
func (s *Store) itemsColumn(res *resourceapi.Resource, f *resourceapi.Field) string {
	var kv []string
	for _, sub := range f.Items.Fields {
		kv = append(kv, "'"+sub.Name+"', "+sub.Name)
	}
	return "(SELECT " + s.dialect.ObjectArray(join(kv), "position") + " FROM " + f.Items.Table +
		" WHERE " + f.Items.Key + " = " + res.Name + ".id)"
}

func (s *Store) columnSet(res *resourceapi.Resource) columnSet {
	if c, ok := s.columns.Load(res); ok {
		return c.(columnSet)
	}
	read, write := &columns{}, &columns{}
	var readNames, writeNames []string
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.WriteOnly {
			continue
		}
		read.fields = append(read.fields, f)
		if f.Type == resourceapi.TypeItems {
			readNames = append(readNames, s.itemsColumn(res, f))
			continue
		}
		readNames = append(readNames, column(f))
		write.fields = append(write.fields, f)
		writeNames = append(writeNames, column(f))
	}
	read.list, write.list = join(readNames), join(writeNames)
	for i, version := range []string{"", ", " + s.dialect.IdentityVersion()} {
		read.byID[i] = "SELECT " + read.list + version + " FROM " + res.Name + " WHERE id = " + s.dialect.Placeholder(1)
	}
	set := columnSet{read, write}
	s.columns.Store(res, set)
	return set
}

type scanner interface{ Scan(dest ...any) error }

// scan reads a row of the columns into a record. When total is not nil, the
// row ends with one more column, a count, scanned into it.
func (c *columns) scan(row scanner, total *int) (resourceapi.Record, error) {
	dest := make([]any, len(c.fields), len(c.fields)+1)
	vals := make([]value, len(c.fields))
	for i := range vals {
		vals[i].f = c.fields[i]
		dest[i] = &vals[i]
	}
	if total != nil {
		dest = append(dest, total)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	rec := make(resourceapi.Record, len(c.fields))
	for i, f := range c.fields {
		rec[f.Name] = vals[i].v
	}
	return rec, nil
}

// value scans one column into the Go type of its field's type.
type value struct {
	f *resourceapi.Field
	v any
}

// FieldValue is implemented by the destinations that a record's columns
// are scanned into (Rows.Scan, Row.Scan): a driver that can decode a
// column straight into the Go type of the field's type (see
// resourceapi.Record) may Set it, instead of handing Scan a value of its
// own to convert; anything else, null included, goes to Scan.
type FieldValue interface {
	sql.Scanner
	// Field is the field the column holds.
	Field() *resourceapi.Field
	// Set sets the field's value, already of its type's Go type.
	Set(v any)
}

var _ FieldValue = (*value)(nil)

func (v *value) Field() *resourceapi.Field { return v.f }
func (v *value) Set(x any)                 { v.v = x }

func (v *value) Scan(src any) error {
	if src == nil {
		v.v = nil
		switch v.f.Type {
		case resourceapi.TypeStrings:
			v.v = []string{}
		case resourceapi.TypeItems:
			v.v = []resourceapi.Record{}
		}
		return nil
	}
	switch v.f.Type {
	case resourceapi.TypeInt:
		var n sql.NullInt64
		if err := n.Scan(src); err != nil {
			return err
		}
		v.v = n.Int64
	case resourceapi.TypeString:
		switch s := src.(type) {
		case string:
			v.v = s
		case []byte:
			v.v = string(s)
		default:
			return fmt.Errorf("scan %T into string", src)
		}
	case resourceapi.TypeBool:
		var b sql.NullBool
		if err := b.Scan(src); err != nil {
			return err
		}
		v.v = b.Bool
	case resourceapi.TypeTime:
		switch t := src.(type) {
		case int64: // SQLite: Unix milliseconds
			v.v = time.UnixMilli(t).UTC()
		case time.Time:
			v.v = resourceapi.Timestamp(t)
		default:
			return fmt.Errorf("scan %T into time", src)
		}
	case resourceapi.TypeStrings:
		var raw []byte
		switch s := src.(type) {
		case string:
			raw = []byte(s)
		case []byte:
			raw = s
		default:
			return fmt.Errorf("scan %T into list", src)
		}
		list, err := DecodeStrings(raw)
		if err != nil {
			return fmt.Errorf("scan list: %w", err)
		}
		v.v = list
	case resourceapi.TypeItems:
		var raw []byte
		switch s := src.(type) {
		case string:
			raw = []byte(s)
		case []byte:
			raw = s
		default:
			return fmt.Errorf("scan %T into items", src)
		}
		items, err := scanItems(v.f.Items, raw)
		if err != nil {
			return fmt.Errorf("scan items: %w", err)
		}
		v.v = items
	default:
		return fmt.Errorf("scan into field type %v", v.f.Type)
	}
	return nil
}

// DecodeStrings decodes a stored list, a JSON array of strings
// (EncodeStrings; PostgreSQL's jsonb prints a space after each comma), as
// json.Unmarshal into a []string{} does. The common case, strings without
// escapes, is read here without encoding/json's reflection (it was 7% of
// the server's CPU for a page of 20 users); anything else goes to
// json.Unmarshal. Drivers that decode a list's column themselves
// (FieldValue) use it too.
func DecodeStrings(raw []byte) ([]string, error) {
	if list, ok := plainStrings(raw); ok {
		return list, nil
	}
	list := []string{}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// StringMaker makes the strings and the list that DecodeStringsWith
// returns, where a driver can make them for many rows at once.
type StringMaker interface {
	// String returns a string of b's bytes, which it must not keep.
	String(b []byte) string
	// Strings returns a list of n strings whose capacity is n.
	Strings(n int) []string
}

// DecodeStringsWith is DecodeStrings with its strings and list made by m,
// for a list without escapes (anything else is DecodeStrings').
func DecodeStringsWith(raw []byte, m StringMaker) ([]string, error) {
	n, ok := scanPlain(raw, nil)
	if !ok {
		return DecodeStrings(raw)
	}
	list := m.Strings(n)
	i := 0
	scanPlain(raw, func(b []byte) {
		list[i] = m.String(b)
		i++
	})
	return list, nil
}

// plainStrings reads raw as a JSON array of strings that hold no escape, no
// control character and only valid UTF-8 (which json.Unmarshal would
// replace); ok is false for anything else.
func plainStrings(raw []byte) (list []string, ok bool) {
	list = []string{}
	if _, ok := scanPlain(raw, func(b []byte) { list = append(list, string(b)) }); !ok {
		return nil, false
	}
	return list, true
}

// scanPlain reads raw as plainStrings does, calling elem (when not nil)
// with the bytes of each string in turn, and returns how many there are;
// ok is false for anything plainStrings refuses.
func scanPlain(raw []byte, elem func([]byte)) (n int, ok bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return 0, false
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == ']' {
		return 0, skipSpace(raw, i+1) == len(raw)
	}
	for {
		if i == len(raw) || raw[i] != '"' {
			return 0, false
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' || raw[j] < 0x20 {
				return 0, false
			}
			j++
		}
		if j == len(raw) || !utf8.Valid(raw[i+1:j]) {
			return 0, false
		}
		if elem != nil {
			elem(raw[i+1 : j])
		}
		n++
		if i = skipSpace(raw, j+1); i == len(raw) {
			return 0, false
		}
		switch raw[i] {
		case ']':
			return n, skipSpace(raw, i+1) == len(raw)
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return 0, false
		}
	}
}

// skipSpace returns the index of the first byte of raw from i on that is
// not JSON whitespace.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// scanItems reads the JSON array of objects Dialect.Items builds into records
// with values of the item fields' Go types.
func scanItems(decl *resourceapi.Items, raw []byte) ([]resourceapi.Record, error) {
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, err
	}
	items := make([]resourceapi.Record, len(objs))
	for i, obj := range objs {
		item := make(resourceapi.Record, len(decl.Fields))
		for j := range decl.Fields {
			f := &decl.Fields[j]
			m, ok := obj[f.Name]
			if !ok || string(m) == "null" {
				item[f.Name] = nil
				continue
			}
			var err error
			switch f.Type {
			case resourceapi.TypeInt:
				var n int64
				err = json.Unmarshal(m, &n)
				item[f.Name] = n
			case resourceapi.TypeString:
				var s string
				err = json.Unmarshal(m, &s)
				item[f.Name] = s
			case resourceapi.TypeBool:
				var n json.Number
				if err = json.Unmarshal(m, &n); err == nil { // SQLite: 0 or 1
					item[f.Name] = n != "0"
				} else {
					var b bool
					err = json.Unmarshal(m, &b)
					item[f.Name] = b
				}
			}
			if err != nil {
				return nil, fmt.Errorf("item field %s: %w", f.Name, err)
			}
		}
		items[i] = item
	}
	return items, nil
}

// EncodeStrings stores a list as a JSON array, which both SQLite (json_each)
// and PostgreSQL (jsonb containment) can search.
func EncodeStrings(list []string) string {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// timeField scans a timestamp column that belongs to no declared field.
var timeField = &resourceapi.Field{Type: resourceapi.TypeTime}
