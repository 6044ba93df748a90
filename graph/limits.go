package graph

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/introspection"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
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
	generatedComplexity(&c)
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
// introspection query nests deeper than any query of the data;
// introspectionLimit bounds what it answers. The limit is a guard for
// pathological documents; the complexity limit is what refuses ordinary
// deep queries. The walk is bounded: documentLimit refused every document
// whose operations hold more than Options.MaxFields selections once their
// fragments are expanded.
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

// documentLimit refuses, before gqlgen validates a document, the documents
// whose validation or execution would cost far more than their length
// suggests, with COMPLEXITY_LIMIT_EXCEEDED:
//
//   - Its operations hold at most max selections (fields, fragment spreads
//     and inline fragments) once their fragments are expanded, each spread
//     counted with its fragment's selections as often as it is used. A
//     document of a few hundred bytes can spread fragments into each other
//     exponentially, and every walk of the operation (the complexity, the
//     depth, the execution's field collection) would pay for the expansion.
//   - Validation compares pairwise the fields that share a response name in
//     a selection set (gqlparser's OverlappingFieldsCanBeMerged), and then
//     their sub-selections, and the fragments spread in a selection set
//     with each other: a document of 5,000 times the same field costs
//     seconds, one of 450 fragments spread side by side half a second.
//     Their comparisons, estimated, are at most maxComparisons.
//
// Documents in the query cache passed both when they were first seen, and
// are not parsed again; any other is parsed here once more (parsing is
// linear in the document, and bounded by MaxQueryBytes and MaxTokens). A
// document that does not parse is left for gqlgen to refuse with its own
// parse error.
type documentLimit struct {
	max    int
	tokens int
	cache  queryCache
}

var _ interface {
	graphql.OperationParameterMutator
	graphql.HandlerExtension
} = documentLimit{}

// maxComparisons bounds the comparisons of fields of one name and of
// fragments that validation makes in one document (see comparisons): some
// 10 ms of validation on a loaded 2-core machine, less than one
// password check costs. Clients repeat a field in a selection set through
// fragments (id and __typename in each), and spread a few fragments side by
// side, not hundreds.
const maxComparisons = 5000

func (documentLimit) ExtensionName() string                          { return "DocumentLimit" }
func (documentLimit) Validate(schema graphql.ExecutableSchema) error { return nil }

func (d documentLimit) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if _, ok := d.cache.Get(ctx, p.Query); ok {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, d.tokens)
	if err != nil {
		return nil // gqlgen parses it again and reports the error
	}
	return checkDocument(doc, d.max)
}

// checkDocument applies documentLimit's bounds to doc, with limit
// selections.
func checkDocument(doc *ast.QueryDocument, limit int) *gqlerror.Error {
	w := docWalk{doc: doc, max: limit, sizes: make(map[string]int), open: make(map[string]bool)}
	n := 0
	for _, op := range doc.Operations {
		n = w.add(n, w.size(op.SelectionSet))
	}
	for _, f := range doc.Fragments {
		// A fragment larger than the limit cannot be used by an operation
		// within it, and one that is unused is refused by validation:
		// either way validation would walk it first.
		n = max(n, w.fragment(f.Name))
	}
	if n > limit {
		return complexityError("The document holds more than %d selections once its fragments are expanded "+
			"(each spread counted as often as it is used)", limit)
	}
	// Every walk below expands at most limit selections per operation or
	// fragment.
	n = 0
	for _, op := range doc.Operations {
		n += w.comparisons([]ast.SelectionSet{op.SelectionSet}, maxComparisons-n)
	}
	for _, f := range doc.Fragments {
		if n > maxComparisons {
			break
		}
		// Validation also checks each fragment definition on its own.
		n += w.comparisons([]ast.SelectionSet{f.SelectionSet}, maxComparisons-n)
	}
	if n > maxComparisons {
		return complexityError("The document repeats fields of one name, or spreads fragments side by side, more " +
			"than validation allows; select each field once, and spread fewer fragments in one selection set")
	}
	return nil
}

