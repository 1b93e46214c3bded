// Package apiclient is the Ski Data API's HTTP client, generated from
// openapi.yaml by oapi-codegen (apiclient.gen.go; never edit it). It is what
// skiload and the end-to-end tests speak: the spec is the one place routes
// and bodies are spelled, so a change to the spec that breaks a client breaks
// the build, not a load run.
//
// For load generation use the NewXxxRequest builders with your own
// http.Client (they allocate no more than a hand-built request); the
// ClientWithResponses convenience methods also parse every answer.
package apiclient
