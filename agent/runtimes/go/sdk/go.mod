module github.com/openfaas/templates-sdk/go-http

go 1.19
