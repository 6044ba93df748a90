package graph

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The fast path: a query that reads one record by id, or the caller's
// own user, and only its scalar fields,
//
//	query ($id: ID!) { user(id: $id) { name email } }
//	query ($id: ID!) { product(id: $id) { name priceCents } }
//	{ me { id name } }
//
// the most common GraphQL requests, are answered without gqlgen's per-field
// execution (a field context, a context value, a field set, closures per
// field: about 70 allocations of the ~120 such a request made), by the
// same steps gqlgen takes for it, in the same order, with the same
// functions wherever one is called. Its roots are every declared
// resource's one-record field (fastOneRoots, which internal/graphgen
// writes from the declarations, so a new resource's takes it too) and me:
//
//   - The operation is prepared as any other: the transport's
//     CreateOperationContext (parsing or the query cache, validation,
//     every limit of limits.go, the variables' coercion) and its request
//     errors are gqlgen's. Only an operation that passed all of that, is
//     not cancelled, and is of the shape below takes the fast path; any
//     other goes to gqlgen's DispatchOperation as before.
//   - The shape (fastField): a query operation without directives whose
//     only selection is one of those root fields (under any alias, without
//     directives) with its one argument id (a literal or a variable; me:
//     none), and whose selections under it are all fields among the
//     object's scalar fields (fastRootsOf: those of its type in the schema
//     without arguments, of type ID, String, Int or Boolean; of User and
//     Post those their fastField reads) and __typename, without arguments,
//     directives or selections of their own, each under a response key of
//     its own (no fragments, so no @defer; nothing for gqlgen to merge).
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
//     (queryResolver.User, Product, Me...: the rule layer's Get, its
//     authorization and ownership, the budget's record) called through
//     aroundField (the budget's charge),
//     a panic recovered and an error added through gqlgen's own
//     OperationContext.Recover, OperationContext.Error and
//     AddFieldLocationToError into a gqlgen response context (so the
//     presenter, the path and the locations are gqlgen's).
//   - The object's fields, read as the generated code reads them (a
//     model's field or method; a map's value of the field's type or a
//     pointer to it, else gqlgen's error): each charged to the budget as
//     aroundField charges what the generated code returns (valueBytes),
//     null once the budget is spent or past it, a panic recovered onto the
//     field's path.
//   - The data is written as gqlgen's field sets write it: keys and
//     strings quoted as graphql.MarshalString quotes them (appendQuoted,
//     FuzzAppendQuoted), numbers and booleans as MarshalInt and
//     MarshalBoolean write them.
//
// TestFastPathAsGqlgen and FuzzFastPath send each request through both
// paths (SetFastPath) and compare the status, the headers that describe
// the body, the body itself, and what Observe and Trace were told.

// fastRoot is a field of Query the fast path answers: every declared
// resource's one-record field (user, post, product, ...: fastOneRoots,
// which internal/graphgen writes from the declarations) and me. Its
// resolver is the one gqlgen calls; its type and the scalar fields it
// answers are read from the schema (fastRootsOf).
type fastRoot struct {
	typ    string
	fields map[string]fastScalar
	noArg  bool // me: no argument; the others take id
	// resolve calls the field's resolver; me ignores id.
	resolve func(ctx context.Context, r queryResolver, id string) (any, error)
	zero    any // a nil value of the resolver's type, for its error
}

// fastScalar is a scalar field of a fast root's object type.
type fastScalar struct {
	kind    byte // 's' String, 'd' ID, 'i' Int, 'b' Boolean
	method  bool // gqlgen resolves it with a method of the model (User.ID)
	nonNull bool
}

// fastRootOf is the fast root of a one-record field whose resolver is m
// (a method expression: queryResolver.Product).
func fastRootOf[T any](m func(queryResolver, context.Context, string) (T, error)) *fastRoot {
	var zero T
	return &fastRoot{
		resolve: func(ctx context.Context, r queryResolver, id string) (any, error) { return m(r, ctx, id) },
		zero:    zero,
	}
}

// fastModel is a model of the specification's types (User, Post) as the
// fast path reads it: the value of its scalar field name as gqlgen's
// generated code reads it (method: by a method of the model), ok false for
// a field it does not have.
type fastModel interface {
	fastField(name string) (v string, method, ok bool)
}

func (u *User) fastField(name string) (string, bool, bool) {
	switch name {
	case "id":
		return u.ID(), true, true
	case "name":
		return u.Name, false, true
	case "email":
		return u.Email, false, true
	case "createdAt":
		return u.CreatedAt(), true, true
	}
	return "", false, false
}

func (p *Post) fastField(name string) (string, bool, bool) {
	switch name {
	case "id":
		return p.ID(), true, true
	case "title":
		return p.Title, false, true
	case "content":
		return p.Content, false, true
	case "createdAt":
		return p.CreatedAt(), true, true
	}
	return "", false, false
}

