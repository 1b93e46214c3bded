package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Client kinds (--client): which HTTP client sends skiload's requests.
// Either way a request is built by the generated client of the API; only
// the sending differs.
const (
	ClientNet  = "net"      // net/http's Transport
	ClientFast = "fasthttp" // fasthttp's Client, through fastTransport
)

// newFastClient is NewHTTPClient's counterpart for --client fasthttp: an
// *http.Client, so every caller works with either, whose transport sends
// through fasthttp. Its Timeout is left 0: the transport bounds each
// attempt itself (a request's own context deadline, when sooner, wins).
func newFastClient(workers int, timeout time.Duration) *http.Client {
	return &http.Client{Transport: &fastTransport{
		timeout: timeout,
		c: &fasthttp.Client{
			MaxConnsPerHost:          workers,
			MaxConnWaitTimeout:       timeout,
			MaxIdleConnDuration:      90 * time.Second,
			NoDefaultUserAgentHeader: true,
			// The path as the generated client escaped it, byte for
			// byte, as net/http sends it.
			DisablePathNormalizing: true,
			// The most recently used connection first, as net/http's
			// pool does: at a rate below saturation a few warm
			// connections carry the load instead of every one in turn.
			ConnPoolStrategy: fasthttp.LIFO,
			// One attempt: skiload counts and backs off its retries
			// itself, and an open-loop request is sent once.
			MaxIdemponentCallAttempts: 1,
		},
	}}
}

// fastTransport is an http.RoundTripper over fasthttp's client, which
// writes a request and reads its answer on the calling goroutine.
// net/http's Transport hands each request to its connection's write loop
// and the answer back from the connection's read loop; on one two-core box
// where the load client shares the CPU with the server it measures, those
// hand-offs made skiload cost as much CPU a request as the API it loaded.
type fastTransport struct {
	c       *fasthttp.Client
	timeout time.Duration
}

func (t *fastTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.String())
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil && r.Body != http.NoBody {
		_, err := io.Copy(req.BodyWriter(), r.Body)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	timeout := t.timeout
	if d, ok := r.Context().Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		if timeout <= 0 || left < timeout {
			timeout = left
		}
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	var err error
	if timeout > 0 {
		err = t.c.DoTimeout(req, resp, timeout)
	} else {
		err = t.c.Do(req, resp)
	}
	if err != nil {
		return nil, err
	}
	h := make(http.Header)
	for k, v := range resp.Header.All() {
		h.Add(string(k), string(v))
	}
	body := bytes.Clone(resp.Body())
	st := resp.StatusCode()
	return &http.Response{
		Status:     strconv.Itoa(st) + " " + http.StatusText(st),
		StatusCode: st, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: r,
	}, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach
// fasthttp's pool.
func (t *fastTransport) CloseIdleConnections() { t.c.CloseIdleConnections() }
