// Package function greets the caller; it shows how query, headers, body, status and errors travel.
package function

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	handler "github.com/openfaas/templates-sdk/go-http"
)

// Handle answers one task.
func Handle(req handler.Request) (handler.Response, error) {
	query, _ := url.ParseQuery(req.QueryString)
	name := query.Get("name")
	if name == "" {
		name = "world"
	}
	if query.Has("fail") {
		return handler.Response{}, errors.New("boom: failure requested by the caller")
	}
	status := http.StatusOK
	if s, err := strconv.Atoi(query.Get("status")); err == nil {
		status = s
	}
	fmt.Printf("greeting %s (%s)\n", name, req.Method)

	var received interface{}
	_ = json.Unmarshal(req.Body, &received)
	var header interface{}
	if h := req.Header.Get("X-Test"); h != "" {
		header = h
	}
	body, err := json.Marshal(map[string]interface{}{
		"message":  "Hello, " + name + "!",
		"method":   req.Method,
		"received": received,
		"header":   header,
	})
	if err != nil {
		return handler.Response{}, err
	}
	return handler.Response{
		StatusCode: status,
		Body:       body,
		Header:     http.Header{"Content-Type": {"application/json"}, "X-Greeting": {name}},
	}, nil
}
