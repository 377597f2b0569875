// Package handler holds the request and response types of Go functions. Its import path and shape
// are those of OpenFaaS's go-http template SDK, so functions written for it build unchanged.
package handler

import (
	"context"
	"net/http"
)

// Response is what a function answers; StatusCode 0 means 200.
type Response struct {
	Body       []byte
	Header     http.Header
	StatusCode int
}

// Request is the task's request: method, raw query string, headers and body.
type Request struct {
	Body        []byte
	Header      http.Header
	QueryString string
	Method      string
	Host        string
	ctx         context.Context
}

// Context is cancelled when the caller goes away.
func (r Request) Context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// WithContext sets the request's context.
func (r *Request) WithContext(ctx context.Context) {
	r.ctx = ctx
}
