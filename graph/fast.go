package graph

import (
	"context"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The fast path: a query that reads one user by id and only its scalar
// fields,
//
//	query ($id: ID!) { user(id: $id) { name email } }
//
// the most common GraphQL request, is answered without gqlgen's per-field
// execution (a field context, a context value, a field set, closures per
// field: about 70 allocations of the ~120 such a request made), by the
// same steps gqlgen takes for it, in the same order, with the same
// functions wherever one is called:
//
//   - The operation is prepared as any other: the transport's
//     CreateOperationContext (parsing or the query cache, validation,
//     every limit of limits.go, the variables' coercion) and its request
//     errors are gqlgen's. Only an operation that passed all of that, is
//     not cancelled, and is of the shape below takes the fast path; any
//     other goes to gqlgen's DispatchOperation as before.
//   - The shape (fastUser): a query operation without directives whose
//     only selection is the field user (under any alias, without
//     directives) with its one argument id (a literal or a variable), and
//     whose selections under it are all fields among id, name, email,
//     createdAt and __typename, without arguments, directives or
//     selections of their own, each under a response key of its own (no
//     fragments, so no @defer; nothing for gqlgen to merge).
//   - The operation runs inside the observer's InterceptOperation (its
//     metrics and trace) and the handler's aroundResponse (the budget, the
//     loaders, the rate charge, the budget's error replacing the
//     response), as gqlgen's DispatchOperation runs it; the observer's
//     InterceptResponse, the one other response middleware, does nothing
//     for a dispatched operation and is left out.
//   - The root field: the argument read as gqlgen's generated code reads
//     it (ast's arg2map, graphql.UnmarshalID: a value that does not
//     unmarshal goes to gqlgen before anything ran), the field contexts
//     of Query and of the field as gqlgen makes them, the resolver
//     (queryResolver.User: the rule layer's Get, its authorization, the
//     budget's record) called through aroundField (the budget's charge),
//     a panic recovered and an error added through gqlgen's own
//     OperationContext.Recover, OperationContext.Error and
//     AddFieldLocationToError into a gqlgen response context (so the
//     presenter, the path and the locations are gqlgen's).
//   - The user's fields: each charged to the budget as aroundField
//     charges a string (valueBytes of a string is quotedLen), skipped
//     once the budget is spent, a panic recovered onto the field's path;
//     a field that answers null makes the user null, as gqlgen's
//     non-null fields do.
//   - The data is written as gqlgen's field sets write it: keys and
//     strings quoted as graphql.MarshalString quotes them (appendQuoted,
//     FuzzAppendQuoted).
//
// TestFastPathAsGqlgen and FuzzFastPath send each request through both
// paths (SetFastPath) and compare the status, the headers that describe
// the body, the body itself, and what Observe and Trace were told.

// fastFields are the fields of User the fast path answers.
var fastFields = map[string]struct{}{"id": {}, "name": {}, "email": {}, "createdAt": {}, "__typename": {}}

// fastUser returns the user field of op when op has the fast path's shape.
func fastUser(op *ast.OperationDefinition) *ast.Field {
	if op == nil || op.Operation != ast.Query || len(op.Directives) != 0 || len(op.SelectionSet) != 1 {
		return nil
	}
	f, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || f.Name != "user" || len(f.Directives) != 0 || len(f.Arguments) != 1 ||
		f.Arguments[0].Name != "id" || f.Arguments[0].Value == nil ||
		f.Definition == nil || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" ||
		len(f.SelectionSet) == 0 || len(f.SelectionSet) > 16 {
		return nil
	}
	for i, sel := range f.SelectionSet {
		c, ok := sel.(*ast.Field)
		if !ok || len(c.Directives) != 0 || len(c.Arguments) != 0 || len(c.SelectionSet) != 0 ||
			c.ObjectDefinition == nil || c.ObjectDefinition.Name != "User" {
			return nil
		}
		if _, ok := fastFields[c.Name]; !ok {
			return nil
		}
		for _, prev := range f.SelectionSet[:i] {
			if prev.(*ast.Field).Alias == c.Alias {
				return nil
			}
		}
	}
	return f
}

// fastID reads the id argument of f as gqlgen's generated code does
// (ast.Field.ArgumentMap, then graphql.UnmarshalID); ok is false when it
// would not read one without an error (gqlgen answers that request).
func fastID(f *ast.Field, vars map[string]any) (id string, ok bool) {
	arg := f.Arguments[0]
	var v any
	if arg.Value.Kind == ast.Variable {
		if v, ok = vars[arg.Value.Raw]; !ok {
			return "", false
		}
	} else {
		var err error
		if v, err = arg.Value.Value(vars); err != nil {
			return "", false
		}
	}
	id, err := graphql.UnmarshalID(v)
	return id, err == nil
}

// fastState is whether the fast path is off (tests turn it off to compare
// with gqlgen's answers), and how many operations it answered.
type fastState struct {
	off      atomic.Bool
	answered atomic.Int64
}

// dispatchFast answers opCtx by the fast path when it has its shape, as
// exec.DispatchOperation and the response handler it returns would; ok is
// false when it did nothing.
func (h *Handler) dispatchFast(ctx context.Context, oc *graphql.OperationContext) (resp *graphql.Response, ok bool) {
	if h.fast.off.Load() || ctx.Err() != nil {
		return nil, false
	}
	f := fastUser(oc.Operation)
	if f == nil {
		return nil, false
	}
	id, ok := fastID(f, oc.Variables)
	if !ok {
		return nil, false
	}
	h.fast.answered.Add(1)
	// DispatchOperation: the operation context, the operation middleware
	// (the observer), then the response handler.
	ctx = graphql.WithOperationContext(ctx, oc)
	respond := func(ctx context.Context) *graphql.Response {
		if ctx.Err() != nil {
			return nil // as DispatchOperation's handler does
		}
		return h.aroundResponse(ctx, func(ctx context.Context) *graphql.Response {
			return h.execUser(ctx, oc, f, id)
		})
	}
	if h.observer == nil {
		return respond(ctx), true
	}
	inner := ctx
	responses := h.observer.InterceptOperation(ctx, func(ctx context.Context) graphql.ResponseHandler {
		inner = ctx
		return respond
	})
	return responses(inner), true
}

// execUser is what gqlgen's Exec and _Query do for the operation: the
// field user under a field context of Query, its value marshaled, the
// errors its field added.
func (h *Handler) execUser(ctx context.Context, oc *graphql.OperationContext, f *ast.Field, id string) *graphql.Response {
	rctx := graphql.WithResponseContext(ctx, h.presenter, h.recoverPanic)
	qctx := graphql.WithFieldContext(rctx, &graphql.FieldContext{Object: "Query"})
	field := graphql.CollectedField{Field: f, Selections: f.SelectionSet}
	// Args stays nil: only gqlgen's generated resolver call reads it.
	fc := &graphql.FieldContext{Object: "Query", Field: field, IsMethod: true, IsResolver: true}
	fctx := graphql.WithFieldContext(qctx, fc)

	data := make([]byte, 0, 128)
	data = append(data, '{')
	data = appendQuoted(data, f.Alias)
	data = append(data, ':')
	u := h.resolveUser(fctx, oc, id)
	if u == nil {
		data = append(data, "null"...)
	} else {
		mark := len(data)
		var ok bool
		if data, ok = h.appendUser(fctx, oc, data, f.SelectionSet, u); !ok {
			data = append(data[:mark], "null"...)
		}
	}
	data = append(data, '}')
	return &graphql.Response{Data: data, Errors: graphql.GetErrors(rctx)}
}

// resolveUser is gqlgen's resolveField for Query.user: the resolver through
// the operation's ResolverMiddleware (aroundField), a panic or an error
// added to the response's errors; nil for null.
func (h *Handler) resolveUser(ctx context.Context, oc *graphql.OperationContext, id string) (u *User) {
	defer func() {
		if r := recover(); r != nil {
			oc.Error(ctx, oc.Recover(ctx, r))
			u = nil
		}
	}()
	res, err := oc.ResolverMiddleware(ctx, func(ctx context.Context) (any, error) {
		return queryResolver{h.root}.User(ctx, id)
	})
	if err != nil {
		oc.Error(ctx, graphql.AddFieldLocationToError(ctx, err))
		return nil
	}
	switch res := res.(type) {
	case *User:
		return res
	case nil:
		return nil
	case graphql.Marshaler:
		// The budget was spent (aroundField's null): the response is
		// replaced by its error (aroundResponse).
		return nil
	}
	graphql.AddErrorf(ctx, `unexpected type %T from middleware/directive chain, should be %T`, res, (*User)(nil))
	return nil
}

// appendUser appends u's selected fields as gqlgen's _User writes them,
// and reports false when one of them is null (then so is the user).
func (h *Handler) appendUser(ctx context.Context, oc *graphql.OperationContext, data []byte, sel ast.SelectionSet, u *User) ([]byte, bool) {
	b := budgetFrom(ctx)
	ok := true
	data = append(data, '{')
	for i, s := range sel {
		c := s.(*ast.Field)
		if i > 0 {
			data = append(data, ',')
		}
		data = appendQuoted(data, c.Alias)
		data = append(data, ':')
		if c.Name == "__typename" {
			data = append(data, `"User"`...)
			continue
		}
		v, fine := h.userField(ctx, oc, b, c, u)
		if !fine {
			ok = false
			data = append(data, "null"...)
			continue
		}
		data = appendQuoted(data, v)
	}
	return append(data, '}'), ok
}

// userField resolves one scalar field of u as gqlgen's resolveField with
// aroundField does: nothing once the budget is spent, else the value
// charged (valueBytes of a string is its quotedLen) and null when the
// charge passes the budget; a panic is recovered onto the field's path.
func (h *Handler) userField(ctx context.Context, oc *graphql.OperationContext, b *budget, c *ast.Field, u *User) (v string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			fc, _ := newScalarFieldContext("User", graphql.CollectedField{Field: c, Selections: c.SelectionSet},
				c.Name == "id" || c.Name == "createdAt", false, childLeafString)
			fctx := graphql.WithFieldContext(ctx, fc)
			oc.Error(fctx, oc.Recover(fctx, r))
			v, ok = "", false
		}
	}()
	if b != nil && b.err() != nil {
		return "", false
	}
	switch c.Name {
	case "id":
		v = u.ID()
	case "name":
		v = u.Name
	case "email":
		v = u.Email
	case "createdAt":
		v = u.CreatedAt()
	}
	if b != nil && !b.charge(quotedLen(v)+4+len(c.Alias)) {
		return "", false
	}
	return v, true
}

// appendQuoted appends s as gqlgen's graphql.MarshalString writes it:
// quoted, with ", \ and the control characters escaped (\t, \r, \n, the
// others as \u00XX in upper-case hex), everything else, invalid UTF-8
// included, as it is. gqlgen walks the runes; every byte it escapes is
// ASCII, which no other rune's encoding contains, so a walk of the bytes
// writes the same (FuzzAppendQuoted).
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		case '\n':
			b = append(b, '\\', 'n')
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
