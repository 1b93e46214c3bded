package apiclient

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o apiclient.gen.go ../../../openapi.yaml