func complexityError(format string, args ...any) *gqlerror.Error {
	err := gqlerror.Errorf(format, args...)
	err.Extensions = map[string]any{"code": codeComplexity}
	return err
}

// docWalk walks a parsed document that has not been validated: fragment
// spreads are looked up by name, and may be unknown or cyclic (validation
// refuses both later; here they count as empty).
type docWalk struct {
	doc   *ast.QueryDocument
	max   int
	sizes map[string]int  // expanded selections of each fragment, saturated at max+1
	open  map[string]bool // fragments being expanded, for cycles
}

// add adds selection counts, saturating at max+1.
func (w *docWalk) add(a, b int) int { return min(a+b, w.max+1) }

// size returns the selections of set with fragments expanded, saturated at
// max+1. Each fragment's size is computed once.
func (w *docWalk) size(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n = w.add(n, w.add(1, w.size(s.SelectionSet)))
		case *ast.InlineFragment:
			n = w.add(n, w.add(1, w.size(s.SelectionSet)))
		case *ast.FragmentSpread:
			n = w.add(n, w.add(1, w.fragment(s.Name)))
		}
		if n > w.max {
			break
		}
	}
	return n
}

func (w *docWalk) fragment(name string) int {
	if n, ok := w.sizes[name]; ok {
		return n
	}
	f := w.doc.Fragments.ForName(name)
	if f == nil || w.open[name] {
		return 0
	}
	w.open[name] = true
	n := w.size(f.SelectionSet)
	delete(w.open, name)
	w.sizes[name] = n
	return n
}

// comparisons estimates the work of gqlparser's OverlappingFieldsCanBeMerged
// on the selection sets, merged as execution merges them (the
// sub-selections of fields of one response name merge), fragments
// expanded: for each pair of fields that share a response name, 1 plus the
// fields directly in their two sub-selections (which it collects to compare
// them); for each pair of fragments spread in the same set, the fields
// directly in the two. It stops counting once it passes limit.
func (w *docWalk) comparisons(sets []ast.SelectionSet, limit int) int {
	type group struct {
		count, direct int // fields, and the fields directly in their sub-selections
		subs          []ast.SelectionSet
	}
	groups := make(map[string]*group)
	var order []string
	spreads, spreadFields := 0, 0
	seen := make(map[string]bool)
	var collect func(set ast.SelectionSet)
	collect = func(set ast.SelectionSet) {
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				name := s.Alias
				if name == "" {
					name = s.Name
				}
				g := groups[name]
				if g == nil {
					g = &group{}
					groups[name] = g
					order = append(order, name)
				}
				g.count++
				if len(s.SelectionSet) > 0 {
					g.direct += directFields(s.SelectionSet)
					g.subs = append(g.subs, s.SelectionSet)
				}
			case *ast.InlineFragment:
				collect(s.SelectionSet)
			case *ast.FragmentSpread:
				f := w.doc.Fragments.ForName(s.Name)
				if f == nil || w.open[s.Name] {
					continue
				}
				if !seen[s.Name] {
					seen[s.Name] = true
					spreads++
					spreadFields += directFields(f.SelectionSet)
				}
				w.open[s.Name] = true
				collect(f.SelectionSet)
				delete(w.open, s.Name)
			}
		}
	}
	for _, set := range sets {
		collect(set)
	}
	// Each fragment is compared with each other one spread beside it.
	n := max(spreads-1, 0) * spreadFields
	for _, name := range order {
		g := groups[name]
		n += g.count*(g.count-1)/2 + max(g.count-1, 0)*g.direct
		if n > limit {
			return n
		}
	}
	for _, name := range order {
		if g := groups[name]; len(g.subs) > 0 {
			n += w.comparisons(g.subs, limit-n)
			if n > limit {
				return n
			}
		}
	}
	return n
}

// directFields returns the fields of set, those of its inline fragments
// included, fragment spreads not expanded: what validation collects of a
// selection set to compare it with another.
func directFields(set ast.SelectionSet) int {
	n := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n++
		case *ast.InlineFragment:
			n += directFields(s.SelectionSet)
		}
	}
	return n
}

