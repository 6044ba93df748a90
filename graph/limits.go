package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// complexity is the cost model: every field costs 1 plus its children (gqlgen's
// default), and a list field multiplies its children by its limit argument,
// or by 10 without one. gqlgen adds these up and refuses a document over
// Options.ComplexityLimit before any resolver runs.
func complexity() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Users = func(child int, limit, _ *int) int { return listCost(child, limit) }
	c.Query.Posts = func(child int, limit, _ *int) int { return listCost(child, limit) }
	c.User.Posts = func(child int, limit, _ *int) int { return listCost(child, limit) }
	return c
}

// unlimitedFactor is what a list field without a limit multiplies its
// children by.
const unlimitedFactor = 10

func listCost(child int, limit *int) int {
	n := unlimitedFactor
	if limit != nil {
		n = max(*limit, 1)
	}
	const maxCost = 1 << 30
	if child > 0 && n > (maxCost-1)/child {
		return maxCost // saturate: far over any limit
	}
	return 1 + n*child
}

// depthLimit refuses documents whose selections nest deeper than max
// (fragments expanded), before any resolver runs. Introspection (__schema,
// __type) is not counted: its depth is the schema's, and GraphiQL's
// introspection query nests deeper than any query of the data. The limit is
// a guard for the parser and validator's sake; the complexity limit is what
// refuses ordinary deep queries.
type depthLimit struct{ max int }

var _ interface {
	graphql.OperationContextMutator
	graphql.HandlerExtension
} = depthLimit{}

func (depthLimit) ExtensionName() string                          { return "DepthLimit" }
func (depthLimit) Validate(schema graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if depth := selectionDepth(opCtx.Operation.SelectionSet, opCtx.Doc, 0, d.max); depth > d.max {
		err := gqlerror.Errorf("The operation nests deeper than %d levels", d.max)
		err.Extensions = map[string]any{"code": codeDepth}
		return err
	}
	return nil
}

// selectionDepth returns the depth of set, counting from depth, and stops
// counting once it passes limit.
func selectionDepth(set ast.SelectionSet, doc *ast.QueryDocument, depth, limit int) int {
	deepest := depth
	for _, sel := range set {
		if deepest > limit {
			break
		}
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				continue
			}
			d = depth + 1
			if len(s.SelectionSet) > 0 {
				d = selectionDepth(s.SelectionSet, doc, depth+1, limit)
			}
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, doc, depth, limit)
		case *ast.FragmentSpread:
			// Validation refused cycles of fragments before this runs.
			if f := doc.Fragments.ForName(s.Name); f != nil {
				d = selectionDepth(f.SelectionSet, doc, depth, limit)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// queryCache keeps parsed and validated documents of at most
// maxCachedQuery bytes, least recently used first out: a repeated query
// costs neither parsing nor validation, and the cache's memory stays
// bounded by its count of small documents.
type queryCache struct{ lru *lru.LRU[*ast.QueryDocument] }

const maxCachedQuery = 4 << 10

func newQueryCache(size int) queryCache {
	return queryCache{lru.New[*ast.QueryDocument](size)}
}

func (c queryCache) Get(ctx context.Context, query string) (*ast.QueryDocument, bool) {
	return c.lru.Get(ctx, query)
}

func (c queryCache) Add(ctx context.Context, query string, doc *ast.QueryDocument) {
	if len(query) <= maxCachedQuery {
		c.lru.Add(ctx, query, doc)
	}
}
