// Package function returns a fresh random UUID using the vendored github.com/google/uuid module.
package function

import (
	"net/http"

	"github.com/google/uuid"
	handler "github.com/openfaas/templates-sdk/go-http"
)

// Handle answers one task.
func Handle(req handler.Request) (handler.Response, error) {
	id := uuid.New()
	return handler.Response{
		StatusCode: http.StatusOK,
		Body:       []byte(`{"uuid":"` + id.String() + `","version":` + string('0'+byte(id.Version())) + `}`),
		Header:     http.Header{"Content-Type": {"application/json"}},
	}, nil
}