// introspectionLimit refuses, before any resolver runs, an operation whose
// introspection (__schema, __type) would answer more than max fields. The
// schema is fixed, so what introspection answers is known exactly: the
// count walks the selections (fragments expanded and merged as execution
// merges them, with @skip and @include) over the schema, through the same
// introspection values the resolvers return, and stops once it passes max.
// Its work is bounded by max.
type introspectionLimit struct {
	max    int
	schema *ast.Schema
}

var _ interface {
	graphql.OperationContextMutator
	graphql.HandlerExtension
} = introspectionLimit{}

func (introspectionLimit) ExtensionName() string                          { return "IntrospectionLimit" }
func (introspectionLimit) Validate(schema graphql.ExecutableSchema) error { return nil }

func (l introspectionLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if n := introspectionFields(opCtx, l.schema, l.max); n > l.max {
		return complexityError("The operation's introspection answers more than %d fields; select fewer, "+
			"or read the schema at /graphql/schema.graphql", l.max)
	}
	return nil
}

// introspectionFields returns how many fields (and list elements) the
// introspection fields of the operation answer, counting up to just past
// max.
func introspectionFields(opCtx *graphql.OperationContext, schema *ast.Schema, max int) int {
	if opCtx.Operation.Operation != ast.Query || schema.Query == nil {
		return 0
	}
	// A field's name stands in the document's text as written (a name
	// has no escapes, an alias does not replace it): a document without
	// these two names selects no introspection, and the walk below, with
	// its collection of fields, is not paid for every ordinary query.
	if !strings.Contains(opCtx.RawQuery, "__schema") && !strings.Contains(opCtx.RawQuery, "__type") {
		return 0
	}
	c := introspectionCounter{oc: opCtx, schema: schema, left: max}
	for _, f := range graphql.CollectFields(opCtx, opCtx.Operation.SelectionSet, []string{schema.Query.Name}) {
		switch f.Name {
		case "__schema":
			c.left--
			c.object("__Schema", introspection.WrapSchema(schema), f.Selections)
		case "__type":
			c.left--
			name, _ := f.ArgumentMap(opCtx.Variables)["name"].(string)
			if def := schema.Types[name]; def != nil {
				c.object("__Type", introspection.WrapTypeFromDef(schema, def), f.Selections)
			}
		}
		if c.left < 0 {
			break
		}
	}
	return max - c.left
}

type introspectionCounter struct {
	oc     *graphql.OperationContext
	schema *ast.Schema
	left   int
}

// object counts the fields sel selects of obj, a value of the
// introspection type typ, and what they hold.
func (c *introspectionCounter) object(typ string, obj any, sel ast.SelectionSet) {
	for _, f := range graphql.CollectFields(c.oc, sel, []string{typ}) {
		c.left--
		if c.left < 0 {
			return
		}
		childType, child := introspectionChild(typ, obj, f, c.oc.Variables)
		if childType == "" {
			continue // a scalar, or null
		}
		v := reflect.ValueOf(child)
		if v.Kind() == reflect.Pointer {
			if !v.IsNil() {
				c.object(childType, child, f.Selections)
			}
			continue
		}
		c.left -= v.Len() // the elements of a list
		for i := 0; i < v.Len() && c.left >= 0; i++ {
			c.object(childType, v.Index(i).Addr().Interface(), f.Selections)
		}
		if c.left < 0 {
			return
		}
	}
}

