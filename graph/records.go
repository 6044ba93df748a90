package graph

import (
	"context"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/resourceapi/resourceapi"
)

// The generic resolvers: what every declared resource's generated fields
// (resources_gen.go, written by internal/graphgen from the declarations)
// call, with the resource as an argument. Like the resolvers of the
// specification's fields, they only translate: arguments into a call of the
// Service with the request's caller, records into values of the schema's
// types, and errors through the presenter's one table.
//
// A record of a generated type is a map from its GraphQL field names to
// their values (gqlgen's map models), with the record itself under
// recordKey, which no GraphQL name can be, for the fields that resolve
// from it (the record a reference names, the records nested under it).

// recordKey holds, in an object, the record it shows.
const recordKey = "-record"

// objectOf returns the GraphQL object of rec, a record of res: its shown
// fields under their camel-case names (graphgen.Camel), ids and references
// as decimal strings, timestamps as the service shows them; nil for nil.
func objectOf(res *resourceapi.Resource, rec resourceapi.Record) map[string]any {
	if rec == nil {
		return nil
	}
	obj := make(map[string]any, len(res.Fields)+1)
	obj[recordKey] = rec
	for i := range res.Fields {
		f := &res.Fields[i]
		if !shownField(f) {
			continue
		}
		if v := valueOf(f, rec[f.Name]); v != nil {
			obj[camel(f.Name)] = v
		}
	}
	return obj
}

// shownField reports whether f is a field of its resource's GraphQL type:
// a visible field, or a generated secret that the record of a create
// shows once (graphgen.Shown).
func shownField(f *resourceapi.Field) bool {
	return (!f.WriteOnly && !f.Internal) || (f.Generate != nil && f.Secret != resourceapi.NotSecret)
}

// valueOf converts a record's value of field f to its GraphQL value.
func valueOf(f *resourceapi.Field, v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case int64:
		if f.Name == "id" || f.References != "" {
			return strconv.FormatInt(v, 10)
		}
		return int(v)
	case time.Time:
		return resourceapi.Timestamp(v).Format(timeFormat)
	case []resourceapi.Record:
		if f.Items == nil {
			return nil
		}
		items := make([]map[string]any, len(v))
		for i, item := range v {
			obj := make(map[string]any, len(f.Items.Fields))
			for j := range f.Items.Fields {
				sub := &f.Items.Fields[j]
				if x := valueOf(sub, item[sub.Name]); x != nil {
					obj[camel(sub.Name)] = x
				}
			}
			items[i] = obj
		}
		return items
	}
	return v // string, bool, []string
}

// recordIn returns the record an object of a generated type shows.
func recordIn(obj map[string]any) resourceapi.Record {
	rec, _ := obj[recordKey].(resourceapi.Record)
	return rec
}

// camel is graphgen.Camel: a declared name in GraphQL's camel case. A
// name without an underscore after its first byte is its own camel case;
// the others are made once and kept (camelNames), since objectOf names
// every field of every record it converts.
func camel(name string) string {
	if len(name) < 2 || strings.IndexByte(name[1:], '_') < 0 {
		return name
	}
	known := camelNames.Load()
	if known != nil {
		if c, ok := (*known)[name]; ok {
			return c
		}
	}
	c := camelOf(name)
	// Copy on write: the names are the declarations' fields, a few dozen.
	next := make(map[string]string, 1)
	if known != nil {
		next = maps.Clone(*known)
	}
	next[name] = c
	camelNames.Store(&next)
	return c
}

// camelNames are the camel-case names camel made: a map that is never
// written once stored, replaced by a copy with each new name.
var camelNames atomic.Pointer[map[string]string]

// camelOf is camel without its cache.
func camelOf(name string) string {
	b := make([]byte, 0, len(name))
	up := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' && i > 0:
			up = true
		case up && c >= 'a' && c <= 'z':
			b, up = append(b, c-'a'+'A'), false
		default:
			b, up = append(b, c), false
		}
	}
	return string(b)
}

// recordOf reads the input of a generated mutation into a record of res,
// as DecodeRecord reads a REST body: a field the schema types let through
// but that does not decode (an id that is no integer, a timestamp that is
// not RFC 3339) becomes a marker that the Service reports with the
// other fields' errors. The schema only lets through writable fields.
func recordOf(res *resourceapi.Resource, input map[string]any) resourceapi.Record {
	rec := make(resourceapi.Record, len(input))
	for i := range res.Fields {
		f := &res.Fields[i]
		if v, ok := input[camel(f.Name)]; ok {
			rec[f.Name] = inputValue(f, v)
		}
	}
	return rec
}

const badTime = "must be a timestamp in RFC 3339 form, such as 2026-11-21T05:07:37Z"

