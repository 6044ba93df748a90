package graph

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"

	"github.com/resourceapi/resourceapi"
)

// MaxWriters is maxWriters, for tests that outnumber the writers.
var MaxWriters = maxWriters

// Generic gives tests the generic resolvers that the generated fields of
// every declared resource call (resources_gen.go), with the resource as an
// argument and values as the generated types hold them: for a resource
// declared in a test, which the compiled schema cannot name.
type Generic struct{ r *resolver }

// GenericOf returns the generic resolvers of h.
func GenericOf(h *Handler) Generic { return Generic{&resolver{h}} }

// One is what <one>(id) resolves to.
func (g Generic) One(ctx context.Context, res *resourceapi.Resource, id string) (map[string]any, error) {
	rec, err := g.r.one(ctx, res, id)
	return objectOf(res, rec), err
}

// Page is what <name>Page(...) resolves to, with its arguments by name.
func (g Generic) Page(ctx context.Context, res *resourceapi.Resource, args map[string]string) (map[string]any, error) {
	var params listParams
	for name, v := range args {
		params = append(params, listParam{name, &v})
	}
	return page(ctx, g.r, res, 0, params, func(rec resourceapi.Record) map[string]any { return objectOf(res, rec) })
}

// Create is what create<T>(input) resolves to.
func (g Generic) Create(ctx context.Context, res *resourceapi.Resource, input map[string]any) (map[string]any, error) {
	rec, err := g.r.create(ctx, res, input)
	return objectOf(res, rec), err
}

// Update is what update<T>(id, input) resolves to.
func (g Generic) Update(ctx context.Context, res *resourceapi.Resource, id string, input map[string]any) (map[string]any, error) {
	rec, err := g.r.update(ctx, res, id, input)
	return objectOf(res, rec), err
}

// Delete is what delete<T>(id) resolves to.
func (g Generic) Delete(ctx context.Context, res *resourceapi.Resource, id string) (*bool, error) {
	return g.r.remove(ctx, res, id)
}

// Priced returns how many operations h had gqlgen price (the others were
// priced by a cost kept from an earlier request).
func Priced(h *Handler) int64 { return h.costs.priced.Load() }

// Collected returns how many selection sets h had gqlgen collect the
// fields of (the others were kept from an earlier request of the same
// document).
func Collected(h *Handler) int64 { return h.fields.collected.Load() }

// ParseEnvelope is parseEnvelope: the parameters of a POST body in the
// common shape, or ok false.
func ParseEnvelope(body []byte) (query, operationName string, variables, extensions map[string]any, ok bool) {
	var p graphql.RawParams
	q, vars, ok := parseEnvelope(body, &p)
	if !ok {
		return "", "", nil, nil, false
	}
	return string(q), p.OperationName, decodeVariables(vars), p.Extensions, true
}

// PlanVariable is planVariable of the variables of a body parseEnvelope
// reads: the value of its one variable name, when they are that string
// alone; readable false when parseEnvelope does not read the body.
func PlanVariable(body []byte, name string) (v string, ok, readable bool) {
	var p graphql.RawParams
	_, vars, readable := parseEnvelope(body, &p)
	if !readable {
		return "", false, false
	}
	v, ok = planVariable(vars, name)
	return v, ok, true
}

// SetFastPath turns h's fast path (fast.go) on or off: off, every
// operation goes through gqlgen's executor.
func SetFastPath(h *Handler, on bool) { h.fast.off.Store(!on) }

// FastAnswered returns how many operations h's fast path answered.
func FastAnswered(h *Handler) int64 { return h.fast.answered.Load() }

// FastPlanned returns how many operations h answered by a plan (plan.go).
func FastPlanned(h *Handler) int64 { return h.fast.planned.Load() }

// FastRoots returns the fields of Query that h's fast path answers, sorted.
func FastRoots(h *Handler) []string {
	names := make([]string, 0, len(h.fastRoots))
	for name := range h.fastRoots {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// SetMaxResponseBytes sets h's Options.MaxResponseBytes (0: the default)
// between requests, and returns the limit it had.
func SetMaxResponseBytes(h *Handler, n int64) int64 {
	old := h.cfg.MaxResponseBytes
	if n <= 0 {
		n = DefaultMaxResponseBytes
	}
	h.cfg.MaxResponseBytes = n
	return old
}

// Camel is camel.
func Camel(name string) string { return camel(name) }

// AppendQuoted is appendQuoted.
func AppendQuoted(b []byte, s string) []byte { return appendQuoted(b, s) }

// WatchFastRoot has watch called with the context the resolver of the
// fast root name runs in, before it runs, on every request of h.
func WatchFastRoot(h *Handler, name string, watch func(ctx context.Context)) {
	root := h.fastRoots[name]
	inner := root.resolve
	root.resolve = func(ctx context.Context, r queryResolver, id string) (any, error) {
		watch(ctx)
		return inner(ctx, r, id)
	}
}
