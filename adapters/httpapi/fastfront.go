package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// The fasthttp front (--http-server fasthttp) serves the API on fasthttp's
// server. net/http spends a good part of a small request's CPU on objects
// it makes for each request (the request, its header maps, the response
// and its buffers) and the goroutine it starts to watch the connection
// while the handler runs; fasthttp reuses its own (docs/benchmarks.md, "The
// HTTP server").
//
// The front is not a second API: the direct routes' common requests (a
// ride, the three queries skiload measures) are handed to the same direct
// routes (serveDirect) on a small *http.Request made from fasthttp's, and
// every other request (other routes, odd spellings, errors before a
// route, /metrics) to the net/http handler on a copy of the request as
// net/http would make it (ownRequest), so every answer is the handler's.
// TestTheFastFrontAnswersAsNetHTTP and its fuzz target hold the two servers
// to the same answers; test/e2e runs the API suite on it.

// directServer is a handler that can serve a direct route's common
// request by itself: serveDirect answers and returns true, or writes
// nothing and returns false.
type directServer interface {
	serveDirect(w statusWriter, r *http.Request) bool
}

// statusWriter is a ResponseWriter that remembers the status it wrote.
type statusWriter interface {
	http.ResponseWriter
	Status() int
}

// serveDirect is ServeHTTP for a request the direct routes take: the same
// statistics, without the body limit's reader (the front has read the
// whole body, within fasthttp's limit of MaxBodyBytes).
func (s *instrumented) serveDirect(w statusWriter, r *http.Request) bool {
	if s.direct == nil || r.ContentLength > MaxBodyBytes {
		return false
	}
	start := time.Now()
	if !s.direct.serveFast(w, r) {
		return false
	}
	s.stats.Observe(routeOf(r.Pattern), r.Method, w.Status(), time.Since(start))
	return true
}

// WithDeadline gives every request's context the handler timeout d: the
// store and queue calls honour it, and a request past it is answered 503.
func WithDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// FastHandler serves handler (NewHandler's, or WithMetrics around it) on
// fasthttp. deadline, when positive, is every request's deadline (as
// WithDeadline gives it); 0 gives none. A handler that panics is answered
// 500 and its connection closed, the panic logged on log: fasthttp, unlike
// net/http, would let it end the process.
func FastHandler(handler http.Handler, deadline time.Duration, log *slog.Logger) fasthttp.RequestHandler {
	served := handler
	if deadline > 0 {
		served = WithDeadline(handler, deadline)
	}
	slow := func(ctx *fasthttp.RequestCtx) {
		r, err := ownRequest(ctx)
		if err != nil {
			FastErrorHandler(ctx, errBadTarget)
			return
		}
		w := &fastWriter{ctx: ctx, header: http.Header{}}
		served.ServeHTTP(w, r)
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		if body := ctx.Response.Body(); len(body) > 0 && len(ctx.Response.Header.ContentType()) == 0 {
			ctx.SetContentType(http.DetectContentType(body)) // as net/http does
		}
	}
	d, _ := handler.(directServer)
	return func(ctx *fasthttp.RequestCtx) {
		defer answerPanic(ctx, log)
		if d == nil || !serveDirectFast(ctx, d, deadline) {
			slow(ctx)
		}
	}
}

