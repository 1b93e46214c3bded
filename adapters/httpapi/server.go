package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skidata/skidata/adapters/redact"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// MaxBodyBytes bounds every request body; a larger one is answered 413.
const MaxBodyBytes = 4 << 10

// RetryAfterSeconds is what 429 and 503 answers put in Retry-After.
const RetryAfterSeconds = 1

// RateLimitPolicy names the ride-rate limit (--ingest-rate) in the
// RateLimit field of a 429 (draft-ietf-httpapi-ratelimit-headers): r=0
// quota left, t= seconds until it refills. The limit refills every
// 1/rate seconds, so a whole-second Retry-After is an upper bound; the
// README says how clients should retry sooner.
const RateLimitPolicy = "ingest"

// StatusClientClosedRequest is the status recorded (in /statistics and
// the metrics) for a request whose client went away before its answer:
// nginx's 499, which no client sees. It is neither a server error nor a
// refusal, so it is counted apart from both.
const StatusClientClosedRequest = 499

// NewHandler returns the whole API as one http.Handler: the generated router
// with the strict handlers, wrapped in the body limit, latency statistics and
// JSON errors. Every operation has one way in: its generated route.
func NewHandler(h *Handlers, log *slog.Logger) http.Handler {
	errs := errorWriter{log: log}
	strict := NewStrictHandlerWithOptions(h, []StrictMiddlewareFunc{operations(h.ClientAddress, log)}, StrictHTTPServerOptions{
		RequestErrorHandlerFunc:  errs.responseError, // decoding a body the strict check accepted cannot fail
		ResponseErrorHandlerFunc: errs.responseError,
	})
	mux := http.NewServeMux()
	HandlerWithOptions(strict, StdHTTPServerOptions{
		BaseRouter:       checkedRouter{mux},
		ErrorHandlerFunc: errs.paramError,
		Middlewares:      []MiddlewareFunc{strictBodies(errs)},
	})
	if h.Metrics != nil { // another method is the mux's 405, answered in JSON as the API's own
		mux.Handle(metricsPattern, h.Metrics)
	}
	return &instrumented{mux: mux, stats: h.Stats}
}

// MetricsPath is where Handlers.Metrics is served.
const MetricsPath = "/metrics"

const metricsPattern = "GET " + MetricsPath

// operations is the strict middleware of every operation, run only for a
// request its generated route serves. At debug level it logs the
// operation's id, as the message (so that the log's limit on repeats
// counts each operation apart); TestEveryOperationIsAnsweredByItsGeneratedRoute
// reads it. For a POSTed ride it names the ride's client in the context
// (ports.WithClient), for ingest's per-client rate limit, when address is
// set; the queries are not limited per client.
func operations(address func(*http.Request) string, log *slog.Logger) StrictMiddlewareFunc {
	return func(f StrictHandlerFunc, operationID string) StrictHandlerFunc {
		return func(ctx context.Context, w http.ResponseWriter, r *http.Request, request any) (any, error) {
			if log.Enabled(ctx, slog.LevelDebug) {
				log.LogAttrs(ctx, slog.LevelDebug, operationID, slog.String("method", r.Method), slog.String("path", r.URL.Path))
			}
			if address != nil && operationID == "WriteNewLiftRide" {
				ctx = ports.WithClient(ctx, address(r))
			}
			return f(ctx, w, r, request)
		}
	}
}

// instrumented applies what every request needs, around the router.
type instrumented struct {
	mux   *http.ServeMux
	stats interface {
		Observe(route, method string, status int, d time.Duration)
	}
}

func (s *instrumented) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, req: r, status: http.StatusOK}
	if r.ContentLength > MaxBodyBytes {
		writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is %d bytes; the limit is %d", r.ContentLength, MaxBodyBytes))
		return
	}
	if r.Body != nil && r.Body != http.NoBody { // a GET has none to bound
		r.Body = http.MaxBytesReader(rec, r.Body, MaxBodyBytes)
	}
	s.mux.ServeHTTP(rec, r)
	// The mux sets r.Pattern ("GET /resorts/{resortID}/seasons") when a
	// route matched; unmatched requests are not recorded, so that random
	// paths cannot grow the table. A HEAD is served by its GET route and
	// recorded as a HEAD of that route. /metrics is not the API's.
	if r.Pattern != "" && r.Pattern != metricsPattern {
		_, route, _ := strings.Cut(r.Pattern, " ") // "GET /resorts" is /resorts
		s.stats.Observe(route, r.Method, rec.status, time.Since(start))
	}
}

// recorder remembers the status, and turns the router's own plain-text
// answers into JSON ones: 404 and 405, and the empty 400 to a target of
// "*". The router also redirects a path that is not in canonical form
// ("/resorts/../resorts", "/.") to its cleaned form; no route of the API is
// reached that way, so that is a JSON 404 too ("/resorts/1//seasons" is not
// "/resorts/1/seasons").
type recorder struct {
	http.ResponseWriter
	req       *http.Request
	status    int
	swallowed bool
}

