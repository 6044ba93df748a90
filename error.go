package resourceapi

import (
	"errors"
	"fmt"
	"time"
)

// Code is a machine-readable error code. Transports map each code to a status
// (http) or an extensions.code (graph) in exactly one table each.
type Code string

// Error codes of the service, shared by every transport.
const (
	CodeBadRequest           Code = "BAD_REQUEST"
	CodeValidation           Code = "VALIDATION_ERROR"
	CodeUnauthenticated      Code = "UNAUTHENTICATED"
	CodeInvalidToken         Code = "INVALID_TOKEN"
	CodeForbidden            Code = "FORBIDDEN"
	CodeNotFound             Code = "NOT_FOUND"
	CodeMethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	CodeNotAcceptable        Code = "NOT_ACCEPTABLE"
	CodeConflict             Code = "CONFLICT"
	CodePreconditionFailed   Code = "PRECONDITION_FAILED"
	CodePayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnprocessable        Code = "UNPROCESSABLE"
	CodeRateLimited          Code = "RATE_LIMITED"
	CodeInternal             Code = "INTERNAL"
	CodeUnavailable          Code = "UNAVAILABLE"
)

// Error is the one error type whose code and message may reach a client. Any
// other error is internal: clients see CodeInternal and a generic message,
// while the full chain is logged.
type Error struct {
	Code    Code
	Message string
	Details []FieldError
	// RetryAfter, with CodeRateLimited or CodeUnavailable, is how long the
	// client should wait before trying again.
	RetryAfter time.Duration
}

// FieldError says what is wrong with one field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if len(e.Details) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s %v", e.Code, e.Message, e.Details)
}

// Errorf returns an *Error with the given code and a formatted message that is
// safe to show a client.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return CodeInternal
}

// ErrorOf returns the first *Error in err's chain, or a generic CodeInternal
// error that reveals nothing about err.
func ErrorOf(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Code: CodeInternal, Message: "Internal server error"}
}