// introspectionChild returns what field f of obj, a value of the
// introspection type typ, holds when it is an object or a list of objects:
// its type and the value (a pointer or a slice) the generated resolvers
// return. For a scalar, childType is "".
func introspectionChild(typ string, obj any, f graphql.CollectedField, vars map[string]any) (childType string, child any) {
	includeDeprecated := func() bool {
		b, _ := f.ArgumentMap(vars)["includeDeprecated"].(bool)
		return b
	}
	switch o := obj.(type) {
	case *introspection.Schema:
		switch f.Name {
		case "types":
			return "__Type", o.Types()
		case "queryType":
			return "__Type", o.QueryType()
		case "mutationType":
			return "__Type", o.MutationType()
		case "subscriptionType":
			return "__Type", o.SubscriptionType()
		case "directives":
			return "__Directive", o.Directives()
		}
	case *introspection.Type:
		switch f.Name {
		case "fields":
			return "__Field", o.Fields(includeDeprecated())
		case "interfaces":
			return "__Type", o.Interfaces()
		case "possibleTypes":
			return "__Type", o.PossibleTypes()
		case "enumValues":
			return "__EnumValue", o.EnumValues(includeDeprecated())
		case "inputFields":
			return "__InputValue", o.InputFields()
		case "ofType":
			return "__Type", o.OfType()
		}
	case *introspection.Field:
		switch f.Name {
		case "args":
			return "__InputValue", o.Args
		case "type":
			return "__Type", o.Type
		}
	case *introspection.InputValue:
		if f.Name == "type" {
			return "__Type", o.Type
		}
	case *introspection.Directive:
		if f.Name == "args" {
			return "__InputValue", o.Args
		}
	}
	return "", nil
}

// complexityLimit is gqlgen's extension.FixedComplexityLimit (the same
// cost, the same error and statistics), with the cost of each operation of
// a cached document kept beside it: gqlgen walks the operation and calls
// the schema's complexity for every field of every request (with two
// allocations per field), while a repeated query costs the same every time
// unless a variable changes it. A variable changes it when it is an
// argument of a field whose complexity function reads its arguments (a
// list's limit), or of a directive (@skip and @include choose the fields):
// such operations are priced on every request, as before.
type complexityLimit struct {
	limit  int
	inner  *extension.ComplexityLimit
	custom map[fieldKey]bool // fields with a complexity function of their own

	mu    sync.RWMutex
	costs map[costKey]opCost
	max   int // entries kept; past it the map starts over
	// priced counts the operations gqlgen priced (for tests).
	priced atomic.Int64
}

type costKey struct {
	doc *ast.QueryDocument
	op  string
}

// opCost is an operation's cost, when fixed (no variable changes it).
type opCost struct {
	cost  int
	fixed bool
	// stats is what the operation's context is given as gqlgen's
	// statistics (extension.GetComplexityStats): one value per document
	// and operation, shared by its requests, which only read it.
	stats *extension.ComplexityStats
}

var _ interface {
	graphql.OperationContextMutator
	graphql.HandlerExtension
} = (*complexityLimit)(nil)

func newComplexityLimit(limit int, c ComplexityRoot, entries int) *complexityLimit {
	return &complexityLimit{limit: limit, inner: extension.FixedComplexityLimit(limit), custom: complexityFields(c),
		costs: make(map[costKey]opCost), max: entries}
}

// complexityFields returns the fields that c gives a complexity function
// of their own (gqlgen's Go names, matched to the schema's without case).
func complexityFields(c ComplexityRoot) map[fieldKey]bool {
	funcs := make(map[string]bool)
	root := reflect.ValueOf(c)
	for i := range root.NumField() {
		typ := root.Field(i)
		for j := range typ.NumField() {
			if f := typ.Field(j); f.Kind() == reflect.Func && !f.IsNil() {
				funcs[strings.ToLower(root.Type().Field(i).Name+"."+typ.Type().Field(j).Name)] = true
			}
		}
	}
	fields := make(map[fieldKey]bool)
	for _, def := range NewExecutableSchema(Config{}).Schema().Types {
		for _, f := range def.Fields {
			if funcs[strings.ToLower(def.Name+"."+f.Name)] {
				fields[fieldKey{def.Name, f.Name}] = true
			}
		}
	}
	return fields
}

func (*complexityLimit) ExtensionName() string { return "ComplexityLimit" }
func (c *complexityLimit) Validate(schema graphql.ExecutableSchema) error {
	return c.inner.Validate(schema)
}

