// Package sqlstore implements resourceapi.Store once, over database/sql, for
// the SQL databases the service supports. Package sqlite and package postgres
// each supply what differs (a Dialect, connections, the write path and
// migrations); the queries, built only from resource declarations, live here.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/resourceapi/resourceapi"
)

// Dialect is what differs between the SQL databases behind the store.
type Dialect interface {
	// Placeholder returns the bind parameter for the n-th argument (1-based).
	Placeholder(n int) string
	// Time converts a timestamp to the value stored in a time column.
	Time(t time.Time) any
	// Search returns a condition matching records of res whose searchable
	// fields contain s, case-insensitively and literally (no wildcards).
	Search(q *Query, res *resourceapi.Resource, s string) string
	// Contains returns a condition matching records whose list column (a JSON
	// array of strings) contains value.
	Contains(q *Query, column, value string) string
	// Unique reports whether err is a unique-constraint violation, and on
	// which column when the driver says.
	Unique(err error) (column string, ok bool)
	// LockRetain serialises the writes that check res's Retain invariant, on
	// databases where transactions could otherwise both pass the check.
	LockRetain(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource) error
	// InsertedID makes the id sequence of res skip past an id inserted
	// explicitly, so that later inserts never collide with it.
	InsertedID(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource, id int64) error
}

// Writer runs fn in a write transaction and commits it. It returns fn's error
// (with nothing committed) or the commit's. fn must use the context it is
// given for its statements, not the caller's: a writer may share the
// transaction with other callers (package sqlite groups commits), and one
// caller's cancellation must not interrupt the others' writes.
type Writer interface {
	Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
}

// TxWriter is the plain Writer: one database transaction per call.
type TxWriter struct{ DB *sql.DB }

// Write implements Writer.
func (w TxWriter) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := w.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Store implements resourceapi.Store on a SQL database.
type Store struct {
	read    *sql.DB
	writer  Writer
	dialect Dialect
	now     resourceapi.Clock
}

var _ resourceapi.Store = (*Store)(nil)

// New returns a Store that reads through read, writes through w and takes
// timestamps from now (time.Now when nil).
func New(read *sql.DB, w Writer, d Dialect, now resourceapi.Clock) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{read: read, writer: w, dialect: d, now: now}
}

// Ping implements resourceapi.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// List implements resourceapi.Store.
func (s *Store) List(ctx context.Context, res *resourceapi.Resource, lq resourceapi.ListQuery) (resourceapi.Page, error) {
	// One read transaction, so that the total and the page agree.
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: begin: %w", res.Name, err)
	}
	defer tx.Rollback()

	count := s.newQuery()
	count.WriteString("SELECT count(*) FROM " + res.Name)
	count.where(res, lq)
	var page resourceapi.Page
	if err := tx.QueryRowContext(ctx, count.String(), count.args...).Scan(&page.Total); err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: count: %w", res.Name, err)
	}
	if lq.Offset() >= page.Total {
		page.Records = []resourceapi.Record{}
		return page, tx.Commit()
	}

	q := s.newQuery()
	cols := readColumns(res)
	q.WriteString("SELECT " + cols.list + " FROM " + res.Name)
	q.where(res, lq)
	dir := " ASC"
	if lq.Desc {
		dir = " DESC"
	}
	// The sort field comes from the declaration (ParseListQuery checked it),
	// never from the request's text.
	sortCol := column(res.Field(lq.Sort))
	q.WriteString(" ORDER BY " + sortCol + dir)
	if sortCol != "id" {
		q.WriteString(", id" + dir)
	}
	q.WriteString(" LIMIT " + q.Arg(lq.Limit) + " OFFSET " + q.Arg(lq.Offset()))

	rows, err := tx.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: %w", res.Name, err)
	}
	defer rows.Close()
	page.Records = make([]resourceapi.Record, 0, lq.Limit)
	for rows.Next() {
		rec, err := cols.scan(rows)
		if err != nil {
			return resourceapi.Page{}, fmt.Errorf("list %s: %w", res.Name, err)
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return resourceapi.Page{}, fmt.Errorf("list %s: %w", res.Name, err)
	}
	return page, tx.Commit()
}

// Get implements resourceapi.Store.
func (s *Store) Get(ctx context.Context, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	rec, err := s.get(ctx, s.read, res, id)
	if err != nil {
		return nil, fmt.Errorf("get %s %d: %w", res.Singular, id, err)
	}
	if rec == nil {
		return nil, notFound(res)
	}
	return rec, nil
}

