package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

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
// case-insensitively: <name>_key holds the lower-cased value under a UNIQUE
// constraint, the same on every database.
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
		cvs = append(cvs, columnValue{key, strings.ToLower(s)})
	}
	return cvs
}

// columns is the select list of a resource's visible fields and how to scan
// a row of it into a record.
type columns struct {
	list   string
	fields []*resourceapi.Field
}

var columnsCache sync.Map // *resourceapi.Resource -> *columns

func readColumns(res *resourceapi.Resource) *columns {
	if c, ok := columnsCache.Load(res); ok {
		return c.(*columns)
	}
	c := &columns{}
	var names []string
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.WriteOnly {
			continue
		}
		c.fields = append(c.fields, f)
		names = append(names, column(f))
	}
	c.list = join(names)
	columnsCache.Store(res, c)
	return c
}

type scanner interface{ Scan(dest ...any) error }

// scan reads a row of the columns into a record. When total is not nil, the
// row ends with one more column, a count, scanned into it.
func (c *columns) scan(row scanner, total *int) (resourceapi.Record, error) {
	dest := make([]any, len(c.fields), len(c.fields)+1)
	vals := make([]value, len(c.fields))
	for i := range vals {
		vals[i].typ = c.fields[i].Type
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
	typ resourceapi.FieldType
	v   any
}

func (v *value) Scan(src any) error {
	if src == nil {
		v.v = nil
		if v.typ == resourceapi.TypeStrings {
			v.v = []string{}
		}
		return nil
	}
	switch v.typ {
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
		list := []string{}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("scan list: %w", err)
		}
		v.v = list
	default:
		return fmt.Errorf("scan into field type %v", v.typ)
	}
	return nil
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

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
