package graph

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/resourceapi/resourceapi"
)

// The static limits (limits.go) price a document before it runs; a list
// without limit is priced at 10 rows, as decisions §6 says, but may return
// 1,000 (users, posts) or 100 (User.posts), and records are as large as
// their data. So every response (a query's, a mutation's, each event of a
// subscription) also runs within a budget, counted as it is produced:
//
//   - records: every record a resolver reads from the store counts, and a
//     read is only made when the most it can return fits in what is left
//     (a batch too large is split; when nothing fits, the response stops
//     with RECORD_LIMIT_EXCEEDED). No response reads more than
//     Options.MaxRecords records.
//   - bytes: every field a resolver returns is charged what it adds to the
//     encoded response (its name, its value as JSON: a string's escaped
//     length) as it is resolved, and every error what it adds. Once the
//     charges pass Options.MaxResponseBytes the response stops with
//     RESPONSE_TOO_LARGE, and every field still to resolve answers null at
//     once without running its resolver: nothing more is read or built,
//     and what was built (at most the limit, and one field) is dropped.
//     A list stops the response as soon as it is read when the strings it
//     selects of its records would not fit (shownBytes), before any of
//     them is built.
//
// A response stopped by its budget is one error and data null; the
// transports check the encoded response against the limit once more
// (capResponse), so that nothing the charges leave out (__typename) lets
// a response pass it.

// ChargeUnit is the response size that costs a caller one more request of
// its rate budget (resourceapi.ChargeRate): a response of 64 KiB or less
// costs the request alone; one of 4 MiB (the default MaxResponseBytes),
// built or refused, 64 more.
const ChargeUnit = 64 << 10

// budget is the budget of one response.
type budget struct {
	maxRecords int
	maxBytes   int64

	mu   sync.Mutex
	cond sync.Cond
	// used is the records read, inflight those reserved by reads in
	// progress (the most they can return).
	used, inflight int
	bytes          int64
	// work is the most bytes the response held or was refused (bytes and
	// what expect was asked to fit on top of them): what building it cost,
	// which the caller's rate budget is charged (aroundResponse).
	work   int64
	failed *gqlerror.Error
}

// response is what one response runs with, in one context value: its
// budget and its loaders.
type response struct {
	budget  budget
	loaders lazyLoaders
}

type responseKey struct{}

// withResponse returns ctx with a fresh budget of maxRecords records and
// maxBytes bytes and fresh loaders reading from svc, and the budget.
func withResponse(ctx context.Context, maxRecords int, maxBytes int64, svc *resourceapi.Service) (context.Context, *budget) {
	r := &response{budget: budget{maxRecords: maxRecords, maxBytes: maxBytes}, loaders: lazyLoaders{svc: svc}}
	r.budget.cond.L = &r.budget.mu
	return context.WithValue(ctx, responseKey{}, r), &r.budget
}

// budgetFrom returns the budget of the response ctx belongs to; nil outside
// one (a subscription's stream, which runs before its events' responses).
func budgetFrom(ctx context.Context) *budget {
	if r, _ := ctx.Value(responseKey{}).(*response); r != nil {
		return &r.budget
	}
	return nil
}

// reserve reserves units reads of size records each, as many of want as
// fit in what is left of the budget, and returns how many. A read reserves
// the most it can return before it runs, and returns what it did not use
// with release. When none fits while other reads of the response are in
// progress, it waits for them to return what they did not use; when none
// fits otherwise, the response has read all it may: it fails with
// RECORD_LIMIT_EXCEEDED and returns 0. A nil budget grants everything.
func (b *budget) reserve(want, size int) int {
	if b == nil || want <= 0 {
		return want
	}
	size = max(size, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.failed != nil {
			return 0
		}
		if n := min(want, (b.maxRecords-b.used-b.inflight)/size); n > 0 {
			b.inflight += n * size
			return n
		}
		if b.inflight == 0 {
			b.failLocked(recordLimitError(b.maxRecords))
			return 0
		}
		b.cond.Wait()
	}
}

// release ends a read that reserved reserved records and read read of
// them.
func (b *budget) release(reserved, read int) {
	if b == nil || reserved <= 0 {
		return
	}
	b.mu.Lock()
	b.inflight -= reserved
	b.used += min(read, reserved)
	b.mu.Unlock()
	b.cond.Broadcast()
}

