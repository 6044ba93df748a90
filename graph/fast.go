package graph

import (
	"context"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// The fast path: a query that reads one user or one post by id and only
// its scalar fields,
//
//	query ($id: ID!) { user(id: $id) { name email } }
//	query ($id: ID!) { post(id: $id) { title content } }
//
// the most common GraphQL requests, are answered without gqlgen's per-field
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
//   - The shape (fastField): a query operation without directives whose
//     only selection is the field user or post (under any alias, without
//     directives) with its one argument id (a literal or a variable), and
//     whose selections under it are all fields among the object's scalar
//     fields (fastRoots: User's id, name, email, createdAt; Post's id,
//     title, content, createdAt) and __typename, without arguments, directives or
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
//     (queryResolver.User or Post: the rule layer's Get, its authorization, the
//     budget's record) called through aroundField (the budget's charge),
//     a panic recovered and an error added through gqlgen's own
//     OperationContext.Recover, OperationContext.Error and
//     AddFieldLocationToError into a gqlgen response context (so the
//     presenter, the path and the locations are gqlgen's).
//   - The object's fields: each charged to the budget as aroundField
//     charges a string (valueBytes of a string is quotedLen), skipped
//     once the budget is spent, a panic recovered onto the field's path;
//     a field that answers null makes the object null, as gqlgen's
//     non-null fields do.
//   - The data is written as gqlgen's field sets write it: keys and
//     strings quoted as graphql.MarshalString quotes them (appendQuoted,
//     FuzzAppendQuoted).
//
// TestFastPathAsGqlgen and FuzzFastPath send each request through both
// paths (SetFastPath) and compare the status, the headers that describe
// the body, the body itself, and what Observe and Trace were told.

// fastRoot is a field of Query the fast path answers: its object type,
// the object's scalar fields it answers (true for those gqlgen resolves
// with a method: id and createdAt), its resolver, and the value of a field
// of what that returns.
type fastRoot struct {
	typ     string
	fields  map[string]bool
	resolve func(ctx context.Context, r queryResolver, id string) (any, error)
	// object returns the resolver's result as the fast path reads it, nil
	// for a nil pointer; ok is false for a result of another type.
	object func(res any) (o fastObject, ok bool)
	zero   any // a nil pointer of the resolver's type, for its error
}

// fastObject is the value of a fast path's root field.
type fastObject interface {
	fastField(name string) string
}

func (u *User) fastField(name string) string {
	switch name {
	case "id":
		return u.ID()
	case "name":
		return u.Name
	case "email":
		return u.Email
	case "createdAt":
		return u.CreatedAt()
	}
	return ""
}

func (p *Post) fastField(name string) string {
	switch name {
	case "id":
		return p.ID()
	case "title":
		return p.Title
	case "content":
		return p.Content
	case "createdAt":
		return p.CreatedAt()
	}
	return ""
}

// fastRoots are the fields of Query the fast path answers.
var fastRoots = map[string]*fastRoot{
	"user": {
		typ:    "User",
		fields: map[string]bool{"id": true, "name": false, "email": false, "createdAt": true},
		resolve: func(ctx context.Context, r queryResolver, id string) (any, error) {
			return r.User(ctx, id)
		},
		object: func(res any) (fastObject, bool) {
			u, ok := res.(*User)
			if !ok || u == nil {
				return nil, ok
			}
			return u, true
		},
		zero: (*User)(nil),
	},
	"post": {
		typ:    "Post",
		fields: map[string]bool{"id": true, "title": false, "content": false, "createdAt": true},
		resolve: func(ctx context.Context, r queryResolver, id string) (any, error) {
			return r.Post(ctx, id)
		},
		object: func(res any) (fastObject, bool) {
			p, ok := res.(*Post)
			if !ok || p == nil {
				return nil, ok
			}
			return p, true
		},
		zero: (*Post)(nil),
	},
}

// fastField returns the root field of op and what the fast path knows of
// it when op has the fast path's shape.
func fastField(op *ast.OperationDefinition) (*ast.Field, *fastRoot) {
	if op == nil || op.Operation != ast.Query || len(op.Directives) != 0 || len(op.SelectionSet) != 1 {
		return nil, nil
	}
	f, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || len(f.Directives) != 0 || len(f.Arguments) != 1 ||
		f.Arguments[0].Name != "id" || f.Arguments[0].Value == nil ||
		f.Definition == nil || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" ||
		len(f.SelectionSet) == 0 || len(f.SelectionSet) > 16 {
		return nil, nil
	}
	root := fastRoots[f.Name]
	if root == nil {
		return nil, nil
	}
	for i, sel := range f.SelectionSet {
		c, ok := sel.(*ast.Field)
		if !ok || len(c.Directives) != 0 || len(c.Arguments) != 0 || len(c.SelectionSet) != 0 ||
			c.ObjectDefinition == nil || c.ObjectDefinition.Name != root.typ {
			return nil, nil
		}
		if _, ok := root.fields[c.Name]; !ok && c.Name != "__typename" {
			return nil, nil
		}
		for _, prev := range f.SelectionSet[:i] {
			if prev.(*ast.Field).Alias == c.Alias {
				return nil, nil
			}
		}
	}
	return f, root
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
	f, root := fastField(oc.Operation)
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
			return h.execOne(ctx, oc, f, root, id)
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

// execOne is what gqlgen's Exec and _Query do for the operation: the
// root field under a field context of Query, its value marshaled, the
// errors its field added.
func (h *Handler) execOne(ctx context.Context, oc *graphql.OperationContext, f *ast.Field, root *fastRoot, id string) *graphql.Response {
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
	o := h.resolveOne(fctx, oc, root, id)
	if o == nil {
		data = append(data, "null"...)
	} else {
		mark := len(data)
		var ok bool
		if data, ok = h.appendObject(fctx, oc, data, f.SelectionSet, root, o); !ok {
			data = append(data[:mark], "null"...)
		}
	}
	data = append(data, '}')
	return &graphql.Response{Data: data, Errors: graphql.GetErrors(rctx)}
}

// resolveOne is gqlgen's resolveField for the root field (Query.user,
// Query.post): the resolver through the operation's ResolverMiddleware
// (aroundField), a panic or an error added to the response's errors; nil
// for null.
func (h *Handler) resolveOne(ctx context.Context, oc *graphql.OperationContext, root *fastRoot, id string) (o fastObject) {
	defer func() {
		if r := recover(); r != nil {
			oc.Error(ctx, oc.Recover(ctx, r))
			o = nil
		}
	}()
	res, err := oc.ResolverMiddleware(ctx, func(ctx context.Context) (any, error) {
		return root.resolve(ctx, queryResolver{h.root}, id)
	})
	if err != nil {
		oc.Error(ctx, graphql.AddFieldLocationToError(ctx, err))
		return nil
	}
	if o, ok := root.object(res); ok {
		return o
	}
	switch res.(type) {
	case nil:
		return nil
	case graphql.Marshaler:
		// The budget was spent (aroundField's null): the response is
		// replaced by its error (aroundResponse).
		return nil
	}
	graphql.AddErrorf(ctx, `unexpected type %T from middleware/directive chain, should be %T`, res, root.zero)
	return nil
}

// appendObject appends o's selected fields as gqlgen's _User or _Post
// writes them, and reports false when one of them is null (then so is the
// object).
func (h *Handler) appendObject(ctx context.Context, oc *graphql.OperationContext, data []byte, sel ast.SelectionSet, root *fastRoot, o fastObject) ([]byte, bool) {
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
			data = appendQuoted(data, root.typ)
			continue
		}
		v, fine := h.scalarField(ctx, oc, b, c, root, o)
		if !fine {
			ok = false
			data = append(data, "null"...)
			continue
		}
		data = appendQuoted(data, v)
	}
	return append(data, '}'), ok
}

// scalarField resolves one scalar field of o as gqlgen's resolveField with
// aroundField does: nothing once the budget is spent, else the value
// charged (valueBytes of a string is its quotedLen) and null when the
// charge passes the budget; a panic is recovered onto the field's path.
func (h *Handler) scalarField(ctx context.Context, oc *graphql.OperationContext, b *budget, c *ast.Field, root *fastRoot, o fastObject) (v string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			child := childLeafString
			if c.Name == "id" {
				child = childLeafID
			}
			fc, _ := newScalarFieldContext(root.typ, graphql.CollectedField{Field: c, Selections: c.SelectionSet},
				root.fields[c.Name], false, child)
			fctx := graphql.WithFieldContext(ctx, fc)
			oc.Error(fctx, oc.Recover(fctx, r))
			v, ok = "", false
		}
	}()
	if b != nil && b.err() != nil {
		return "", false
	}
	v = o.fastField(c.Name)
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
