package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/resourceapi/resourceapi"
)

// observer reports each operation to Options.Observe once: a query or a
// mutation at its response, a subscription at its first (the result of
// subscribing, or its refusal), and a document refused before it ran
// (unparsable, invalid, too costly) as it is refused.
//
// With Options.Trace, each operation also runs in the context it returns (a
// span), ended at the operation's first response.
type observer struct {
	observe func(operation, code string, elapsed time.Duration)
	trace   func(ctx context.Context, operation, name string) (context.Context, func(code string))
}

var (
	_ graphql.HandlerExtension     = observer{}
	_ graphql.OperationInterceptor = observer{}
	_ graphql.ResponseInterceptor  = observer{}
)

func (observer) ExtensionName() string                   { return "observer" }
func (observer) Validate(graphql.ExecutableSchema) error { return nil }
func (o observer) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	oc.Stats.SetExtension(dispatchedStat, true)
	ctx, rep := o.begin(ctx, oc)
	responses := next(ctx)
	first := true
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if first {
			first = false
			rep.end(resp)
		}
		return resp
	}
}

// begin starts the report of the operation oc (InterceptOperation, and the
// fast path's operations): its span, in the context returned, and its
// start. The report's end is called with its first response. It does not
// mark oc as dispatched (dispatchedStat): only an operation dispatched by
// gqlgen passes InterceptResponse, which reads the mark.
func (o observer) begin(ctx context.Context, oc *graphql.OperationContext) (context.Context, report) {
	rep := report{observe: o.observe, start: time.Now(), operation: "unknown", endSpan: noSpan}
	name := ""
	if op := oc.Operation; op != nil {
		rep.operation, name = string(op.Operation), op.Name
	}
	if o.trace != nil {
		ctx, rep.endSpan = o.trace(ctx, rep.operation, name)
	}
	return ctx, rep
}

func noSpan(string) {}

// report is an operation's report in progress (observer.begin).
type report struct {
	observe   func(operation, code string, elapsed time.Duration)
	start     time.Time
	operation string
	endSpan   func(code string)
}

// end reports the operation at its first response.
func (r report) end(resp *graphql.Response) {
	code := firstCode(resp)
	r.endSpan(code)
	if r.observe != nil {
		r.observe(r.operation, code, time.Since(r.start))
	}
}

// InterceptResponse reports the responses of documents that were never
// dispatched as operations: refused before they ran.
func (o observer) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if o.observe == nil {
		return resp
	}
	operation := "unknown"
	var start time.Time
	if graphql.HasOperationContext(ctx) {
		oc := graphql.GetOperationContext(ctx)
		if oc.Stats.GetExtension(dispatchedStat) != nil {
			return resp // InterceptOperation reports it
		}
		if oc.Operation != nil {
			operation = string(oc.Operation.Operation)
		}
		start = oc.Stats.OperationStart
	}
	elapsed := time.Duration(0)
	if !start.IsZero() {
		elapsed = time.Since(start)
	}
	o.observe(operation, firstCode(resp), elapsed)
	return resp
}

// dispatchedStat marks, among the statistics of an operation's context,
// an operation that InterceptOperation reports. A mark there costs no
// allocation: the complexity limit's statistics made the map (a context
// value would be one more per operation).
const dispatchedStat = "observer.dispatched"

// firstCode is the code of a response's first error, "" without one.
func firstCode(resp *graphql.Response) string {
	if resp == nil || len(resp.Errors) == 0 {
		return ""
	}
	if code, ok := resp.Errors[0].Extensions["code"].(string); ok {
		return code
	}
	return "INTERNAL"
}

// Caches returns the lookups of the handler's caches: responses of users
// ("graphql_users", SQLite only).
func (h *Handler) Caches() []resourceapi.CacheStats {
	c := h.users
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return []resourceapi.CacheStats{{Name: "graphql_users", Hits: c.hits, Misses: c.misses}}
}
