package graph

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// gqlgen's generated code collects the fields of every selection set it
// marshals (graphql.CollectFields) once per operation: a cache of its own
// per operation context (a map, a key hashed with FNV), and the fields
// (slices, a map of visited fragments) on every request. What it collects
// depends on the document, the selection set, the types it is collected
// for, and the variables only through the arguments of @skip, @include and
// @defer. So for a document of the query cache (the same *ast.QueryDocument
// request after request) whose directives read no variable, the fields are
// kept per document here (internal/graphgen/cmd/trim has the generated code
// call ec.collectFields instead of graphql.CollectFields), and computed by
// gqlgen as before for any other document. The slices are shared by the
// requests of the document, as gqlgen shares its own between the elements
// of a list: nothing writes into them once collected.
type fieldsCache struct {
	mu   sync.RWMutex
	docs map[*ast.QueryDocument]*docFields
	max  int // documents kept; past it the map starts over
	// collected counts the selection sets collected by gqlgen (for tests).
	collected atomic.Int64
}

// docFields is what one document's operations collected.
type docFields struct {
	static bool // no directive of the document reads a variable
	mu     sync.RWMutex
	sets   map[fieldsKey][]collected
}

// fieldsKey is a selection set of a document: its first element's address
// and its length (gqlgen keys its own cache the same way).
type fieldsKey struct {
	sel *ast.Selection
	n   int
}

// collected is the fields of a selection set for one list of types.
type collected struct {
	satisfies []string
	fields    []graphql.CollectedField
}

func newFieldsCache(max int) *fieldsCache {
	return &fieldsCache{docs: map[*ast.QueryDocument]*docFields{}, max: max}
}

// collect returns graphql.CollectFields(oc, sel, satisfies), kept per
// document when oc's document is one of the query cache whose directives
// read no variable.
func (c *fieldsCache) collect(oc *graphql.OperationContext, sel ast.SelectionSet, satisfies []string) []graphql.CollectedField {
	if c == nil {
		return graphql.CollectFields(oc, sel, satisfies)
	}
	if oc.Doc == nil || len(oc.RawQuery) > maxCachedQuery || len(sel) == 0 {
		c.collected.Add(1)
		return graphql.CollectFields(oc, sel, satisfies)
	}
	d := c.doc(oc.Doc)
	if !d.static {
		c.collected.Add(1)
		return graphql.CollectFields(oc, sel, satisfies)
	}
	key := fieldsKey{unsafe.SliceData(sel), len(sel)}
	d.mu.RLock()
	for _, e := range d.sets[key] {
		if slices.Equal(e.satisfies, satisfies) {
			d.mu.RUnlock()
			return e.fields
		}
	}
	d.mu.RUnlock()
	c.collected.Add(1)
	fields := graphql.CollectFields(oc, sel, satisfies)
	d.mu.Lock()
	d.sets[key] = append(d.sets[key], collected{slices.Clone(satisfies), fields})
	d.mu.Unlock()
	return fields
}

// doc returns the entry of doc, made on its first use. The entry holds the
// document, so no other document takes its selection sets' addresses while
// it is kept.
func (c *fieldsCache) doc(doc *ast.QueryDocument) *docFields {
	c.mu.RLock()
	d := c.docs[doc]
	c.mu.RUnlock()
	if d != nil {
		return d
	}
	d = &docFields{static: !readsVariables(doc), sets: map[fieldsKey][]collected{}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if known := c.docs[doc]; known != nil {
		return known
	}
	if len(c.docs) >= c.max {
		clear(c.docs)
	}
	c.docs[doc] = d
	return d
}

// readsVariables reports whether an argument of a directive of doc's
// operations or fragments, at any depth, holds a variable (or the
// document nests deeper than any the limits let run).
func readsVariables(doc *ast.QueryDocument) bool {
	for _, op := range doc.Operations {
		if setReadsVariables(op.SelectionSet, 0) {
			return true
		}
	}
	for _, f := range doc.Fragments {
		if setReadsVariables(f.SelectionSet, 0) {
			return true
		}
	}
	return false
}

func setReadsVariables(set ast.SelectionSet, depth int) bool {
	if depth > 64 {
		return true
	}
	for _, sel := range set {
		var sub ast.SelectionSet
		var dirs ast.DirectiveList
		switch s := sel.(type) {
		case *ast.Field:
			sub, dirs = s.SelectionSet, s.Directives
		case *ast.InlineFragment:
			sub, dirs = s.SelectionSet, s.Directives
		case *ast.FragmentSpread:
			dirs = s.Directives // its fragment is walked as one of doc's
		default:
			return true
		}
		if directivesReadVariables(dirs) {
			return true
		}
		if setReadsVariables(sub, depth+1) {
			return true
		}
	}
	return false
}

// collectFields is what the generated code calls for graphql.CollectFields
// (internal/graphgen/cmd/trim): the fields kept per document by the
// handler's fieldsCache.
func (ec *executionContext) collectFields(sel ast.SelectionSet, satisfies []string) []graphql.CollectedField {
	var c *fieldsCache
	if r, ok := ec.Resolvers.(*resolver); ok {
		c = r.h.fields
	}
	return c.collect(ec.OperationContext, sel, satisfies)
}

// deferredResults is the channel of an operation's deferred results, which
// the generated Exec makes for every operation
// (internal/graphgen/cmd/trim): nil for a document whose text does not
// name defer, which has no @defer (a directive's name is a token of the
// text as written) and so no deferred field. Exec only receives from it,
// and ProcessDeferredGroup only sends to it, when a field was deferred.
func deferredResults(oc *graphql.OperationContext) chan graphql.DeferredResult {
	if strings.Contains(oc.RawQuery, "defer") {
		return make(chan graphql.DeferredResult)
	}
	return nil
}

// newScalarFieldContext is graphql.NewScalarFieldContext with child, a
// package function of the generated code (internal/graphgen/cmd/trim), as
// the context's Child, where gqlgen makes a closure per field that returns
// the same error.
func newScalarFieldContext(object string, field graphql.CollectedField, isMethod, isResolver bool, child func(context.Context, graphql.CollectedField) (*graphql.FieldContext, error)) (*graphql.FieldContext, error) {
	return &graphql.FieldContext{Object: object, Field: field, IsMethod: isMethod, IsResolver: isResolver, Child: child}, nil
}
