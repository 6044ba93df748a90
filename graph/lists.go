package graph

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// gqlgen marshals every element of a list of objects in a goroutine of its
// own (graphql.MarshalSliceConcurrently), so that the resolvers of the
// elements' fields run at once and the loaders gather their keys into one
// batch. Where no element's fields read anything, that costs a goroutine
// per element and the growth of its stack (for 20 users with their posts,
// 60 goroutines and a fifth of the server's CPU) and buys nothing.
//
// So every list is marshaled by marshalList (the generated code calls it:
// internal/graphgen/cmd/lists rewrites gqlgen's call after `go generate`),
// which is gqlgen's own marshaling of the elements, one after the other in
// the list field's goroutine, unless a field selected under its elements
// (at any depth) has a resolver that reads: then gqlgen's concurrent
// marshaling, as before. The fields of the elements are the same fields of
// the same generated code, through the same middleware (the response's
// budget: aroundField), in the same order; only their scheduling changes.

// fieldKey names a field of a type, as the schema spells both.
type fieldKey struct{ object, field string }

// resolverFields holds the fields that have a resolver of their own: the
// methods of the XResolver interfaces of ResolverRoot (gqlgen's Go names:
// matched without case). Every other field reads a value its parent's
// resolver already holds (a struct field or a map entry).
var resolverFields = sync.OnceValue(func() map[fieldKey]bool {
	methods := make(map[string]bool)
	root := reflect.TypeFor[ResolverRoot]()
	for i := range root.NumMethod() {
		m := root.Method(i)
		r := m.Type.Out(0)
		for j := range r.NumMethod() {
			methods[strings.ToLower(m.Name+"."+r.Method(j).Name)] = true
		}
	}
	fields := make(map[fieldKey]bool)
	for _, def := range NewExecutableSchema(Config{}).Schema().Types {
		for _, f := range def.Fields {
			if methods[strings.ToLower(def.Name+"."+f.Name)] {
				fields[fieldKey{def.Name, f.Name}] = true
			}
		}
	}
	return fields
})

// primedFields are the fields of the elements of a root list that its
// resolver reads for every element in one batch before they are marshaled
// (queryResolver.Users: prefetchPosts; queryResolver.Posts:
// prefetchAuthors): their loads find the records in the loader and wait for
// nothing.
var primedFields = map[fieldKey]fieldKey{
	{"Query", "users"}: {"User", "posts"},
	{"Query", "posts"}: {"Post", "author"},
}

// marshalList marshals the n elements of a list field with marshal, as
// graphql.MarshalSliceConcurrently does (each element in a field context of
// its index, a panic of one recovered as an error of the list, which is
// then null), one after the other when none of them waits on a resolver
// (see above), else concurrently. sel is the elements' selection set.
func marshalList(ctx context.Context, sel ast.SelectionSet, n int, marshal func(context.Context, int) graphql.Marshaler) graphql.Array {
	if n <= 1 || reads(ctx, sel) {
		return graphql.MarshalSliceConcurrently(ctx, n, 0, false, marshal)
	}
	ret := make(graphql.Array, n)
	failed := false
	for i := range n {
		fc := &graphql.FieldContext{Index: &i}
		ectx := graphql.WithFieldContext(ctx, fc)
		func() {
			defer func() {
				if r := recover(); r != nil {
					graphql.AddError(ectx, graphql.Recover(ectx, r))
					failed = true
				}
			}()
			ret[i] = marshal(ectx, i)
		}()
	}
	if failed {
		return nil
	}
	return ret
}

// reads reports whether a field under sel, the selection set of the
// elements of the list field resolving in ctx, has a resolver that reads:
// one of resolverFields, unless the list's resolver primed it.
func reads(ctx context.Context, sel ast.SelectionSet) bool {
	var primed fieldKey
	if fc := graphql.GetFieldContext(ctx); fc != nil {
		primed = primedFields[fieldKey{fc.Object, fc.Field.Name}]
	}
	var doc *ast.QueryDocument
	if graphql.HasOperationContext(ctx) {
		doc = graphql.GetOperationContext(ctx).Doc
	}
	return selectsReader(sel, doc, resolverFields(), primed, 0)
}

// selectsReader walks set (fragments expanded; depth bounds a cycle,
// which validation refused anyway) for a field of resolverFields other
// than primed in the set itself.
func selectsReader(set ast.SelectionSet, doc *ast.QueryDocument, resolvers map[fieldKey]bool, primed fieldKey, depth int) bool {
	if depth > 64 {
		return true
	}
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.ObjectDefinition != nil {
				if k := (fieldKey{s.ObjectDefinition.Name, s.Name}); resolvers[k] && k != primed {
					return true
				}
			}
			if selectsReader(s.SelectionSet, doc, resolvers, fieldKey{}, depth+1) {
				return true
			}
		case *ast.InlineFragment:
			if selectsReader(s.SelectionSet, doc, resolvers, primed, depth+1) {
				return true
			}
		case *ast.FragmentSpread:
			def := s.Definition
			if def == nil && doc != nil {
				def = doc.Fragments.ForName(s.Name)
			}
			if def == nil {
				return true // unknown: the safe choice
			}
			if selectsReader(def.SelectionSet, doc, resolvers, primed, depth+1) {
				return true
			}
		}
	}
	return false
}
