package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/resourceapi/resourceapi"
)

var _ resourceapi.BatchStore = (*Store)(nil)

// maxBatch bounds the ids one statement of GetMany or ListEach names; longer
// lists take a statement per maxBatch ids.
const maxBatch = 500

// GetMany implements resourceapi.BatchStore: the records it finds in the
// cache, and the others in one statement per maxBatch ids.
func (s *Store) GetMany(ctx context.Context, res *resourceapi.Resource, ids []int64) ([]resourceapi.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", res.Name, err)
	}
	ids = distinct(ids)
	out := make([]resourceapi.Record, 0, len(ids))
	var missing []int64
	var fills []fill
	for _, id := range ids {
		rec, _, f := s.cache.record(res, id)
		if rec != nil {
			out = append(out, rec)
			continue
		}
		missing = append(missing, id)
		fills = append(fills, f)
	}
	check := s.identityCheck(ctx)
	for len(missing) > 0 {
		n := min(len(missing), maxBatch)
		chunk := missing[:n]
		base := len(out)
		err := s.reader.Read(ctx, func(ctx context.Context, tx Querier) error {
			out = out[:base] // a read may run twice (DB.Lost)
			cols := s.readColumns(res)
			q := s.newQuery()
			q.WriteString("SELECT " + cols.list + s.versionColumn(check) + " FROM " + res.Name + " WHERE id IN (" + q.ints(chunk) + ")")
			rows, err := tx.QueryContext(ctx, q.String(), q.args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var sc rowScratch
			for rows.Next() {
				rec, err := s.scanRows(rows, cols, check, &sc)
				if err != nil {
					return err
				}
				out = append(out, rec)
				if i := slices.Index(chunk, rec.ID()); i >= 0 {
					s.cache.storeRecord(res, fills[i], rec)
				}
			}
			return rows.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", res.Name, err)
		}
		missing, fills = missing[n:], fills[n:]
	}
	return out, nil
}

// ListEach implements resourceapi.BatchStore with a window function: each
// value's records are numbered in the sort order, and the page of each is
// read in one statement (per maxBatch values). The cache keeps the result
// under the values and the query, as it keeps list pages.
func (s *Store) ListEach(ctx context.Context, res *resourceapi.Resource, field string, values []int64, lq resourceapi.ListQuery) ([]resourceapi.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", res.Name, err)
	}
	if err := lq.Check(res); err != nil {
		return nil, err
	}
	f := res.Field(field)
	if f == nil || f.Type != resourceapi.TypeInt {
		return nil, fmt.Errorf("list %s: cannot group by %q", res.Name, field)
	}
	if lq.Cursor != nil {
		// Each value's page would need a position of its own.
		return nil, fmt.Errorf("list %s: a batched list takes no cursor", res.Name)
	}
	values = distinct(values)
	var key string
	if s.cache != nil {
		b := make([]byte, 0, 16+8*len(values))
		b = append(b, "each|"...)
		b = append(b, field...)
		for _, v := range values {
			b = append(b, ',')
			b = strconv.AppendInt(b, v, 10)
		}
		key = string(append(append(b, '|'), listKey(lq)...))
	}
	cached, ok, fl := s.cache.page(res, key)
	if ok {
		return cached.Records, nil
	}
	var out []resourceapi.Record
	check := s.identityCheck(ctx)
	for rest := values; len(rest) > 0; {
		n := min(len(rest), maxBatch)
		chunk := rest[:n]
		rest = rest[n:]
		base := len(out)
		err := s.reader.Read(ctx, func(ctx context.Context, tx Querier) error {
			out = out[:base] // a read may run twice (DB.Lost)
			cols := s.readColumns(res)
			order := s.orderBy(res, lq.Sort, lq.Desc, lq.Search != "")
			q := s.newQuery()
			if l, ok := s.dialect.(LateralEach); ok && l.LateralEach() {
				// Each value's page is its own LIMIT/OFFSET read of the
				// index on (field, sort), the values one array: one
				// statement text (prepared once per connection) whatever
				// the values and their number.
				q.WriteString("SELECT page.*" + s.versionColumn(check) + " FROM unnest(" + q.Arg(chunk) +
					"::bigint[]) AS each_value CROSS JOIN LATERAL (SELECT " + cols.list + " FROM " + res.Name)
				q.where(res, lq, column(f)+" = each_value")
				q.WriteString(" ORDER BY " + order + " LIMIT " + q.Arg(int64(lq.Limit)) + " OFFSET " + q.Arg(int64(lq.Offset)) +
					") AS page ORDER BY " + column(f) + ", " + order)
			} else {
				// The inner query numbers each value's matching records in
				// the sort order; the outer reads the rows of each value's
				// page.
				q.WriteString("SELECT " + cols.list + s.versionColumn(check) + " FROM " + res.Name + " WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY " +
					column(f) + " ORDER BY " + order + ") AS rn FROM " + res.Name)
				q.where(res, lq, column(f)+" IN ("+q.ints(chunk)+")")
				q.WriteString(") AS numbered WHERE rn > " + q.Arg(int64(lq.Offset)) + " AND rn <= " + q.Arg(int64(lq.Offset+lq.Limit)) +
					") ORDER BY " + column(f) + ", " + order)
			}
			rows, err := tx.QueryContext(ctx, q.String(), q.args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var sc rowScratch
			for rows.Next() {
				rec, err := s.scanRows(rows, cols, check, &sc)
				if err != nil {
					return err
				}
				out = append(out, rec)
			}
			return rows.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", res.Name, err)
		}
	}
	if out == nil {
		out = []resourceapi.Record{}
	}
	s.cache.storePage(res, key, fl, resourceapi.Page{Records: out, Total: len(out)})
	return out, nil
}

// LateralEach is implemented by a Dialect whose database reads a batched
// list (ListEach) as one LIMIT/OFFSET read per value, the values bound as
// one array (PostgreSQL's unnest and LATERAL): the other form numbers every
// matching row with a window function and reads the page's rows again by
// id, and binds each value, so that each number of values is another
// statement to prepare.
type LateralEach interface {
	LateralEach() bool
}

// ints binds each of ids and returns their placeholders, comma-separated.
func (q *Query) ints(ids []int64) string {
	b := make([]byte, 0, 4*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, q.Arg(id)...)
	}
	return string(b)
}

// distinct returns ids without repetitions, in their first order.
func distinct(ids []int64) []int64 {
	seen := make(map[int64]struct{}, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

var _ resourceapi.Versioner = (*Store)(nil)

// Version implements resourceapi.Versioner with the cache's epochs, which
// every write moves before its commit can be seen and every foreign commit
// moves before a read can see it: ok only when the store has a cache (with
// ForeignCommits where others write).
func (s *Store) Version(res ...*resourceapi.Resource) (uint64, bool) {
	return s.cache.version(res)
}
