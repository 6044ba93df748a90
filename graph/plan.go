package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// A fastPlan is what gqlgen's CreateOperationContext derived from a
// document the fast path answered, kept so that the next request of the
// same text is answered without preparing it again: no query cache and
// document limit lookups, no coercion of the variables by reflection, no
// limits walked, and the fast path's shape checked once.
//
// Everything CreateOperationContext does for such a document is the same
// on every request but the coercion of its variables: the document and its
// validation are the query cache's (one text, one document), and each
// limit of limits.go is a function of the document and operation alone:
// documentLimit's count, the depth, the introspection, and the complexity,
// which a plan only has when complexityLimit keeps it as fixed (no
// variable changes it) and within the limit. So a plan is made only for an
// operation that passed all of them and whose variables the fast path can
// coerce as gqlparser's validator.VariableValues would:
//
//   - none: the coerced variables are an empty map, whatever the request
//     sends (undeclared variables are ignored);
//   - one, of type ID!, without a default or directives: a request whose
//     variables are exactly that one, with a JSON string, coerces to the
//     same map (an ID keeps a string as it is); any other request (the
//     variable missing, null, a number, other variables beside it) goes
//     through CreateOperationContext, which coerces it or refuses it with
//     its own error.
//
// The operation context a plan makes holds what CreateOperationContext's
// would but two things nothing on the fast path reads: the coerced
// variables (the plan read the id itself; the variables' text is only
// decoded when the request goes to gqlgen) and the statistics' extensions
// (the complexity's, and the observer's mark of a dispatched operation,
// which only InterceptResponse reads). On the fast path the operation
// context reaches only the observer (its type and name), respond (its
// type), and on an error gqlgen's AddError and Recover with the presenter
// (fastErrors), which read neither; the resolvers never see it
// (TestFastResolversSeeNoOperation). It holds the text, the operation's
// name, the document and operation, the extensions and headers, the
// extensions' settings (introspection, the recover function, the resolver
// middlewares), and the times (one reading of the clock).
type fastPlan struct {
	query string // the document's text, the plans' key
	op    string // the operation's name as the request gave it
	doc   *ast.QueryDocument
	oper  *ast.OperationDefinition
	// variable is the name of the one ID! variable, "" for none.
	variable string
	field    *ast.Field
	root     *fastRoot

	disableIntrospection bool
	recoverFunc          graphql.RecoverFunc
	resolverMiddleware   graphql.FieldMiddleware
	rootMiddleware       graphql.RootFieldMiddleware
}

// fastPlans are the plans of the handler, by the document's text: at most
// max, after which they start over (as complexityLimit's costs do). Only
// documents of the query cache's size have one.
type fastPlans struct {
	mu    sync.RWMutex
	plans map[string]*fastPlan
	max   int
}

// get returns the plan of the document query, or nil.
func (p *fastPlans) get(query string) *fastPlan {
	p.mu.RLock()
	plan := p.plans[query]
	p.mu.RUnlock()
	return plan
}

// getBytes is get of a text in bytes, without a string of it.
func (p *fastPlans) getBytes(query []byte) *fastPlan {
	p.mu.RLock()
	plan := p.plans[string(query)]
	p.mu.RUnlock()
	return plan
}

// keep makes the plan of oc, an operation of the fast path's shape (f,
// root) that CreateOperationContext prepared without errors, when it can
// have one.
func (p *fastPlans) keep(h *Handler, oc *graphql.OperationContext, f *ast.Field, root *fastRoot) {
	if p.max <= 0 || len(oc.RawQuery) > maxCachedQuery || oc.Doc == nil {
		return
	}
	if plan := p.get(oc.RawQuery); plan != nil && plan.op == oc.OperationName {
		return
	}
	variable := ""
	switch defs := oc.Operation.VariableDefinitions; len(defs) {
	case 0:
	case 1:
		v := defs[0]
		if v.Type == nil || v.Type.Elem != nil || v.Type.NamedType != "ID" || !v.Type.NonNull ||
			v.DefaultValue != nil || len(v.Directives) != 0 || v.Variable == "" {
			return
		}
		if a := f.Arguments; len(a) != 1 || a[0].Value.Kind != ast.Variable || a[0].Value.Raw != v.Variable {
			return
		}
		variable = v.Variable
	default:
		return
	}
	if !h.costs.known(oc.Doc, oc.OperationName) {
		return
	}
	plan := &fastPlan{
		query: oc.RawQuery, op: oc.OperationName, doc: oc.Doc, oper: oc.Operation,
		variable: variable, field: f, root: root,
		disableIntrospection: oc.DisableIntrospection, recoverFunc: oc.RecoverFunc,
		resolverMiddleware: oc.ResolverMiddleware, rootMiddleware: oc.RootResolverMiddleware,
	}
	p.mu.Lock()
	if p.plans == nil || len(p.plans) >= p.max {
		p.plans = make(map[string]*fastPlan)
	}
	p.plans[plan.query] = plan
	p.mu.Unlock()
}

// dispatchPlan answers the request of params by plan, as
// CreateOperationContext and then dispatchFast would; ok is false when it
// did nothing (no plan, the fast path off, a cancelled request, another
// operation of the document, or variables the plan does not coerce).
func (h *Handler) dispatchPlan(ctx context.Context, plan *fastPlan, params *graphql.RawParams, varsText []byte) (*graphql.Response, bool) {
	if plan == nil || h.fast.off.Load() || ctx.Err() != nil || params.OperationName != plan.op {
		return nil, false
	}
	var id string
	switch vars := params.Variables; {
	case plan.variable != "" && varsText != nil:
		// The variables as the body has them, not decoded.
		var ok bool
		if id, ok = planVariable(varsText, plan.variable); !ok {
			return nil, false
		}
	case plan.variable != "":
		if len(vars) != 1 {
			return nil, false
		}
		s, ok := vars[plan.variable].(string)
		if !ok {
			return nil, false
		}
		id = s // graphql.UnmarshalID of a string
	case !plan.root.noArg:
		var ok bool
		if id, ok = fastID(plan.field, nil); !ok { // a literal
			return nil, false
		}
	}
	now := params.ReadTime.End
	oc := &graphql.OperationContext{
		RawQuery:               params.Query,
		OperationName:          params.OperationName,
		Doc:                    plan.doc,
		Extensions:             params.Extensions,
		Headers:                params.Headers,
		Operation:              plan.oper,
		DisableIntrospection:   plan.disableIntrospection,
		RecoverFunc:            plan.recoverFunc,
		ResolverMiddleware:     plan.resolverMiddleware,
		RootResolverMiddleware: plan.rootMiddleware,
		Stats: graphql.Stats{
			OperationStart: now,
			Read:           params.ReadTime,
			Parsing:        graphql.TraceTiming{Start: now, End: now},
			Validation:     graphql.TraceTiming{Start: now, End: now},
		},
	}
	h.fast.planned.Add(1)
	return h.runFast(ctx, oc, plan.field, plan.root, id), true
}
