package push

import "fmt"

// Code is a REST error code. The numbers follow the original service where it has one,
// so existing clients branch on them unchanged (docs/errors.md lists each with its HTTP status).
type Code int

const (
	// CodeInternal and CodeValidation share the original service's code 1, "internal error
	// or bad parameter": the API answers an internal error with HTTP 500 and an invalid
	// value with 400 (docs/errors.md, docs/decisions.md "The generic validation code").
	CodeInternal         Code = 1   // internal error; catch-all
	CodeObjectNotFound   Code = 101 // object not found
	CodeInvalidClassName Code = 103
	CodeMissingObjectID  Code = 104
	CodeInvalidKeyName   Code = 105 // invalid field name
	CodeInvalidJSON      Code = 107 // malformed JSON / a JSON dictionary is expected
	CodeInvalidType      Code = 111 // value type does not match the field
	CodeInvalidChannel   Code = 112 // invalid channel name
	CodeMissingRequired  Code = 113 // required key missing
	CodeInvalidToken     Code = 114 // invalid iOS device token
	CodeObjectTooLarge   Code = 116 // object too large
	CodeReadOnlyKey      Code = 117 // field is read-only
	CodeForbiddenClient  Code = 119 // operation not allowed from clients (needs master key)
	CodeInvalidKeyChar   Code = 121 // keys may not contain $ or .
	CodeTimeout          Code = 124
	CodeDuplicateValue   Code = 137 // unique value already taken
	CodeValidation       Code = 1   // a parameter's value is invalid (HTTP 400)
	CodeAppThreshold     Code = 154 // app threshold exceeded (daily push volume, pending scheduled pushes)
	CodeInvalidQuery     Code = 300 // query syntax
	CodeUnauthorized     Code = 401
	CodeForbidden        Code = 403
	CodeNotFoundRoute    Code = 404
	CodeTooLarge         Code = 413
	CodeUnsupportedMedia Code = 415
	CodeTooManyRequests  Code = 429
	CodeUnavailable      Code = 503
)

// Error is a REST error: a code from the table above and a message safe to show a client
// (never a token, key or payload).
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Message) }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