func (c *complexityLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	// Only documents of the query cache are the same document again
	// (queryCache keeps those of at most maxCachedQuery bytes).
	if len(opCtx.RawQuery) > maxCachedQuery || opCtx.Doc == nil {
		c.priced.Add(1)
		return c.inner.MutateOperationContext(ctx, opCtx)
	}
	key := costKey{opCtx.Doc, opCtx.OperationName}
	c.mu.RLock()
	known, ok := c.costs[key]
	c.mu.RUnlock()
	if ok && known.fixed {
		opCtx.Stats.SetExtension("ComplexityLimit", known.stats)
		if known.cost > c.limit {
			return complexityOverError(known.cost, c.limit)
		}
		return nil
	}
	c.priced.Add(1)
	err := c.inner.MutateOperationContext(ctx, opCtx)
	if ok {
		return err // priced on every request
	}
	entry := opCost{fixed: c.fixedCost(opCtx)}
	if stats, _ := opCtx.Stats.GetExtension("ComplexityLimit").(*extension.ComplexityStats); stats != nil {
		entry.cost = stats.Complexity
		entry.stats = &extension.ComplexityStats{Complexity: stats.Complexity, ComplexityLimit: c.limit}
	} else {
		entry.fixed = false
	}
	c.mu.Lock()
	if len(c.costs) >= c.max {
		clear(c.costs)
	}
	c.costs[key] = entry
	c.mu.Unlock()
	return err
}

// known reports whether the cost of the operation op of doc is kept as
// fixed and within the limit: every later request of it passes the limit,
// whatever its variables.
func (c *complexityLimit) known(doc *ast.QueryDocument, op string) bool {
	c.mu.RLock()
	known, ok := c.costs[costKey{doc, op}]
	c.mu.RUnlock()
	return ok && known.fixed && known.cost <= c.limit
}

// complexityOverError is the error of extension.ComplexityLimit.
func complexityOverError(cost, limit int) *gqlerror.Error {
	err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", cost, limit)
	errcode.Set(err, "COMPLEXITY_LIMIT_EXCEEDED")
	return err
}

// fixedCost reports whether no variable changes the cost of the operation:
// none is an argument of a directive, or of a field with a complexity
// function of its own, anywhere in it (fragments expanded).
func (c *complexityLimit) fixedCost(opCtx *graphql.OperationContext) bool {
	op := opCtx.Doc.Operations.ForName(opCtx.OperationName)
	if op == nil {
		return false
	}
	if len(op.VariableDefinitions) == 0 {
		return true
	}
	return !c.variableCost(op.SelectionSet, opCtx.Doc, 0)
}

func (c *complexityLimit) variableCost(set ast.SelectionSet, doc *ast.QueryDocument, depth int) bool {
	if depth > 64 {
		return true
	}
	for _, sel := range set {
		var sub ast.SelectionSet
		var dirs ast.DirectiveList
		switch s := sel.(type) {
		case *ast.Field:
			if s.ObjectDefinition != nil && c.custom[fieldKey{s.ObjectDefinition.Name, s.Name}] {
				for _, a := range s.Arguments {
					if hasVariable(a.Value) {
						return true
					}
				}
			}
			sub, dirs = s.SelectionSet, s.Directives
		case *ast.InlineFragment:
			sub, dirs = s.SelectionSet, s.Directives
		case *ast.FragmentSpread:
			def := s.Definition
			if def == nil {
				def = doc.Fragments.ForName(s.Name)
			}
			if def == nil {
				return true
			}
			sub, dirs = def.SelectionSet, s.Directives
		}
		if directivesReadVariables(dirs) {
			return true
		}
		if c.variableCost(sub, doc, depth+1) {
			return true
		}
	}
	return false
}

// directivesReadVariables reports whether an argument of one of dirs
// holds a variable.
func directivesReadVariables(dirs ast.DirectiveList) bool {
	for _, d := range dirs {
		for _, a := range d.Arguments {
			if hasVariable(a.Value) {
				return true
			}
		}
	}
	return false
}

// hasVariable reports whether v is, or holds, a variable.
func hasVariable(v *ast.Value) bool {
	if v == nil {
		return false
	}
	if v.Kind == ast.Variable {
		return true
	}
	for _, child := range v.Children {
		if hasVariable(child.Value) {
			return true
		}
	}
	return false
}
