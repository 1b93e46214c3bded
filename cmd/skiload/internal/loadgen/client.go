package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// NewHTTPClient is one keep-alive client shared by every worker, with as
// many idle connections per host as there are workers, so no worker ever
// pays for a new TCP connection after its first request.
func NewHTTPClient(workers int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback and lab hosts: never via a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// RetryPolicy says how often and how long a request is retried.
type RetryPolicy struct {
	// Retries is how many times a request is sent again after its first
	// attempt fails with a network error, a 5xx or a 429.
	Retries int
	// Base and Max bound the exponential backoff: the n-th retry waits a
	// uniformly random time in [0, min(Max, Base·2ⁿ⁻¹)] ("full jitter"), or
	// exactly what the server's Retry-After says.
	Base, Max time.Duration
}

// DefaultRetryPolicy: 5 retries, 10 ms doubling up to 2 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Retries: 5, Base: 10 * time.Millisecond, Max: 2 * time.Second}
}

// fullJitter is a backoff.BackOff: the library's exponential backoff jitters
// around the interval (±factor), which keeps retrying workers bunched; full
// jitter spreads them over [0, interval], which is what a server shedding
// load wants.
type fullJitter struct {
	base, max time.Duration
	n         int
}

func (b *fullJitter) Reset() { b.n = 0 }

func (b *fullJitter) NextBackOff() time.Duration {
	ceil := b.base << min(b.n, 30)
	if ceil <= 0 || ceil > b.max {
		ceil = b.max
	}
	b.n++
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// Result is what one logical request (all its attempts) came to.
type Result struct {
	Start   time.Time
	Latency time.Duration // from the first attempt's start (open loop: the intended start) to the last answer
	Lag     time.Duration // open loop: from the intended start to the send
	Status  int           // the last answer's status; 0 when it was a network error
	Retries int
	Err     error // nil on 2xx
	Body    []byte
	Ride    Ride // the ride a POST carried
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

// Caller sends requests with the retry policy.
type Caller struct {
	Client *http.Client
	Policy RetryPolicy
	// onWait, when set, sees every wait before a retry (tests use it to
	// check that Retry-After is honoured without timing anything).
	onWait func(err error, wait time.Duration)
}

// Do sends the request newReq builds, again for every retry, and returns
// the outcome. keepBody keeps the last answer's body (the GET checks need it).
func (c *Caller) Do(ctx context.Context, newReq func(context.Context) (*http.Request, error), keepBody bool) Result {
	start := time.Now()
	attempts := 0
	var body []byte
	op := func() (int, error) {
		attempts++
		req, err := newReq(ctx)
		if err != nil {
			return 0, backoff.Permanent(fmt.Errorf("build request: %w", err))
		}
		resp, err := c.Client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return 0, backoff.Permanent(err)
			}
			return 0, err // network error: retry
		}
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if keepBody {
			body = b
		}
		switch st := resp.StatusCode; {
		case rerr != nil:
			return st, fmt.Errorf("read answer: %w", rerr)
		case st < 400:
			return st, nil
		case st == http.StatusTooManyRequests || st >= 500:
			if wait, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
				return st, &backoff.RetryAfterError{Duration: wait}
			}
			return st, &StatusError{Status: st, Body: string(b)}
		default: // any other 4xx: sending it again cannot help
			return st, backoff.Permanent(&StatusError{Status: st, Body: string(b)})
		}
	}
	opts := []backoff.RetryOption{
		backoff.WithBackOff(&fullJitter{base: c.Policy.Base, max: c.Policy.Max}),
		backoff.WithMaxTries(uint(c.Policy.Retries + 1)),
		backoff.WithMaxElapsedTime(0),
	}
	if c.onWait != nil {
		opts = append(opts, backoff.WithNotify(c.onWait))
	}
	status, err := backoff.Retry(ctx, op, opts...)
	var ra *backoff.RetryAfterError
	if errors.As(err, &ra) {
		// The last attempt was told to come back later and there is no
		// later: report it as the status it was.
		err = &StatusError{Status: status, Body: "gave up: " + ra.Error()}
	}
	return Result{Start: start, Latency: time.Since(start), Status: status, Retries: attempts - 1, Err: err, Body: body}
}

// retryAfter reads a Retry-After header given in seconds or as an HTTP date.
func retryAfter(h string) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