// charge adds n bytes to the response, and reports whether it is still
// within the limit.
func (b *budget) charge(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed != nil {
		return false
	}
	b.bytes += int64(n)
	b.work = max(b.work, b.bytes)
	if b.bytes > b.maxBytes {
		b.failLocked(tooLargeError(b.maxBytes))
		return false
	}
	return true
}

// expect reports whether n bytes that the response will hold, but that are
// not charged yet, fit in what is left of it; when they do not, the
// response stops with RESPONSE_TOO_LARGE before they are built.
func (b *budget) expect(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed != nil {
		return false
	}
	b.work = max(b.work, b.bytes+int64(n))
	if b.bytes+int64(n) > b.maxBytes {
		b.failLocked(tooLargeError(b.maxBytes))
		return false
	}
	return true
}

// shownBytes returns what the string fields that the list field resolving
// in ctx selects of recs (name and email of users, title and content of
// posts, under each of their aliases) will add to the response: known as
// soon as the records are read, so that a list whose strings alone would
// pass the limit stops before any of it is built (the fields are charged
// when they resolve). It counts every record as shown; one that an error
// of a non-null field turns to null is not, so a response of such errors
// may be refused as too large a little early.
func shownBytes(ctx context.Context, recs []resourceapi.Record) int {
	fc := graphql.GetFieldContext(ctx)
	oc := graphql.GetOperationContext(ctx)
	if fc == nil || oc == nil || len(recs) == 0 || fc.Field.Definition == nil {
		return 0
	}
	n := 0
	for _, f := range graphql.CollectFields(oc, fc.Field.Selections, []string{fc.Field.Definition.Type.Name()}) {
		switch f.Name {
		case "name", "email", "title", "content":
			for _, rec := range recs {
				s, _ := rec[f.Name].(string)
				n += quotedLen(s) + len(f.Alias) + 4
			}
		}
	}
	return n
}

// failLocked stops the response with err, unless it was stopped already;
// b.mu is held.
func (b *budget) failLocked(err *gqlerror.Error) {
	if b.failed == nil {
		b.failed = err
		b.cond.Broadcast()
	}
}

// err returns why the response was stopped, or nil.
func (b *budget) err() *gqlerror.Error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failed
}

// stopErr returns the error a resolver fails with when the budget stopped
// its response.
func (b *budget) stopErr() error {
	err := b.err()
	if err == nil {
		err = recordLimitError(0) // a nil budget never stops
	}
	return stopError{err}
}

// stopError is the error of a resolver whose response its budget stopped.
// It is not a *gqlerror.Error, which gqlgen would give the resolver's path
// in place: resolvers of one response run at once, and loaders hand one
// error to several of them. The presenter shows it as its gqlerror.
type stopError struct{ err *gqlerror.Error }

func (e stopError) Error() string { return e.err.Message }

func recordLimitError(limit int) *gqlerror.Error {
	err := gqlerror.Errorf("The query reads more records than one request may (%d); page lists with limit and offset, "+
		"or nest fewer lists", limit)
	err.Extensions = map[string]any{"code": codeRecordLimit, "limit": limit}
	return err
}

func tooLargeError(limit int64) *gqlerror.Error {
	err := gqlerror.Errorf("The response would be larger than %d bytes; select fewer fields, or page lists with "+
		"limit and offset", limit)
	err.Extensions = map[string]any{"code": codeResponseTooLarge, "limit": limit}
	return err
}

// stopped is the response of a request its budget stopped: the one error,
// and data null (the operation ran, so data is present).
func stopped(err *gqlerror.Error, ext map[string]any) *graphql.Response {
	return &graphql.Response{Errors: gqlerror.List{err}, Data: json.RawMessage("null"), Extensions: ext}
}

// aroundResponse runs one response (of a request, or of an event of a
// subscription) within a fresh budget and fresh loaders, and replaces it
// with its budget's error when the budget stopped it.
func (h *Handler) aroundResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return h.respond(ctx, graphql.GetOperationContext(ctx).Operation, next)
}

