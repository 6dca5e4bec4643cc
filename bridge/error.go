package bridge

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an error independently of any dialect. Each mapping
// package has a two-way table from codes to its own status and error type.
type Code string

const (
	CodeInvalid          Code = "invalid"           // the client's request is malformed
	CodeUnauthenticated  Code = "unauthenticated"   // missing or wrong credentials
	CodePermissionDenied Code = "permission_denied" // authenticated but not allowed
	CodeNotFound         Code = "not_found"
	CodeConflict         Code = "conflict"
	CodeTooLarge         Code = "too_large"
	CodeRateLimited      Code = "rate_limited"
	CodeUnsupported      Code = "unsupported" // valid but not something this bridge can do
	CodeUpstream         Code = "upstream"    // the upstream failed (bad gateway)
	CodeUnavailable      Code = "unavailable" // overloaded, breaker open
	CodeTimeout          Code = "timeout"
	CodeCanceled         Code = "canceled"
	CodeInternal         Code = "internal"
)

// Codes returns every Code, for the tables that must cover each (every
// mapping package's error-table test ranges over it).
func Codes() []Code {
	return []Code{CodeInvalid, CodeUnauthenticated, CodePermissionDenied, CodeNotFound, CodeConflict, CodeTooLarge,
		CodeRateLimited, CodeUnsupported, CodeUpstream, CodeUnavailable, CodeTimeout, CodeCanceled, CodeInternal}
}

// Error is the one error shape of the bridge. It travels in events and
// across dialects, so it is plain data.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`

	// Status is the upstream's HTTP status when the error came from one;
	// Type, Param and UpstreamCode are the upstream's own error fields, kept
	// so a same-dialect client gets them back unchanged. Dialect names the
	// dialect they belong to; a client of another dialect gets its own
	// status and type for Code instead.
	Dialect      string `json:"dialect,omitempty"`
	Status       int    `json:"status,omitempty"`
	Type         string `json:"type,omitempty"`
	Param        string `json:"param,omitempty"`
	UpstreamCode string `json:"upstream_code,omitempty"`

	RetryAfter time.Duration `json:"retry_after,omitempty"`
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (status %d): %s", e.Code, e.Status, e.Message)
	}
	return string(e.Code) + ": " + e.Message
}

// Errorf makes an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as an *Error; anything else becomes CodeInternal with a
// generic message, so no Go error string reaches a client.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error"}
}

// ErrorCode returns the code of err, or CodeInternal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Retryable reports whether an error is an upstream fault worth a retry or a
// breaker count: connect errors, 5xx, 429, timeouts. A client's bad request
// is never one.
func (e *Error) Retryable() bool {
	switch e.Code {
	case CodeUpstream, CodeUnavailable, CodeTimeout, CodeRateLimited:
		return true
	}
	return false
}
