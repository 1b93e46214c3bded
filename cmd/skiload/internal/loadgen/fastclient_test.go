package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFastClientCarriesTheRequestAndTheAnswer: through fasthttp the server
// sees the request the generated client built (method, path and query as
// escaped, byte for byte, headers, body) and the caller gets the answer's
// status, headers and body.
func TestFastClientCarriesTheRequestAndTheAnswer(t *testing.T) {
	type seen struct{ method, uri, ctype, custom, body string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get("X-Ride"), string(b)}
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"message":"slow down"}`)
	}))
	t.Cleanup(srv.Close)
	client := newFastClient(1, 5*time.Second)
	t.Cleanup(client.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api//skiers/3/seasons/20%2F24/days/5/skiers/7?x=1", strings.NewReader(`{"time":9,"liftID":4}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Ride", "42")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := seen{"POST", "/api//skiers/3/seasons/20%2F24/days/5/skiers/7?x=1", "application/json", "42", `{"time":9,"liftID":4}`}
	if s := <-got; s != want {
		t.Errorf("server saw %+v; want %+v", s, want)
	}
	if resp.StatusCode != 429 || resp.Status != "429 Too Many Requests" || resp.Header.Get("Retry-After") != "7" ||
		string(body) != `{"message":"slow down"}` || resp.ContentLength != int64(len(body)) {
		t.Errorf("answer %s, Retry-After %q, body %q (length %d); want the server's 429, 7 and its JSON",
			resp.Status, resp.Header.Get("Retry-After"), body, resp.ContentLength)
	}
}

// TestFastClientBoundsAnAttempt: an answer that never comes ends the
// attempt at the client's timeout, or at the request's own deadline when
// that is sooner; neither waits for the server.
func TestFastClientBoundsAnAttempt(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(func() { close(release); srv.Close() })
	for _, c := range []struct {
		name    string
		timeout time.Duration
		ctx     time.Duration
	}{
		{"client timeout", 50 * time.Millisecond, 0},
		{"request deadline", time.Hour, 50 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := newFastClient(1, c.timeout)
			ctx := context.Background()
			if c.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.ctx)
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			done := make(chan error, 1)
			go func() {
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("an attempt the server never answered succeeded")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the attempt was not bounded: still waiting after 30s")
			}
		})
	}
}

// TestFastClientSendsNothingPastItsDeadline: a request whose context has
// ended is refused without reaching the server (net/http's contract).
func TestFastClientSendsNothingPastItsDeadline(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
	resp, err := newFastClient(1, time.Minute).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) || hits.Load() != 0 {
		t.Errorf("error %v, %d requests seen; want the deadline's error and none sent", err, hits.Load())
	}
}
