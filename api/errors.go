package api

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
)

// codeStatus maps each REST code we answer with to its HTTP status. docs/errors.md is the
// reader's copy of this table; TestAPIErrorsDocListsEveryCode keeps them in step.
//
// Code 1 is both push.CodeValidation (400, here) and push.CodeInternal (500): the one
// internal error value, errInternal, is written by writeInternal with its own status.
var codeStatus = map[push.Code]int{
	push.CodeObjectNotFound:   fasthttp.StatusNotFound,
	push.CodeInvalidClassName: fasthttp.StatusBadRequest,
	push.CodeMissingObjectID:  fasthttp.StatusBadRequest,
	push.CodeInvalidKeyName:   fasthttp.StatusBadRequest,
	push.CodeInvalidJSON:      fasthttp.StatusBadRequest,
	push.CodeInvalidType:      fasthttp.StatusBadRequest,
	push.CodeInvalidChannel:   fasthttp.StatusBadRequest,
	push.CodeMissingRequired:  fasthttp.StatusBadRequest,
	push.CodeInvalidToken:     fasthttp.StatusBadRequest,
	push.CodeObjectTooLarge:   fasthttp.StatusBadRequest,
	push.CodeReadOnlyKey:      fasthttp.StatusBadRequest,
	push.CodeForbiddenClient:  fasthttp.StatusForbidden,
	push.CodeInvalidKeyChar:   fasthttp.StatusBadRequest,
	push.CodeTimeout:          fasthttp.StatusGatewayTimeout,
	push.CodeDuplicateValue:   fasthttp.StatusBadRequest,
	push.CodeValidation:       fasthttp.StatusBadRequest, // also push.CodeInternal: see writeInternal
	push.CodeAppThreshold:     fasthttp.StatusTooManyRequests,
	push.CodeInvalidQuery:     fasthttp.StatusBadRequest,
	push.CodeUnauthorized:     fasthttp.StatusUnauthorized,
	push.CodeForbidden:        fasthttp.StatusForbidden,
	push.CodeNotFoundRoute:    fasthttp.StatusNotFound,
	push.CodeTooLarge:         fasthttp.StatusRequestEntityTooLarge,
	push.CodeUnsupportedMedia: fasthttp.StatusUnsupportedMediaType,
	push.CodeTooManyRequests:  fasthttp.StatusTooManyRequests,
	push.CodeUnavailable:      fasthttp.StatusServiceUnavailable,
}

// StatusOf is the HTTP status of a REST code: its row in the table, else 400 for codes
// below 200 (request errors), else 500.
func StatusOf(c push.Code) int {
	if s, ok := codeStatus[c]; ok {
		return s
	}
	if c < 200 {
		return fasthttp.StatusBadRequest
	}
	return fasthttp.StatusInternalServerError
}

// WriteError writes e as {code, error} with its HTTP status.
func WriteError(ctx *fasthttp.RequestCtx, e *push.Error) {
	writeErrorStatus(ctx, StatusOf(e.Code), e)
}

func writeErrorStatus(ctx *fasthttp.RequestCtx, status int, e *push.Error) {
	ctx.Response.Header.SetContentType(contentTypeJSON)
	ctx.SetStatusCode(status)
	b := make([]byte, 0, 48+len(e.Message))
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, `,"error":`...)
	msg, _ := json.Marshal(e.Message) // a string always marshals
	b = append(b, msg...)
	b = append(b, '}')
	ctx.SetBody(b)
}

// writeInternal answers an internal error: code 1 with HTTP 500 (the same code as an invalid
// value, which is 400, as the original service's code 1 covers both).
func writeInternal(ctx *fasthttp.RequestCtx) {
	writeErrorStatus(ctx, fasthttp.StatusInternalServerError, errInternal)
}

// asPushError returns the *push.Error inside err, or nil.
func asPushError(err error) *push.Error {
	var pe *push.Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Errors the router answers with; their texts are part of docs/errors.md.
var (
	errNotJSONObject = push.Errorf(push.CodeInvalidJSON, "a JSON dictionary is expected")
	errInternal      = push.Errorf(push.CodeInternal, "internal error")
)