func (rw *recorder) WriteHeader(code int) {
	rw.status = code
	redirect := code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect || code == http.StatusPermanentRedirect
	// Without a Pattern no route ran: the answer is the router's. A
	// redirect can only be the router's (no handler redirects), and it may
	// set Pattern to the route the cleaned path would match.
	if rw.req.Pattern != "" && !redirect {
		rw.ResponseWriter.WriteHeader(code)
		return
	}
	path := rw.req.URL.Path
	if path == "" {
		path = rw.req.RequestURI // CONNECT host:port has no path
	}
	var msg string
	switch code {
	case http.StatusMethodNotAllowed:
		msg = fmt.Sprintf("method %s is not allowed on %s; allowed: %s", rw.req.Method, path, rw.Header().Get("Allow"))
	case http.StatusBadRequest: // the router's answer to a target of "*"
		msg = fmt.Sprintf("request target %q is not a path; see openapi.yaml for the API's paths", rw.req.RequestURI)
	default:
		code, msg = http.StatusNotFound, fmt.Sprintf("no route for %s %s; see openapi.yaml for the API", rw.req.Method, path)
		rw.status = code
		rw.Header().Del("Location")
	}
	rw.swallowed = true
	rw.Header().Del("X-Content-Type-Options")
	writeJSONError(rw.ResponseWriter, code, msg)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.swallowed {
		return len(b), nil // the router's plain-text body, replaced above
	}
	return rw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// statusOf maps an error to its HTTP status: the one place where domain
// errors become status codes. ctx is the request's: when it was cancelled,
// the client went away (net/http cancels it when the connection closes)
// while the request waited, whatever error the wait ended with.
func statusOf(ctx context.Context, err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return StatusClientClosedRequest
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, domain.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, domain.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, domain.ErrOverloaded):
		return http.StatusTooManyRequests
	case errors.Is(err, domain.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		// A request past its deadline waited on the store or the queue.
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

type errorWriter struct{ log *slog.Logger }

// responseError answers an error returned by a handler: the status from
// statusOf, the body from publicMessage, and for a 5xx the cause (secrets
// masked) in the log, which is the only place it goes. A client that went
// away is no failure of the server's: a debug line.
func (e errorWriter) responseError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(r.Context(), err)
	switch {
	case status == StatusClientClosedRequest:
		e.log.Debug("client went away before its answer", "method", r.Method, "route", r.Pattern, "err", redact.Secrets(err.Error()))
	case status == http.StatusInternalServerError:
		e.log.Error("request failed", "method", r.Method, "route", r.Pattern, "status", status, "err", redact.Secrets(err.Error()))
	case status >= 500:
		e.log.Warn("request failed", "method", r.Method, "route", r.Pattern, "status", status, "err", redact.Secrets(err.Error()))
	}
	writeJSONError(w, status, publicMessage(r, status, err))
}

// writeRidePattern is the route of writeNewLiftRide, whose dependency is
// the queue; every other route's is the store.
const writeRidePattern = "POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}"

// publicMessage is what the caller is told: what went wrong in its terms
// and what it can do, never the cause. A 5xx is fixed text (the cause of a
// store or queue failure names hosts, URLs, tables and driver errors); a
// 4xx is the message of the domain error the core made for the caller,
// which names only what the caller sent.
func publicMessage(r *http.Request, status int, err error) string {
	switch status {
	case http.StatusServiceUnavailable:
		if r.Pattern == writeRidePattern {
			return fmt.Sprintf("the ride queue cannot take the ride now; retry after %d s", RetryAfterSeconds)
		}
		return fmt.Sprintf("the ride store is unavailable; retry after %d s", RetryAfterSeconds)
	case http.StatusInternalServerError:
		return "internal error; the cause is in the server log"
	case StatusClientClosedRequest: // read by no one: the connection is gone
		return "the client closed the request before its answer"
	case http.StatusRequestEntityTooLarge:
		return fmt.Sprintf("request body is larger than the limit of %d bytes", MaxBodyBytes)
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Msg
	}
	return strings.ToLower(http.StatusText(status)) + "; see openapi.yaml for what each operation takes"
}

// paramError answers a path or query parameter of the wrong type.
func (e errorWriter) paramError(w http.ResponseWriter, r *http.Request, err error) {
	var format *InvalidParamFormatError
	var required *RequiredParamError
	switch {
	case errors.As(err, &format):
		got := cmp.Or(r.PathValue(format.ParamName), r.URL.Query().Get(format.ParamName))
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%s must be a whole number that fits in 32 bits, got %q", format.ParamName, got))
	case errors.As(err, &required):
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("query parameter %s is required", required.ParamName))
	default:
		writeJSONError(w, http.StatusBadRequest, err.Error())
	}
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(ResponseMsg{Message: msg})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1)) // a HEAD's answer says it too
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	}
	if status == http.StatusTooManyRequests {
		h.Set("RateLimit", fmt.Sprintf("%q;r=0;t=%d", RateLimitPolicy, RetryAfterSeconds))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// ConsumerRoleMessage is what a consumer process answers on every path but
// the health endpoints: it persists rides, it does not take or answer them.
const ConsumerRoleMessage = "this process runs --role consumer: it serves /healthz, /readyz and /metrics only; send rides and queries to an api process"

// NewOpsHandler serves a process that runs no API (--role consumer): the
// same /healthz, /readyz and /metrics as the API, and a 404 naming the role
// for anything else, so a misrouted POST is refused instead of accepted.
func NewOpsHandler(health ports.Health, stats ports.EndpointStats, metrics http.Handler, log *slog.Logger) http.Handler {
	api := NewHandler(&Handlers{Health: health, Stats: stats, Metrics: metrics}, log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", MetricsPath:
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				api.ServeHTTP(w, r)
				return
			}
		}
		writeJSONError(w, http.StatusNotFound, ConsumerRoleMessage)
	})
}