// fastRootsOf returns the fast roots of the schema: those of fastOneRoots
// and me whose field has the expected arguments (id: ID!, or none) and an
// object type, with the scalar fields of that type the fast path can
// answer: of a model (User, Post), those its fastField reads, of a
// generated type (a map), its nullable ID, String, Int and Boolean
// fields. A field with arguments, a list, an object or another scalar
// type goes to gqlgen.
func fastRootsOf(schema *ast.Schema) map[string]*fastRoot {
	roots := fastOneRoots()
	me := fastRootOf(func(r queryResolver, ctx context.Context, _ string) (*User, error) { return r.Me(ctx) })
	me.noArg = true
	roots["me"] = me
	out := make(map[string]*fastRoot, len(roots))
	for name, root := range roots {
		def := schema.Query.Fields.ForName(name)
		if def == nil || def.Type.Elem != nil {
			continue
		}
		if root.noArg != (len(def.Arguments) == 0) {
			continue
		}
		if !root.noArg && (len(def.Arguments) != 1 || def.Arguments[0].Name != "id" || def.Arguments[0].Type.String() != "ID!") {
			continue
		}
		obj := schema.Types[def.Type.NamedType]
		if obj == nil || obj.Kind != ast.Object {
			continue
		}
		model, isModel := root.zero.(fastModel)
		if _, isMap := root.zero.(map[string]any); !isModel && !isMap {
			continue
		}
		root.typ = obj.Name
		root.fields = map[string]fastScalar{}
		for _, f := range obj.Fields {
			if len(f.Arguments) != 0 || f.Type.Elem != nil {
				continue
			}
			var kind byte
			switch f.Type.NamedType {
			case "String":
				kind = 's'
			case "ID":
				kind = 'd'
			case "Int":
				kind = 'i'
			case "Boolean":
				kind = 'b'
			default:
				continue
			}
			sc := fastScalar{kind: kind, nonNull: f.Type.NonNull}
			if isModel {
				// The zero model's pointer is nil: fastField of a field it
				// has would read it, so probe with an empty one.
				_, method, ok := reflectNew(model).fastField(f.Name)
				if !ok || kind == 'i' || kind == 'b' {
					continue
				}
				sc.method = method
			} else if sc.nonNull {
				continue
			}
			root.fields[f.Name] = sc
		}
		out[name] = root
	}
	return out
}

// reflectNew returns an empty model of m's type (m is a nil pointer).
func reflectNew(m fastModel) fastModel {
	return reflect.New(reflect.TypeOf(m).Elem()).Interface().(fastModel)
}