// inputValue converts a GraphQL input value, as gqlgen unmarshals it, to
// the record's value of field f.
func inputValue(f *resourceapi.Field, v any) any {
	switch x := v.(type) {
	case *string:
		if x == nil {
			return nil
		}
		v = *x
	case *int:
		if x == nil {
			return nil
		}
		v = *x
	case *bool:
		if x == nil {
			return nil
		}
		v = *x
	}
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		return int64(x)
	case int64:
		return x
	case string:
		switch {
		case f.Name == "id" || f.References != "":
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return resourceapi.InvalidValue("must be a decimal integer id")
			}
			return n
		case f.Type == resourceapi.TypeTime:
			t, err := time.Parse(time.RFC3339Nano, x)
			if err != nil || t.Year() < 1970 || t.Year() > 9999 {
				return resourceapi.InvalidValue(badTime)
			}
			return resourceapi.Timestamp(t)
		}
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, s := range x {
			if p, ok := s.(*string); ok && p != nil {
				s = *p
			}
			str, ok := s.(string)
			if !ok {
				return resourceapi.InvalidValue("must be a list of strings")
			}
			out = append(out, str)
		}
		return out
	case []map[string]any:
		if f.Items == nil {
			return resourceapi.InvalidValue("is not a list of objects")
		}
		items := make([]resourceapi.Record, len(x))
		for i, obj := range x {
			item := make(resourceapi.Record, len(obj))
			for j := range f.Items.Fields {
				sub := &f.Items.Fields[j]
				if sv, ok := obj[camel(sub.Name)]; ok {
					item[sub.Name] = inputValue(sub, sv)
				}
			}
			items[i] = item
		}
		return items
	}
	return v // bool, []string
}

// listParam is one argument of a generated page field: the REST list
// parameter of the same name and its value (*int or *string; nil: absent).
type listParam struct {
	name  string
	value any
}

type listParams []listParam

// values returns the arguments as the query parameters REST reads.
func (ps listParams) values() url.Values {
	v := url.Values{}
	for _, p := range ps {
		switch x := p.value.(type) {
		case *int:
			if x != nil {
				v.Set(p.name, strconv.Itoa(*x))
			}
		case *string:
			if x != nil {
				v.Set(p.name, *x)
			}
		}
	}
	return v
}

// page reads a page of res (within the parent's records when parent is not
// 0), its arguments read by the function REST reads its query parameters
// with (Options.ParseListQuery), and returns it as a value of the page type
// of res, its records converted by conv.
func page[T any](ctx context.Context, r *resolver, res *resourceapi.Resource, parent int64, params listParams, conv func(resourceapi.Record) T) (map[string]any, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	parse := r.h.cfg.ParseListQuery
	if parse == nil {
		return nil, resourceapi.Errorf(resourceapi.CodeUnavailable, "Pages of %s are not available", res.Name)
	}
	q, err := parse(res, params.values())
	if err != nil {
		return nil, err
	}
	b := budgetFrom(ctx)
	if b.reserve(1, q.Limit) == 0 {
		return nil, b.stopErr()
	}
	p, err := r.h.cfg.Service.List(ctx, c, res, parent, q)
	b.release(q.Limit, len(p.Records))
	if err != nil {
		return nil, err
	}
	items := make([]T, len(p.Records))
	for i, rec := range p.Records {
		items[i] = conv(rec)
	}
	return map[string]any{"items": items, "total": p.Total, "page": q.Page(), "limit": q.Limit, "totalPages": p.Pages(q.Limit)}, nil
}

// pageCost is the cost of a generated page field: its limit (REST's
// default without one) times its records' fields.
func pageCost(child int, limit *int) int {
	n := resourceapi.DefaultLimit
	if limit != nil {
		n = *limit
	}
	return listCost(child, &n)
}

// one reads the record of res with the given id: nil, without an error,
// when there is none (once the caller is known to be allowed to read res).
func (r *resolver) one(ctx context.Context, res *resourceapi.Resource, id string) (resourceapi.Record, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	rec, err := getOne(ctx, r.h.cfg.Service, c, res, n)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		return nil, nil
	}
	return rec, err
}

// reference reads the record of ref that field of rec names: nil when it
// names none, or one that is not there (or not shown to the caller).
func (r *resolver) reference(ctx context.Context, rec resourceapi.Record, ref *resourceapi.Resource, field string) (resourceapi.Record, error) {
	id, _ := rec[field].(int64)
	if id == 0 {
		return nil, nil
	}
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	got, err := getOne(ctx, r.h.cfg.Service, c, ref, id)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		return nil, nil
	}
	return got, err
}

// create creates a record of res from a mutation's input.
func (r *resolver) create(ctx context.Context, res *resourceapi.Resource, input map[string]any) (resourceapi.Record, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return r.h.cfg.Service.Create(ctx, c, res, 0, recordOf(res, input))
}

// update changes the fields of a record of res that a mutation's input
// gives, as a REST PATCH does.
func (r *resolver) update(ctx context.Context, res *resourceapi.Resource, id string, input map[string]any) (resourceapi.Record, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	return r.h.cfg.Service.Update(ctx, c, res, resourceapi.Address{ID: n}, recordOf(res, input), nil)
}

// remove deletes a record of res: false for an id that names none, once
// the caller is known to be allowed to delete records of res.
func (r *resolver) remove(ctx context.Context, res *resourceapi.Resource, id string) (*bool, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	deleted := true
	err = r.h.cfg.Service.Delete(ctx, c, res, resourceapi.Address{ID: n}, nil)
	if resourceapi.ErrorCode(err) == resourceapi.CodeNotFound {
		deleted = false
	} else if err != nil {
		return nil, err
	}
	return &deleted, nil
}
