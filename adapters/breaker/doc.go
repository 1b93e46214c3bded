// Package breaker decorates any ports.Publisher with a circuit breaker
// (github.com/sony/gobreaker/v2). When the queue keeps refusing rides
// (errors wrapping domain.ErrUnavailable: full, unreachable) the breaker
// opens and Publish fails at once with ErrUnavailable — the API answers 503
// with Retry-After without tying up a request on a queue that is down — then
// after OpenFor it lets one probe through (half-open) and closes on success.
//
// It lives in an adapter, not in app, because the core imports only domain
// and ports; it is wired around the queue's publisher in app/inject_queue.go.
package breaker
