package httpapi

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/skidata/skidata/ports"
)

// RemoteAddress is the client as the connection shows it: the peer's IP.
func RemoteAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ForwardedAddress is the client as the load balancer in front saw it: the
// last address of X-Forwarded-For, the one the load balancer appended
// (earlier ones are whatever the client claimed), or the peer's own when
// the header is absent. Use it only behind a load balancer that appends
// the header, and that is the only way in.
func ForwardedAddress(r *http.Request) string {
	values := r.Header.Values("X-Forwarded-For")
	if len(values) == 0 {
		return RemoteAddress(r)
	}
	last := values[len(values)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	if last = strings.TrimSpace(last); last == "" {
		return RemoteAddress(r)
	}
	return last
}

// clientOfRide names, in the context of a POSTed ride, the client who sent
// it (ports.WithClient), for ingest's per-client rate limit. Only the ride
// route carries it: the queries are not limited per client.
func clientOfRide(address func(*http.Request) string) StrictMiddlewareFunc {
	return func(f StrictHandlerFunc, operationID string) StrictHandlerFunc {
		if operationID != "WriteNewLiftRide" {
			return f
		}
		return func(ctx context.Context, w http.ResponseWriter, r *http.Request, request any) (any, error) {
			return f(ports.WithClient(ctx, address(r)), w, r, request)
		}
	}
}