// fastField returns the root field of op and what the fast path knows of
// it when op has the fast path's shape.
func (h *Handler) fastField(op *ast.OperationDefinition) (*ast.Field, *fastRoot) {
	if op == nil || op.Operation != ast.Query || len(op.Directives) != 0 || len(op.SelectionSet) != 1 {
		return nil, nil
	}
	f, ok := op.SelectionSet[0].(*ast.Field)
	if !ok || len(f.Directives) != 0 ||
		f.Definition == nil || f.ObjectDefinition == nil || f.ObjectDefinition.Name != "Query" ||
		len(f.SelectionSet) == 0 || len(f.SelectionSet) > 16 {
		return nil, nil
	}
	root := h.fastRoots[f.Name]
	if root == nil {
		return nil, nil
	}
	if root.noArg {
		if len(f.Arguments) != 0 {
			return nil, nil
		}
	} else if len(f.Arguments) != 1 || f.Arguments[0].Name != "id" || f.Arguments[0].Value == nil {
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
// with gqlgen's answers), and how many operations it answered, and of
// them by a plan (plan.go).
type fastState struct {
	off      atomic.Bool
	answered atomic.Int64
	planned  atomic.Int64
}

// dispatchFast answers opCtx by the fast path when it has its shape, as
// exec.DispatchOperation and the response handler it returns would; ok is
// false when it did nothing. An operation it answers becomes a fastPlan
// when it can be one.
func (h *Handler) dispatchFast(ctx context.Context, oc *graphql.OperationContext) (resp *graphql.Response, ok bool) {
	if h.fast.off.Load() || ctx.Err() != nil {
		return nil, false
	}
	f, root := h.fastField(oc.Operation)
	if f == nil {
		return nil, false
	}
	var id string
	if !root.noArg {
		if id, ok = fastID(f, oc.Variables); !ok {
			return nil, false
		}
	}
	h.plans.keep(h, oc, f, root)
	return h.runFast(ctx, oc, f, root, id), true
}

// runFast is DispatchOperation and its response handler for an operation
// of the fast path's shape: the operation middleware (the observer), then
// the response middleware (respond: the budget and the loaders), then the
// root field (execOne). None of them reads the operation from the context,
// so it is not put there: only an error puts the contexts gqlgen's would
// have in place (fastErrors).
func (h *Handler) runFast(ctx context.Context, oc *graphql.OperationContext, f *ast.Field, root *fastRoot, id string) *graphql.Response {
	h.fast.answered.Add(1)
	var rep report
	if h.observer != nil {
		ctx, rep = h.observer.begin(ctx, oc)
	}
	var resp *graphql.Response
	if ctx.Err() == nil { // else nil, as DispatchOperation's handler answers
		resp = h.respond(ctx, oc.Operation, func(ctx context.Context) *graphql.Response {
			return h.execOne(ctx, oc, f, root, id)
		})
	}
	if h.observer != nil {
		rep.end(resp)
	}
	return resp
}

// fastErrors puts in place, for the first error of a fast path's response,
// the contexts gqlgen runs the root field in (the operation, a response
// context with the presenter and recover function, the field contexts of
// Query and of the field), so that gqlgen's own functions add the error on
// the field's path and present it as under gqlgen. A response without an
// error never makes them: nothing else the fast path runs reads them (the
// one-record resolvers read the caller and the budget, and aroundField,
// which reads the field's alias, is called as chargeField with it).
type fastErrors struct {
	h    *Handler
	ctx  context.Context // the response's (with its budget)
	oc   *graphql.OperationContext
	f    *ast.Field
	rctx context.Context // the response context, once made
	fctx context.Context // the root field's context, once made
}

// field returns the root field's context, made on the first call.
func (e *fastErrors) field() context.Context {
	if e.fctx == nil {
		ctx := graphql.WithOperationContext(e.ctx, e.oc)
		e.rctx = graphql.WithResponseContext(ctx, e.h.presenter, e.h.recoverPanic)
		qctx := graphql.WithFieldContext(e.rctx, &graphql.FieldContext{Object: "Query"})
		field := graphql.CollectedField{Field: e.f, Selections: e.f.SelectionSet}
		// Args stays nil: only gqlgen's generated resolver call reads it.
		fc := &graphql.FieldContext{Object: "Query", Field: field, IsMethod: true, IsResolver: true}
		e.fctx = graphql.WithFieldContext(qctx, fc)
	}
	return e.fctx
}

// errors returns the errors added to the response.
func (e *fastErrors) errors() gqlerror.List {
	if e.rctx == nil {
		return nil
	}
	return graphql.GetErrors(e.rctx)
}

// execOne is what gqlgen's Exec and _Query do for the operation: the
// root field under a field context of Query, its value marshaled, the
// errors its field added.
func (h *Handler) execOne(ctx context.Context, oc *graphql.OperationContext, f *ast.Field, root *fastRoot, id string) *graphql.Response {
	errs := fastErrors{h: h, ctx: ctx, oc: oc, f: f}
	data := make([]byte, 0, 128)
	data = append(data, '{')
	data = appendQuoted(data, f.Alias)
	data = append(data, ':')
	res := h.resolveOne(ctx, &errs, root, id)
	switch o := res.(type) {
	case fastModel:
		data = h.appendObject(ctx, &errs, data, f.SelectionSet, root, o, nil)
	case map[string]any:
		data = h.appendObject(ctx, &errs, data, f.SelectionSet, root, nil, o)
	default:
		data = append(data, "null"...)
	}
	data = append(data, '}')
	return &graphql.Response{Data: data, Errors: errs.errors()}
}

// resolveOne is gqlgen's resolveField for the root field (Query.user,
// Query.product, Query.me, ...): the resolver through the operation's
// ResolverMiddleware (aroundField, called as chargeField with the field's
// alias), a panic or an error added to the response's errors. It returns
// the object (a non-nil model or map), or nil for null.
func (h *Handler) resolveOne(ctx context.Context, errs *fastErrors, root *fastRoot, id string) (o any) {
	oc := errs.oc
	defer func() {
		if r := recover(); r != nil {
			fctx := errs.field()
			oc.Error(fctx, oc.Recover(fctx, r))
			o = nil
		}
	}()
	res, err := chargeField(ctx, errs.f.Alias, func(ctx context.Context) (any, error) {
		return root.resolve(ctx, queryResolver{h.root}, id)
	})
	if err != nil {
		fctx := errs.field()
		oc.Error(fctx, graphql.AddFieldLocationToError(fctx, err))
		return nil
	}
	if res == nil {
		return nil
	}
	if reflect.TypeOf(res) == reflect.TypeOf(root.zero) {
		// The resolver's type: a nil pointer or map is null (gqlgen's
		// marshalOUser2ᚖUser, marshalOProduct2map).
		if reflect.ValueOf(res).IsNil() {
			return nil
		}
		return res
	}
	if _, ok := res.(graphql.Marshaler); ok {
		// The budget was spent (aroundField's null): the response is
		// replaced by its error (aroundResponse).
		return nil
	}
	graphql.AddErrorf(errs.field(), `unexpected type %T from middleware/directive chain, should be %T`, res, root.zero)
	return nil
}

// appendObject appends the selected fields of the object (a model or a
// map) as gqlgen's _User, _Product... write them.
func (h *Handler) appendObject(ctx context.Context, errs *fastErrors, data []byte, sel ast.SelectionSet, root *fastRoot, model fastModel, obj map[string]any) []byte {
	b := budgetFrom(ctx)
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
		data = h.scalarField(errs, b, data, c, root, model, obj)
	}
	return append(data, '}')
}

// fastPointer is what a pointer to an int charges (valueBytes: any
// non-nil pointer but *string and *bool costs the same), without taking
// the address of the value.
var fastPointer int

// scalarField appends one scalar field of the object as gqlgen's
// resolveField with aroundField writes it: null once the budget is spent,
// else the value as the generated code reads it (a model's field or
// method; a map's value under the field's name, of the field's type or a
// pointer to it, else an error) charged as aroundField charges it
// (valueBytes of what the generated code returns) and null when the
// charge passes the budget; a panic or an error is added on the field's
// path, and the field is null. gqlgen's fields of these types are null
// without making their object null: a null of a non-null field here only
// comes with the budget's error, which replaces the response.
func (h *Handler) scalarField(errs *fastErrors, b *budget, data []byte, c *ast.Field, root *fastRoot, model fastModel, obj map[string]any) (out []byte) {
	sc := root.fields[c.Name]
	oc := errs.oc
	fieldCtx := func() context.Context {
		child := childLeafString
		switch sc.kind {
		case 'd':
			child = childLeafID
		case 'i':
			child = childLeafInt
		case 'b':
			child = childLeafBoolean
		}
		fc, _ := newScalarFieldContext(root.typ, graphql.CollectedField{Field: c, Selections: c.SelectionSet}, sc.method, false, child)
		return graphql.WithFieldContext(errs.field(), fc)
	}
	mark := len(data)
	defer func() {
		if r := recover(); r != nil {
			fctx := fieldCtx()
			oc.Error(fctx, oc.Recover(fctx, r))
			out = append(data[:mark], "null"...)
		}
	}()
	if b != nil && b.err() != nil {
		return append(data, "null"...)
	}
	if model != nil {
		v, _, _ := model.fastField(c.Name)
		if b != nil && !b.charge(quotedLen(v)+4+len(c.Alias)) {
			return append(data, "null"...)
		}
		return appendQuoted(data, v)
	}
	// The generated code's reading of a map's field (_Product_name).
	var (
		cost int
		null bool
		s    string
		n    int
		t    bool
	)
	switch sc.kind {
	case 's', 'd':
		switch v := obj[c.Name].(type) {
		case *string:
			if null = v == nil; !null {
				s = *v
			}
		case string:
			s = v
		case nil:
			null = true
		default:
			return h.fieldError(fieldCtx(), oc, data, fmt.Errorf("unexpected type %T for field %s", v, c.Name))
		}
		cost = 4
		if !null {
			cost = quotedLen(s)
		}
	case 'i':
		switch v := obj[c.Name].(type) {
		case *int:
			if null = v == nil; !null {
				n = *v
			}
		case int:
			n = v
		case nil:
			null = true
		default:
			return h.fieldError(fieldCtx(), oc, data, fmt.Errorf("unexpected type %T for field %s", v, c.Name))
		}
		if null {
			cost = valueBytes((*int)(nil))
		} else {
			cost = valueBytes(&fastPointer)
		}
	case 'b':
		switch v := obj[c.Name].(type) {
		case *bool:
			if null = v == nil; !null {
				t = *v
			}
		case bool:
			t = v
		case nil:
			null = true
		default:
			return h.fieldError(fieldCtx(), oc, data, fmt.Errorf("unexpected type %T for field %s", v, c.Name))
		}
		cost = valueBytes((*bool)(nil)) // any *bool, nil or not
	}
	if b != nil && !b.charge(cost+4+len(c.Alias)) {
		return append(data, "null"...)
	}
	switch {
	case null:
		return append(data, "null"...)
	case sc.kind == 'i':
		return strconv.AppendInt(data, int64(n), 10)
	case sc.kind == 'b':
		return strconv.AppendBool(data, t)
	}
	return appendQuoted(data, s)
}

// fieldError adds err as gqlgen's resolveField adds a resolver's error
// (aroundField charges nothing for it) and appends the field's null.
func (h *Handler) fieldError(fctx context.Context, oc *graphql.OperationContext, data []byte, err error) []byte {
	oc.Error(fctx, graphql.AddFieldLocationToError(fctx, err))
	return append(data, "null"...)
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