// respond is aroundResponse for a response of op.
func (h *Handler) respond(ctx context.Context, op *ast.OperationDefinition, next graphql.ResponseHandler) *graphql.Response {
	// Fresh loaders for every response: per request, and per event of a
	// subscription, so nothing read for one is served to another.
	ctx, b := withResponse(ctx, h.cfg.MaxRecords, h.cfg.MaxResponseBytes, h.cfg.Service)
	resp := next(ctx)
	if op != nil && op.Operation != ast.Subscription {
		// A request's caller pays for what its response cost beyond the
		// one request its rate limit counted: one request per
		// ChargeUnit of response built or refused. A subscription's events
		// are the server's to send, and cost their subscriber nothing.
		b.mu.Lock()
		work := b.work
		b.mu.Unlock()
		resourceapi.ChargeRate(ctx, int(work/ChargeUnit))
	}
	if resp == nil {
		return nil
	}
	if err := b.err(); err != nil {
		return stopped(err, resp.Extensions)
	}
	return resp
}

// fieldBudget makes aroundField the resolver middleware of every
// operation. gqlgen's AroundFields would chain it behind its own
// middleware, which wraps the resolver of each field in one more closure
// (an allocation per field) to call aroundField with; set as the
// operation's ResolverMiddleware, aroundField is called with the resolver
// itself. It is the only field middleware graph has: another one added
// with AroundFields or a FieldInterceptor would be left out (an
// OperationContextMutator that runs after CreateOperationContext set the
// chain), which TestFieldMiddlewareIsTheBudgetOnly checks.
type fieldBudget struct{ around graphql.FieldMiddleware }

var (
	_ graphql.HandlerExtension        = fieldBudget{}
	_ graphql.OperationContextMutator = fieldBudget{}
)

func (fieldBudget) ExtensionName() string                   { return "fieldBudget" }
func (fieldBudget) Validate(graphql.ExecutableSchema) error { return nil }
func (f fieldBudget) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	oc.ResolverMiddleware = f.around
	return nil
}

// aroundField charges each field of a response to its budget, and once the
// budget is spent answers every field still to resolve with null, without
// running its resolver. A Marshaler result is taken by gqlgen as the
// field's final value, without the checks of its type, so a non-null field
// answers null too (the response is dropped anyway).
func (h *Handler) aroundField(ctx context.Context, next graphql.Resolver) (any, error) {
	alias := ""
	if fc := graphql.GetFieldContext(ctx); fc != nil {
		alias = fc.Field.Alias
	}
	return chargeField(ctx, alias, next)
}

// chargeField is aroundField for a field under the response key alias.
func chargeField(ctx context.Context, alias string, next graphql.Resolver) (any, error) {
	b := budgetFrom(ctx)
	if b == nil {
		return next(ctx)
	}
	if b.err() != nil {
		return graphql.Null, nil
	}
	res, err := next(ctx)
	if err != nil {
		return res, err
	}
	if !b.charge(valueBytes(res) + 4 + len(alias)) { // "":,
		return graphql.Null, nil
	}
	return res, nil
}

// valueBytes returns the length of v encoded as a field's JSON value: a
// scalar's encoding, or for an object its braces and for a list its
// brackets, commas and its objects' braces (their fields are charged as
// they resolve).
func valueBytes(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case string:
		return quotedLen(v)
	case *string:
		if v == nil {
			return 4
		}
		return quotedLen(*v)
	case bool, *bool:
		return 5
	case int:
		return len(strconv.Itoa(v))
	case []string:
		n := 2
		for _, s := range v {
			n += quotedLen(s) + 1
		}
		return n
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice:
		if rv.IsNil() {
			return 4
		}
		return 2 + 3*rv.Len()
	case reflect.Pointer:
		if rv.IsNil() {
			return 4
		}
		return 2
	}
	return 20 // another scalar: at most a number's digits
}

// quotedLen returns the length of s as gqlgen writes a JSON string: quoted,
// with ", \ and control characters escaped.
func quotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\t' || c == '\n' || c == '\r':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// errorBytes estimates the length of err in a response's errors: its
// message, path and extensions, and the JSON around them.
func errorBytes(err *gqlerror.Error) int {
	n := quotedLen(err.Message) + 64 + 12*len(err.Path)
	for k, v := range err.Extensions {
		n += len(k) + 4
		if s, ok := v.(string); ok {
			n += quotedLen(s)
		} else {
			n += 32
		}
	}
	return n
}

// capResponse returns encoded, a response as the transport sends it, or
// the encoding of RESPONSE_TOO_LARGE when it is longer than the limit: the
// one check on what a response may hold, whatever the charges estimated.
func (h *Handler) capResponse(encoded []byte) []byte {
	if int64(len(encoded)) <= h.cfg.MaxResponseBytes {
		return encoded
	}
	return encodeResponse(stopped(tooLargeError(h.cfg.MaxResponseBytes), nil))
}