// queryer is what reads need: a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// get returns the record, or nil when it does not exist.
func (s *Store) get(ctx context.Context, db queryer, res *resourceapi.Resource, id int64) (resourceapi.Record, error) {
	cols := readColumns(res)
	row := db.QueryRowContext(ctx, "SELECT "+cols.list+" FROM "+res.Name+" WHERE id = "+s.dialect.Placeholder(1), id)
	rec, err := cols.scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return rec, err
}

// Create implements resourceapi.Store.
func (s *Store) Create(ctx context.Context, res *resourceapi.Resource, rec resourceapi.Record) (resourceapi.Record, error) {
	var out resourceapi.Record
	err := s.writer.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := s.insert(ctx, tx, res, 0, rec)
		if err != nil {
			return err
		}
		out, err = s.get(ctx, tx, res, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", res.Singular, err)
	}
	return out, nil
}

// Replace implements resourceapi.Store.
func (s *Store) Replace(ctx context.Context, res *resourceapi.Resource, id int64, rec resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, bool, error) {
	var out resourceapi.Record
	var created bool
	err := s.writer.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		created = false
		cur, err := s.current(ctx, tx, res, id, rec)
		if err != nil {
			return err
		}
		if cond != nil {
			if err := cond(cur); err != nil {
				return err
			}
		}
		if cur == nil {
			created = true
			if _, err := s.insert(ctx, tx, res, id, rec); err != nil {
				return err
			}
		} else if err := s.update(ctx, tx, res, cur, rec); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, res, id)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("replace %s %d: %w", res.Singular, id, err)
	}
	return out, created, nil
}

// Update implements resourceapi.Store.
func (s *Store) Update(ctx context.Context, res *resourceapi.Resource, id int64, patch resourceapi.Record, cond resourceapi.Condition) (resourceapi.Record, error) {
	var out resourceapi.Record
	err := s.writer.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := s.current(ctx, tx, res, id, patch)
		if err != nil {
			return err
		}
		if cond != nil {
			if err := cond(cur); err != nil {
				return err
			}
		}
		if cur == nil {
			return notFound(res)
		}
		if err := s.update(ctx, tx, res, cur, patch); err != nil {
			return err
		}
		out, err = s.get(ctx, tx, res, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update %s %d: %w", res.Singular, id, err)
	}
	return out, nil
}

// Delete implements resourceapi.Store.
func (s *Store) Delete(ctx context.Context, res *resourceapi.Resource, id int64, cond resourceapi.Condition) error {
	err := s.writer.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := s.current(ctx, tx, res, id, nil)
		if err != nil {
			return err
		}
		if cond != nil {
			if err := cond(cur); err != nil {
				return err
			}
		}
		if cur == nil {
			return notFound(res)
		}
		if err := s.checkRetain(ctx, tx, res, cur, nil); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM "+res.Name+" WHERE id = "+s.dialect.Placeholder(1), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %s %d: %w", res.Singular, id, err)
	}
	return nil
}

// current reads the record a write is about to change, taking the Retain lock
// first when the write could break the invariant, so that the check that
// follows sees every committed change.
func (s *Store) current(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource, id int64, change resourceapi.Record) (resourceapi.Record, error) {
	if res.Retain != nil && touchesRetain(res, change) {
		if err := s.dialect.LockRetain(ctx, tx, res); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
	}
	return s.get(ctx, tx, res, id)
}

// touchesRetain reports whether a write of change (nil for a delete) can
// change whether a record holds the Retain value.
func touchesRetain(res *resourceapi.Resource, change resourceapi.Record) bool {
	if change == nil {
		return true
	}
	_, roles := change[res.Retain.Field]
	_, deleted := change[res.SoftDelete]
	return roles || (res.SoftDelete != "" && deleted)
}

// checkRetain fails with CodeUnprocessable when turning before into after
// (nil: deleted) leaves no active record holding the Retain value.
func (s *Store) checkRetain(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource, before, after resourceapi.Record) error {
	if !res.Holds(before) || res.Holds(after) {
		return nil
	}
	q := s.newQuery()
	q.WriteString("SELECT count(*) FROM " + res.Name + " WHERE id <> " + q.Arg(before.ID()))
	if res.SoftDelete != "" {
		q.WriteString(" AND " + column(res.Field(res.SoftDelete)) + " = " + q.Arg(false))
	}
	q.WriteString(" AND " + s.dialect.Contains(q, column(res.Field(res.Retain.Field)), res.Retain.Value))
	var others int
	if err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&others); err != nil {
		return fmt.Errorf("check %s: %w", res.Retain.Value, err)
	}
	if others == 0 {
		return resourceapi.Errorf(resourceapi.CodeUnprocessable, "%s", res.Retain.Message)
	}
	return nil
}

