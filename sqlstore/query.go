package sqlstore

import (
	"strings"

	"github.com/resourceapi/resourceapi"
)

// Query is a SQL text under construction with its bind arguments.
type Query struct {
	strings.Builder
	args    []any
	dialect Dialect
}

func (s *Store) newQuery() *Query { return &Query{dialect: s.dialect} }

// Arg binds v and returns its placeholder.
func (q *Query) Arg(v any) string {
	if list, ok := v.([]string); ok {
		v = EncodeStrings(list)
	}
	q.args = append(q.args, q.dialect.Value(v))
	return q.dialect.Placeholder(len(q.args))
}

// where appends the WHERE clause of a list query, with the conditions of
// extra, if any, as well. Only declared names reach the SQL text; every
// value is bound.
func (q *Query) where(res *resourceapi.Resource, lq resourceapi.ListQuery, extra ...string) {
	conds := extra
	for _, fv := range lq.Filters {
		switch fv.Filter.Kind {
		case resourceapi.FilterSoftDelete:
			col := column(res.Field(res.SoftDelete))
			conds = append(conds, col+" = "+q.dialect.Bool(fv.Value == resourceapi.StatusDeleted))
		case resourceapi.FilterContains:
			conds = append(conds, q.dialect.Contains(q, column(res.Field(fv.Filter.Field)), fv.Value.(string)))
		case resourceapi.FilterEqual:
			if b, ok := fv.Value.(bool); ok {
				// A literal, as for the soft-delete flag (Dialect.Bool): a
				// bound boolean would make SQLite re-plan for the partial
				// index of hidden records on every run.
				conds = append(conds, column(res.Field(fv.Filter.Field))+" = "+q.dialect.Bool(b))
				continue
			}
			conds = append(conds, column(res.Field(fv.Filter.Field))+" = "+q.Arg(fv.Value))
		}
	}
	if lq.Search != "" {
		conds = append(conds, q.dialect.Search(q, res, lq.Search))
	}
	if len(conds) > 0 {
		q.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
}

// SearchColumns returns the columns of res's searchable fields.
func SearchColumns(res *resourceapi.Resource) []string {
	var cols []string
	for i := range res.Fields {
		if f := &res.Fields[i]; f.Searchable && !f.WriteOnly {
			cols = append(cols, column(f))
		}
	}
	return cols
}

// LikePattern returns a LIKE pattern matching s as a literal substring, with
// backslash as the escape character.
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

func join(parts []string) string { return strings.Join(parts, ", ") }