// answerPanic recovers a handler's panic: the answer so far is replaced by
// a 500, the connection closed, and the panic logged (http.ErrAbortHandler,
// a handler's way of giving up quietly, only closes the connection).
func answerPanic(ctx *fasthttp.RequestCtx, log *slog.Logger) {
	rec := recover()
	if rec == nil {
		return
	}
	if rec != http.ErrAbortHandler && log != nil {
		log.Error("request panicked", "method", string(ctx.Method()), "path", string(ctx.Path()), "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
	}
	ctx.Response.Reset()
	ctx.SetConnectionClose()
	writeJSONError(&fastWriter{ctx: ctx, header: http.Header{}}, http.StatusInternalServerError, "internal error; the cause is in the server log")
}

// ownRequest is fasthttp's request as net/http's, every string and the
// body copied: fasthttpadaptor's conversion leaves them in fasthttp's
// buffers, reused once the handler returns, and a handler may keep them (a
// season id in the store, a method in the statistics). err: the target
// is not a URL.
func ownRequest(ctx *fasthttp.RequestCtx) (*http.Request, error) {
	var in http.Request
	if err := fasthttpadaptor.ConvertRequest(ctx, &in, true); err != nil {
		return nil, err
	}
	r := &http.Request{
		Method: strings.Clone(in.Method), Proto: strings.Clone(in.Proto), ProtoMajor: in.ProtoMajor, ProtoMinor: in.ProtoMinor,
		RequestURI: strings.Clone(in.RequestURI), Host: strings.Clone(in.Host), RemoteAddr: strings.Clone(in.RemoteAddr),
		Header: make(http.Header, len(in.Header)), ContentLength: in.ContentLength,
		Body: io.NopCloser(bytes.NewReader(bytes.Clone(ctx.PostBody()))),
	}
	for k, vs := range in.Header {
		owned := make([]string, len(vs))
		for i, v := range vs {
			owned[i] = strings.Clone(v)
		}
		r.Header[strings.Clone(k)] = owned
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return nil, err
	}
	r.URL = u
	return r, nil
}

// errBadTarget is a request target that is not a URL.
var errBadTarget = errors.New("the request target is not a URL")

// serveDirectFast offers the request to the direct routes when it is in
// the form they take: GET or POST, an origin-form target with no escapes
// in its path, no Content-Encoding.
func serveDirectFast(ctx *fasthttp.RequestCtx, d directServer, deadline time.Duration) bool {
	var method string
	switch {
	case ctx.IsPost():
		method = http.MethodPost
	case ctx.IsGet():
		method = http.MethodGet
	default:
		return false
	}
	req := &ctx.Request
	target := ctx.RequestURI()
	if len(target) == 0 || target[0] != '/' || req.Header.Peek("Content-Encoding") != nil {
		return false
	}
	body := ctx.PostBody() // read whole by fasthttp, chunked or not, within MaxBodyBytes
	n := len(body)
	uri := req.URI()
	path := uri.PathOriginal()
	for _, c := range path {
		if c == '%' {
			return false // the direct routes take no escaped path (URL.RawPath)
		}
	}
	base := context.Background()
	if deadline > 0 {
		var cancel context.CancelFunc
		base, cancel = context.WithTimeout(base, deadline)
		defer cancel()
	}
	r := (&http.Request{
		Method:        method,
		URL:           &url.URL{Path: string(path), RawQuery: string(uri.QueryString())},
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		ContentLength: int64(n),
		Body:          http.NoBody,
		RemoteAddr:    ctx.RemoteAddr().String(),
		RequestURI:    string(target),
	}).WithContext(base)
	if n > 0 {
		r.Body = &bodyReader{b: body}
	}
	if forwarded := req.Header.PeekAll("X-Forwarded-For"); len(forwarded) > 0 {
		r.Header = http.Header{}
		for _, v := range forwarded {
			r.Header.Add("X-Forwarded-For", string(v))
		}
	}
	w := fastWriters.Get().(*fastWriter)
	w.ctx = ctx
	served := d.serveDirect(w, r)
	w.reset()
	fastWriters.Put(w)
	return served
}

// bodyReader reads a body fasthttp has already read in full.
type bodyReader struct{ b []byte }

func (r *bodyReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func (r *bodyReader) Close() error { return nil }

// fastWriter is an http.ResponseWriter onto fasthttp's response, for the
// direct routes' answers (their generated Visit methods and error writer).
type fastWriter struct {
	ctx    *fasthttp.RequestCtx
	header http.Header
	status int
}

var fastWriters = sync.Pool{New: func() any { return &fastWriter{header: http.Header{}} }}

func (w *fastWriter) reset() {
	w.ctx, w.status = nil, 0
	clear(w.header)
}

func (w *fastWriter) Header() http.Header { return w.header }

func (w *fastWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	for k, vs := range w.header {
		for i, v := range vs {
			if i == 0 {
				w.ctx.Response.Header.Set(k, v)
			} else {
				w.ctx.Response.Header.Add(k, v)
			}
		}
	}
	w.ctx.SetStatusCode(code)
}

func (w *fastWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ctx.Write(b)
}

func (w *fastWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// FastErrorHandler answers, in JSON as the API answers, the requests
// fasthttp refuses before any handler runs: a body over MaxBodyBytes
// (413), a request whose body or headers did not arrive within the read
// timeout (408), headers larger than the read buffer (431), one that is
// not HTTP/1.x and a target that is not a URL (400). net/http answers its own refusals in plain text
// (test/e2e, TestWhatNetHTTPAnswersItselfIsPlainText).
func FastErrorHandler(ctx *fasthttp.RequestCtx, err error) {
	w := &fastWriter{ctx: ctx, header: http.Header{}}
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		msg := fmt.Sprintf("request body is larger than the limit of %d bytes", MaxBodyBytes)
		if n := ctx.Request.Header.ContentLength(); n > MaxBodyBytes {
			msg = fmt.Sprintf("request body is %d bytes; the limit is %d", n, MaxBodyBytes)
		}
		ctx.SetConnectionClose()
		writeJSONError(w, http.StatusRequestEntityTooLarge, msg)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, fasthttp.ErrTimeout):
		ctx.SetConnectionClose()
		writeJSONError(w, http.StatusRequestTimeout, RequestTimeoutMessage)
	case errors.As(err, &small):
		ctx.SetConnectionClose()
		writeJSONError(w, http.StatusRequestHeaderFieldsTooLarge, HeadersTooLargeMessage)
	case errors.Is(err, errBadTarget):
		writeJSONError(w, http.StatusBadRequest, BadTargetMessage)
	default:
		ctx.SetConnectionClose()
		writeJSONError(w, http.StatusBadRequest, UnparsableRequestMessage)
	}
}

// What FastErrorHandler answers: fixed texts, as the cause is fasthttp's
// and names no field of the API.
const (
	RequestTimeoutMessage    = "request did not arrive in time; send the headers and the whole body without pausing"
	HeadersTooLargeMessage   = "request headers are too large"
	UnparsableRequestMessage = "request could not be read as HTTP/1.1"
	BadTargetMessage         = "request target is not a valid URL path; escape '%' as %25"
)

// FastServer is fasthttp's server with net/http's Serve, Shutdown and
// Close, so that the service runs either the same way.
type FastServer struct {
	srv   *fasthttp.Server
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// FastServerConfig is what NewFastServer needs: the handler (NewHandler's,
// or WithMetrics around it), the request deadline (0: none) and the
// server's timeouts, as net/http's server is given them.
type FastServerConfig struct {
	Handler                                http.Handler
	Deadline                               time.Duration
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	Log                                    *slog.Logger
}

// NewFastServer serves c.Handler on fasthttp (FastHandler), bodies bounded
// at MaxBodyBytes, headers at 16 KiB, refusals answered by
// FastErrorHandler.
func NewFastServer(c FastServerConfig) *FastServer {
	s := &FastServer{conns: map[net.Conn]struct{}{}}
	s.srv = &fasthttp.Server{
		Handler:               FastHandler(c.Handler, c.Deadline, c.Log),
		ErrorHandler:          FastErrorHandler,
		ReadTimeout:           c.ReadTimeout,
		WriteTimeout:          c.WriteTimeout,
		IdleTimeout:           c.IdleTimeout,
		MaxRequestBodySize:    MaxBodyBytes,
		ReadBufferSize:        16 << 10,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		Logger:                fastLogger{c.Log},
		ConnState:             s.track,
	}
	return s
}

// track keeps the open connections, for Close.
func (s *FastServer) track(c net.Conn, state fasthttp.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case fasthttp.StateNew:
		s.conns[c] = struct{}{}
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(s.conns, c)
	}
}

// Serve serves on ln until Shutdown.
func (s *FastServer) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops taking connections, closes the idle ones and waits for
// the requests in flight, until ctx ends.
func (s *FastServer) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

// Close closes every open connection, for requests still running when
// Shutdown's budget is spent.
func (s *FastServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
	return nil
}

// fastLogger takes fasthttp's own messages (a connection that could not be
// served, already answered by FastErrorHandler where it could be) into the
// service's log at debug level.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	if l.log != nil {
		l.log.Debug("fasthttp: " + fmt.Sprintf(format, args...))
	}
}
