// Package function counts its calls in the function's storage: each call gets GC-Storage and
// answers the next value.
package function

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"

	handler "github.com/openfaas/templates-sdk/go-http"
)

// Handle answers one task.
func Handle(req handler.Request) (handler.Response, error) {
	count := 0
	if stored, err := base64.StdEncoding.DecodeString(req.Header.Get("GC-Storage")); err == nil && len(stored) > 0 {
		count, _ = strconv.Atoi(string(stored))
	}
	count++
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("GC-Storage", base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(count))))
	return handler.Response{StatusCode: http.StatusOK, Body: []byte(fmt.Sprintf(`{"count":%d}`, count)), Header: h}, nil
}
