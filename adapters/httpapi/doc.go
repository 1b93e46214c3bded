// Package httpapi is the HTTP adapter: the server generated from openapi.yaml
// (api.gen.go, never edited by hand) and the handlers that implement its
// strict interface by translating API types to domain values and calling the
// core through the ports (RideIngester, RideQueries, Resorts, EndpointStats,
// Health).
//
// Around the generated router sit the cross-cutting pieces every request
// needs: a 4 KiB body limit, per-route latency statistics, and JSON bodies for
// every error, including the router's own answers. Domain errors map to
// HTTP status codes in exactly one function, statusOf.
package httpapi