// insert adds rec with the given id (0: the next from the sequence), taking
// declared defaults for absent fields, and returns the id.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource, id int64, rec resourceapi.Record) (int64, error) {
	now := resourceapi.Timestamp(s.now())
	q := s.newQuery()
	var cols, vals []string
	if id != 0 {
		cols, vals = append(cols, "id"), append(vals, q.Arg(id))
	}
	full := make(resourceapi.Record, len(res.Fields))
	for i := range res.Fields {
		f := &res.Fields[i]
		if f.ReadOnly {
			continue
		}
		v, ok := rec[f.Name]
		if !ok {
			v = f.DefaultValue()
		}
		full[f.Name] = v
		for _, c := range writeColumns(f, v) {
			cols, vals = append(cols, c.name), append(vals, q.Arg(s.value(c.value)))
		}
	}
	cols = append(cols, "created_at", "updated_at")
	vals = append(vals, q.Arg(s.dialect.Time(now)), q.Arg(s.dialect.Time(now)))
	q.WriteString("INSERT INTO " + res.Name + " (" + join(cols) + ") VALUES (" + join(vals) + ") RETURNING id")
	var newID int64
	if err := tx.QueryRowContext(ctx, q.String(), q.args...).Scan(&newID); err != nil {
		return 0, s.writeError(res, err)
	}
	if id != 0 {
		if err := s.dialect.InsertedID(ctx, tx, res, id); err != nil {
			return 0, fmt.Errorf("sequence: %w", err)
		}
	}
	return newID, nil
}

// update writes the fields present in change over cur.
func (s *Store) update(ctx context.Context, tx *sql.Tx, res *resourceapi.Resource, cur, change resourceapi.Record) error {
	after := make(resourceapi.Record, len(cur))
	for k, v := range cur {
		after[k] = v
	}
	q := s.newQuery()
	var sets []string
	for i := range res.Fields {
		f := &res.Fields[i]
		v, ok := change[f.Name]
		if f.ReadOnly || !ok {
			continue
		}
		after[f.Name] = v
		for _, c := range writeColumns(f, v) {
			sets = append(sets, c.name+" = "+q.Arg(s.value(c.value)))
		}
	}
	if err := s.checkRetain(ctx, tx, res, cur, after); err != nil {
		return err
	}
	now := resourceapi.Timestamp(s.now())
	sets = append(sets, "updated_at = "+q.Arg(s.dialect.Time(now)))
	q.WriteString("UPDATE " + res.Name + " SET " + join(sets) + " WHERE id = " + q.Arg(cur.ID()))
	if _, err := tx.ExecContext(ctx, q.String(), q.args...); err != nil {
		return s.writeError(res, err)
	}
	return nil
}

// value converts a record value to what the driver stores.
func (s *Store) value(v any) any {
	switch v := v.(type) {
	case time.Time:
		return s.dialect.Time(v)
	case []string:
		return encodeStrings(v)
	}
	return v
}

// writeError turns a unique violation into CodeConflict naming the field.
func (s *Store) writeError(res *resourceapi.Resource, err error) error {
	col, ok := s.dialect.Unique(err)
	if !ok {
		return err
	}
	for _, f := range res.Fields {
		if f.Unique && (col == "" || col == column(&f) || col == keyColumn(&f)) {
			return &resourceapi.Error{
				Code:    resourceapi.CodeConflict,
				Message: fmt.Sprintf("A %s with this %s already exists", res.Singular, f.Name),
				Details: []resourceapi.FieldError{{Field: f.Name, Message: "is already taken"}},
			}
		}
	}
	if col == "id" {
		return resourceapi.Errorf(resourceapi.CodeConflict, "A %s with this id already exists", res.Singular)
	}
	return resourceapi.Errorf(resourceapi.CodeConflict, "The %s conflicts with an existing one", res.Singular)
}

func notFound(res *resourceapi.Resource) error {
	return resourceapi.Errorf(resourceapi.CodeNotFound, "%s not found", capitalize(res.Singular))
}
