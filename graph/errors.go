package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/resourceapi/resourceapi"
)

// codeOf is the one table from the rule layer's error codes to GraphQL's
// extensions.code. A code that is not here is a programming error, which the
// client sees as any internal failure.
var codeOf = map[resourceapi.Code]string{
	resourceapi.CodeUnauthenticated: "UNAUTHENTICATED",
	resourceapi.CodeInvalidToken:    "INVALID_TOKEN",
	resourceapi.CodeForbidden:       "FORBIDDEN",
	resourceapi.CodeNotFound:        "NOT_FOUND",
	resourceapi.CodeValidation:      "BAD_USER_INPUT",
	resourceapi.CodeBadRequest:      "BAD_REQUEST",
	resourceapi.CodeConflict:        "CONFLICT",
	// A write the rules refuse as a whole (the last admin) is UNPROCESSABLE;
	// one that names records that do not exist is bad input, naming the
	// argument (see present).
	resourceapi.CodeUnprocessable: "UNPROCESSABLE",
	resourceapi.CodeRateLimited:   "RATE_LIMITED",
	resourceapi.CodeUnavailable:   "UNAVAILABLE",
	resourceapi.CodeInternal:      "INTERNAL_SERVER_ERROR",
}

// Codes of the GraphQL layer's own errors.
const (
	codeComplexity       = "COMPLEXITY_LIMIT_EXCEEDED"
	codeDepth            = "DEPTH_LIMIT_EXCEEDED"
	codeRecordLimit      = "RECORD_LIMIT_EXCEEDED"
	codeResponseTooLarge = "RESPONSE_TOO_LARGE"
	codeBadUserInput     = "BAD_USER_INPUT"
	codeBadRequest       = "BAD_REQUEST"
	codeSubscriptions    = "TOO_MANY_SUBSCRIPTIONS"
	codeInternal         = "INTERNAL_SERVER_ERROR"
)

// argumentOf names a record field as the GraphQL argument that sets it,
// where the two differ.
var argumentOf = map[string]string{"author_id": "authorId"}

func argument(field string) string {
	if a, ok := argumentOf[field]; ok {
		return a
	}
	return field
}

// presenter turns a resolver's error into the GraphQL error the client sees:
// a rule layer's *resourceapi.Error keeps its message and gets its code from
// codeOf (BAD_USER_INPUT names the argument in extensions.field, and lists
// every problem in extensions.details); errors of the GraphQL layer itself
// (parsing, validation, limits) keep theirs; anything else is internal: the
// client sees a generic message, and the log the cause with the request id.
// Each error is charged to the response's budget (budget.go).
func (h *Handler) presenter(ctx context.Context, err error) *gqlerror.Error {
	out := h.present(ctx, err)
	budgetFrom(ctx).charge(errorBytes(out))
	return out
}

func (h *Handler) present(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		return gqlErr // the GraphQL layer's own error, already safe
	}
	out := graphql.DefaultErrorPresenter(ctx, err)
	var stop stopError
	if errors.As(err, &stop) { // the response's budget stopped it (budget.go)
		out.Message = stop.err.Message
		out.Extensions = maps.Clone(stop.err.Extensions)
		return out
	}
	var domain *resourceapi.Error
	if !errors.As(err, &domain) {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			out.Message = "The request was cancelled"
			out.Extensions = map[string]any{"code": "CANCELLED"}
			return out
		}
		h.logInternal(ctx, err)
		out.Message = "Internal server error"
		out.Extensions = map[string]any{"code": codeInternal, "requestId": h.requestID(ctx)}
		return out
	}
	code, ok := codeOf[domain.Code]
	if !ok || domain.Code == resourceapi.CodeInternal {
		h.logInternal(ctx, err)
		out.Message = "Internal server error"
		out.Extensions = map[string]any{"code": codeInternal, "requestId": h.requestID(ctx)}
		return out
	}
	out.Message = domain.Message
	out.Extensions = map[string]any{"code": code}
	if len(domain.Details) > 0 {
		if domain.Code == resourceapi.CodeUnprocessable {
			code = codeBadUserInput
			out.Extensions["code"] = code
		}
		details := make([]map[string]string, len(domain.Details))
		for i, d := range domain.Details {
			details[i] = map[string]string{"field": argument(d.Field), "message": d.Message}
		}
		first := domain.Details[0]
		out.Extensions["field"] = argument(first.Field)
		out.Extensions["details"] = details
		if code == codeBadUserInput {
			out.Message = fmt.Sprintf("Invalid %s: %s", argument(first.Field), first.Message)
		}
	}
	if domain.RetryAfter > 0 {
		out.Extensions["retryAfter"] = int(domain.RetryAfter.Seconds() + 0.999)
	}
	return out
}

// recoverPanic turns a resolver's panic into an internal error; the
// presenter logs it.
func (h *Handler) recoverPanic(ctx context.Context, p any) error {
	return fmt.Errorf("panic in resolver: %v", p)
}

func (h *Handler) logInternal(ctx context.Context, err error) {
	attrs := []slog.Attr{slog.String("request_id", h.requestID(ctx)), slog.String("err", err.Error())}
	if fc := graphql.GetFieldContext(ctx); fc != nil {
		attrs = append(attrs, slog.String("path", fc.Path().String()))
	}
	h.logger.LogAttrs(ctx, slog.LevelError, "graphql field failed", attrs...)
}

func (h *Handler) requestID(ctx context.Context) string {
	if h.cfg.RequestID == nil {
		return ""
	}
	return h.cfg.RequestID(ctx)
}

// badInput is the error of an argument that cannot be read (an id that is
// not a decimal integer).
func badInput(field, msg string) error {
	return &resourceapi.Error{Code: resourceapi.CodeValidation, Message: "Invalid " + field + ": " + msg,
		Details: []resourceapi.FieldError{{Field: field, Message: msg}}}
}
