package postgres

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourceapi/resourceapi"
	"github.com/resourceapi/resourceapi/sqlstore"
)

// scanFields scans the current row of r into dest as r.Scan would, except
// that the columns of a record (sqlstore.FieldValue) of the common types
// are decoded from the row's bytes straight into their field's Go type:
// pgx's own path plans a scan for every column of every statement's rows,
// decodes each value into a Go value of its own (boxed), and hands it to
// the field's sql.Scanner to convert again. Null, and any column of
// another type or format, takes that path.
//
// text, when not nil, holds the bytes of the row's text columns (rows of
// a page: one allocation for many strings, see textArena). Within a row,
// a time equal to the one before it (updated_at of a record never updated
// after its creation) shares that time's value: a time in an interface is
// an allocation of its own.
func scanFields(r pgx.Rows, dest []any, text *textArena) error {
	fds := r.FieldDescriptions()
	raw := r.RawValues()
	if len(fds) != len(dest) || len(raw) != len(dest) {
		return r.Scan(dest...) // pgx reports the mismatch
	}
	var m *pgtype.Map
	var lastTime []byte // the raw value of the row's last time decoded
	var lastTimeV any
	for i, d := range dest {
		if fv, ok := d.(sqlstore.FieldValue); ok && raw[i] != nil {
			f := fv.Field()
			if text != nil && f.Type == resourceapi.TypeString && (fds[i].DataTypeOID == pgtype.TextOID || fds[i].DataTypeOID == pgtype.VarcharOID) {
				fv.Set(text.String(raw[i]))
				continue
			}
			if f.Type == resourceapi.TypeTime && lastTime != nil && fds[i].DataTypeOID == pgtype.TimestamptzOID &&
				fds[i].Format == pgx.BinaryFormatCode && bytes.Equal(raw[i], lastTime) {
				fv.Set(lastTimeV)
				continue
			}
			if v, ok := decodeField(f, &fds[i], raw[i], text); ok {
				if f.Type == resourceapi.TypeTime && fds[i].DataTypeOID == pgtype.TimestamptzOID && fds[i].Format == pgx.BinaryFormatCode {
					lastTime, lastTimeV = raw[i], v
				}
				fv.Set(v)
				continue
			}
		}
		if m == nil {
			m = r.Conn().TypeMap()
		}
		if err := m.Scan(fds[i].DataTypeOID, fds[i].Format, raw[i], d); err != nil {
			return pgx.ScanArgError{ColumnIndex: i, FieldName: fds[i].Name, Err: err}
		}
	}
	return nil
}

// textArena makes the strings of the text columns of a statement's rows
// out of a few shared arrays instead of one allocation each: a page of 20
// users has 40 (name and email). A string is a view of bytes appended to
// the current array, which are never written again (unsafe.String); a
// full array is left to the strings made of it and a new one taken. The
// strings of a page's records live as long as the page; a long string
// gets an array of its own, so that keeping it keeps nothing else.
// Lists (roles, permissions) take their strings from it too, and their
// slices from an array of strings of its own, each slice's capacity its
// length (appending to one copies it).
type textArena struct {
	buf   []byte
	lists []string
}

// textChunk is the size of a textArena's arrays: the names and emails of
// a page of 20 users take about 700 bytes.
const textChunk = 1024

// Strings implements sqlstore.StringMaker.
func (a *textArena) Strings(n int) []string {
	if n > 8 {
		return make([]string, n)
	}
	if cap(a.lists)-len(a.lists) < n {
		a.lists = make([]string, 0, 64)
	}
	start := len(a.lists)
	a.lists = a.lists[:start+n]
	return a.lists[start : start+n : start+n]
}

// String implements sqlstore.StringMaker.
func (a *textArena) String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > textChunk/4 {
		return string(b)
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		a.buf = make([]byte, 0, textChunk)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}

// hasFields reports whether dest holds a record's column.
func hasFields(dest []any) bool {
	for _, d := range dest {
		if _, ok := d.(sqlstore.FieldValue); ok {
			return true
		}
	}
	return false
}

// y2k is PostgreSQL's epoch of timestamps, in Unix seconds.
const y2k = 946_684_800

// noStrings is an empty list of strings in an interface, made once: most
// users' roles and permissions are empty, and putting a new empty slice
// in an interface allocates its header. Appending to it makes a new
// array; it has no element to change.
var noStrings any = []string{}

// decodeField returns the value of a column of f, not null, in the Go type
// of f's type, or false when the column's type or format is not one it
// decodes (the caller then scans it as pgx does).
//
// text, when not nil, makes the strings of a list (see scanFields).
func decodeField(f *resourceapi.Field, fd *pgconn.FieldDescription, raw []byte, text *textArena) (any, bool) {
	binaryFormat := fd.Format == pgx.BinaryFormatCode
	switch f.Type {
	case resourceapi.TypeString:
		switch fd.DataTypeOID {
		case pgtype.TextOID, pgtype.VarcharOID: // the same bytes in both formats
			return string(raw), true
		}
	case resourceapi.TypeInt:
		if !binaryFormat {
			switch fd.DataTypeOID {
			case pgtype.Int8OID, pgtype.Int4OID, pgtype.Int2OID:
				if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
					return n, true
				}
			}
			return nil, false
		}
		switch {
		case fd.DataTypeOID == pgtype.Int8OID && len(raw) == 8:
			return int64(binary.BigEndian.Uint64(raw)), true
		case fd.DataTypeOID == pgtype.Int4OID && len(raw) == 4:
			return int64(int32(binary.BigEndian.Uint32(raw))), true
		case fd.DataTypeOID == pgtype.Int2OID && len(raw) == 2:
			return int64(int16(binary.BigEndian.Uint16(raw))), true
		}
	case resourceapi.TypeBool:
		if fd.DataTypeOID == pgtype.BoolOID && binaryFormat && len(raw) == 1 {
			return raw[0] != 0, true
		}
	case resourceapi.TypeTime:
		if fd.DataTypeOID == pgtype.TimestamptzOID && binaryFormat && len(raw) == 8 {
			us := int64(binary.BigEndian.Uint64(raw))
			if us == math.MaxInt64 || us == math.MinInt64 {
				return nil, false // infinity: pgx's error
			}
			t := time.Unix(y2k+us/1_000_000, us%1_000_000*1_000)
			return resourceapi.Timestamp(t), true
		}
	case resourceapi.TypeStrings:
		doc := raw
		switch {
		case fd.DataTypeOID == pgtype.JSONBOID && binaryFormat:
			if len(raw) == 0 || raw[0] != 1 { // jsonb's binary format: a version, then the text
				return nil, false
			}
			doc = raw[1:]
		case fd.DataTypeOID == pgtype.JSONBOID, fd.DataTypeOID == pgtype.JSONOID:
		default:
			return nil, false
		}
		var list []string
		var err error
		if text != nil {
			list, err = sqlstore.DecodeStringsWith(doc, text)
		} else {
			list, err = sqlstore.DecodeStrings(doc)
		}
		if err != nil {
			return nil, false // the Scan path reports it
		}
		if len(list) == 0 {
			return noStrings, true
		}
		return list, true
	}
	return nil, false
}

// row is sqlstore.Row of a query's rows, as pgx's QueryRow: its first
// row, scanned by scanFields when it holds a record's columns.
type row struct {
	rows pgx.Rows
	err  error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := (&rows{Rows: r.rows}).Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
