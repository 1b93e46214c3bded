package httpapi

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o api.gen.go ../../openapi.yaml
//go:generate go tool oapi-codegen -config client.yaml -o client.gen.go ../../openapi.yaml
