package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/poll"
)

type ingestFunc func(context.Context, domain.LiftRide) error

func (f ingestFunc) AddRide(ctx context.Context, r domain.LiftRide) error { return f(ctx, r) }

type statsRec struct{ routes []string }

func (s *statsRec) Observe(route, method string, _ int, _ time.Duration) {
	s.routes = append(s.routes, method+" "+route)
}
func (s *statsRec) Snapshot() []ports.EndpointStat { return nil }

func serve(t *testing.T, ingest ingestFunc, stats *statsRec) *httptest.Server {
	t.Helper()
	h := NewHandler(&Handlers{Ingest: ingest, Stats: stats}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func postRide(t *testing.T, srv *httptest.Server) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", "application/json", strings.NewReader(`{"time":1,"liftID":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestIngestErrorsMapToStatus(t *testing.T) {
	cases := []struct {
		err        error
		status     int
		retryAfter bool
		inBody     string
	}{
		{domain.Unavailable("the ride queue is full"), 503, true, "the ride queue cannot take the ride now; retry after 1 s"},
		{&domain.Error{Kind: domain.ErrOverloaded, Msg: "slow down"}, 429, true, "slow down"},
		{domain.NotFound("resort 9 does not exist"), 404, false, "resort 9 does not exist"},
		{domain.Invalid("bad"), 400, false, "bad"},
		{errors.New("secret connection string"), 500, false, "internal error"},
	}
	for _, c := range cases {
		t.Run(c.err.Error(), func(t *testing.T) {
			srv := serve(t, func(context.Context, domain.LiftRide) error { return c.err }, &statsRec{})
			resp, body := postRide(t, srv)
			if resp.StatusCode != c.status {
				t.Errorf("status %d; want %d", resp.StatusCode, c.status)
			}
			if got := resp.Header.Get("Retry-After") != ""; got != c.retryAfter {
				t.Errorf("Retry-After present = %v; want %v", got, c.retryAfter)
			}
			if !strings.Contains(body, c.inBody) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("body %q (%s); want JSON saying %q", body, resp.Header.Get("Content-Type"), c.inBody)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("an internal error leaked its cause to the caller: %s", body)
			}
		})
	}
}

func TestAcceptedRideReachesIngestValidated(t *testing.T) {
	var got domain.LiftRide
	srv := serve(t, func(_ context.Context, r domain.LiftRide) error { got = r; return nil }, &statsRec{})
	resp, _ := postRide(t, srv)
	want := domain.MustLiftRide(1, "2024", 1, 2, 1, 2)
	if resp.StatusCode != 201 || got != want {
		t.Errorf("status %d, ingested %+v; want 201 and %+v", resp.StatusCode, got, want)
	}
}

func TestStatsRecordRouteTemplateNotPath(t *testing.T) {
	stats := &statsRec{}
	srv := serve(t, func(context.Context, domain.LiftRide) error { return nil }, stats)
	postRide(t, srv)
	resp, err := http.Get(srv.URL + "/nothing/here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := "POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}"
	if len(stats.routes) != 1 || stats.routes[0] != want {
		t.Errorf("observed %v; want only %q (unmatched paths are not recorded)", stats.routes, want)
	}
}

func TestRequestBodiesAreStrict(t *testing.T) {
	var ingested []domain.LiftRide
	srv := serve(t, func(_ context.Context, r domain.LiftRide) error { ingested = append(ingested, r); return nil }, &statsRec{})
	cases := []struct{ name, body, want string }{
		{"trailing object", `{"time":1,"liftID":2}{"time":5,"liftID":9}`, "exactly one JSON object"},
		{"trailing garbage", `{"time":1,"liftID":2} x`, "exactly one JSON object"},
		{"trailing number", `{"time":1,"liftID":2}7`, "exactly one JSON object"},
		{"upper-case names", `{"TIME":3,"LIFTID":4}`, `field "TIME" is not in the spec`},
		{"mixed-case name", `{"time":3,"liftId":4}`, `field "liftId" is not in the spec`},
		{"unknown field", `{"time":3,"liftID":4,"speed":9}`, `field "speed" is not in the spec`},
		{"duplicate field", `{"time":3,"liftID":4,"time":5}`, `field "time" appears twice`},
		{"array", `[{"time":3,"liftID":4}]`, "must be a JSON object"},
		{"null", `null`, "must be a JSON object"},
		{"string", `"time"`, "must be a JSON object"},
		{"truncated", `{"time":3,`, "not valid JSON"},
		{"not json", `time=3`, "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var m ResponseMsg
			_ = json.Unmarshal(b, &m)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(m.Message, c.want) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("POST %s = %d %s; want a 400 JSON message saying %q", c.body, resp.StatusCode, b, c.want)
			}
		})
	}
	if len(ingested) != 0 {
		t.Errorf("rides %v reached ingest from refused bodies", ingested)
	}
	// The spec's own spelling, in any order and with whitespace, is fine.
	resp, err := http.Post(srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", "application/json", strings.NewReader(" {\"liftID\":2,\n \"time\":1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || len(ingested) != 1 {
		t.Errorf("a well-formed body: status %d, %d rides ingested; want 201 and 1", resp.StatusCode, len(ingested))
	}
}

// TestHeadIsRecordedAsAHeadOfItsRoute: a HEAD is served by the GET route,
// and /statistics and /metrics must show it as a HEAD of the path, not as
// a route named "GET /statistics".
func TestHeadIsRecordedAsAHeadOfItsRoute(t *testing.T) {
	stats := &statsRec{}
	srv := serve(t, nil, stats)
	resp, err := http.Head(srv.URL + "/statistics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(stats.routes) != 1 || stats.routes[0] != "HEAD /statistics" {
		t.Errorf("observed %q; want [\"HEAD /statistics\"]", stats.routes)
	}
}

// rawExchange sends raw on a new connection to srv, half-closes it when
// closeWrite is set (the client is gone mid-body), and returns the response.
func rawExchange(t *testing.T, srv *httptest.Server, raw string, closeWrite bool) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUnreadableBodiesAreAnsweredWithFixedTexts: a body that stops coming
// (the server's ReadTimeout) is a 408, and one that cannot be read to its
// end (the client went away, a chunk length that is not hex) a 400, each
// with a fixed text: never the addresses of the connection or a raw Go
// error.
func TestUnreadableBodiesAreAnsweredWithFixedTexts(t *testing.T) {
	h := NewHandler(&Handlers{Ingest: ingestFunc(func(context.Context, domain.LiftRide) error { return nil }), Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	head := "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	cases := []struct {
		name       string
		raw        string
		closeWrite bool
		status     int
		message    string
	}{
		{"chunked body cut mid-chunk", head + "Transfer-Encoding: chunked\r\n\r\n15\r\n{\"time\":1,", true, http.StatusBadRequest, BodyUnreadableMessage},
		{"chunk length not hex", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{\"time\":1,\"liftID\":2}\r\n0\r\n\r\n", false, http.StatusBadRequest, BodyUnreadableMessage},
		{"body shorter than its Content-Length, client gone", head + "Content-Length: 21\r\n\r\n{\"time\":1,", true, http.StatusBadRequest, BodyUnreadableMessage},
		{"body stalls past the read timeout", head + "Content-Length: 21\r\n\r\n{\"time\":1,", false, http.StatusRequestTimeout, BodyTimeoutMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := rawExchange(t, srv, c.raw, c.closeWrite)
			var m ResponseMsg
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &m) != nil || m.Message != c.message {
				t.Errorf("%d %s; want %d {\"message\":%q}", resp.StatusCode, body, c.status, c.message)
			}
			for _, inner := range []string{"127.0.0.1", "tcp", "chunk length", "timeout", "EOF"} {
				if strings.Contains(body, inner) {
					t.Errorf("the body names %q: %s", inner, body)
				}
			}
		})
	}
}

// TestBodiesOverTheLimitAre413DeclaredOrChunked: a body over MaxBodyBytes
// is refused with 413 whether its length is declared (refused before it
// is read) or not (chunked: refused when the reading passes the limit),
// and a body of exactly the limit is read.
func TestBodiesOverTheLimitAre413DeclaredOrChunked(t *testing.T) {
	h := NewHandler(&Handlers{Ingest: ingestFunc(func(context.Context, domain.LiftRide) error { return nil }), Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	head := "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
	ride := `{"time":1,"liftID":2}`
	big := `{"time":1,"liftID":2,"x":"` + strings.Repeat("y", MaxBodyBytes) + `"}`
	atLimit := ride + strings.Repeat(" ", MaxBodyBytes-len(ride))
	chunked := func(body string) string {
		return head + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	}
	declared := func(body string) string {
		return head + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	for _, c := range []struct {
		name, raw string
		status    int
	}{
		{"declared, over", declared(big), http.StatusRequestEntityTooLarge},
		{"chunked, over", chunked(big), http.StatusRequestEntityTooLarge},
		{"declared, at the limit", declared(atLimit), http.StatusCreated},
		{"chunked, at the limit", chunked(atLimit), http.StatusCreated},
	} {
		resp, body := rawExchange(t, srv, c.raw, false)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s; want %d", c.name, resp.StatusCode, body, c.status)
		}
	}
}

// TestTheClientOfARideIsTheConnectionsOrTheLoadBalancers: ingest learns
// who sent a ride from the peer address, or behind a load balancer from
// the last X-Forwarded-For entry (the one the balancer appended, not what
// the client claimed before it); with no ClientAddress it learns nothing.
func TestTheClientOfARideIsTheConnectionsOrTheLoadBalancers(t *testing.T) {
	for _, c := range []struct {
		name    string
		address func(*http.Request) string
		xff     []string
		want    string
	}{
		{"none", nil, nil, ""},
		{"remote", RemoteAddress, []string{"203.0.113.5"}, "127.0.0.1"},
		{"forwarded", ForwardedAddress, []string{"203.0.113.5, 198.51.100.7"}, "198.51.100.7"},
		{"forwarded, two headers", ForwardedAddress, []string{"203.0.113.5", "198.51.100.8"}, "198.51.100.8"},
		{"forwarded, no header", ForwardedAddress, nil, "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			h := NewHandler(&Handlers{Ingest: ingestFunc(func(ctx context.Context, _ domain.LiftRide) error {
				got = ports.ClientOf(ctx)
				return nil
			}), Stats: &statsRec{}, ClientAddress: c.address}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/skiers/1/seasons/2024/days/1/skiers/2", strings.NewReader(`{"time":1,"liftID":2}`))
			req.Header.Set("Content-Type", "application/json")
			for _, v := range c.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || got != c.want {
				t.Errorf("status %d, client %q; want 201 and %q", resp.StatusCode, got, c.want)
			}
		})
	}
}

// The internals a store or queue error may carry, none of which a client
// may see.
var internals = []string{"s_adopted_skierTable", "dynamodb.eu-west-1.amazonaws.com", "https://", "amqp://", "hunter2", "10.0.7.12", "pq:", "operation error DynamoDB"}

// leakyQueries fails every query with an error full of internals.
type leakyQueries struct {
	ports.RideQueries
	err error
}

func (q leakyQueries) SkierResortTotals(context.Context, domain.SkierID, []domain.ResortID, []domain.Season) ([]domain.SeasonVertical, error) {
	return nil, fmt.Errorf("season totals of skier 5 at resort 1: %w", q.err)
}

func (q leakyQueries) SkierDayVertical(context.Context, domain.ResortID, domain.Season, domain.Day, domain.SkierID) (int64, error) {
	return 0, fmt.Errorf("day vertical of skier 5: %w", q.err)
}

func TestErrorBodiesCarryNoInternalsAndTheCauseIsLogged(t *testing.T) {
	causes := []error{
		fmt.Errorf("%w: SkierSeasonVerticals: query s_adopted_skierTable: operation error DynamoDB: Query, https response error StatusCode: 500, host https://dynamodb.eu-west-1.amazonaws.com", domain.ErrUnavailable),
		domain.Unavailable("redis at 10.0.7.12:6379 does not answer: dial tcp 10.0.7.12:6379: connection refused"),
		fmt.Errorf("%w: rabbitmq broker at amqp://user:hunter2@10.0.7.12:5672/ is unreachable", domain.ErrUnavailable),
		errors.New("pq: password authentication failed for user skidata at 10.0.7.12 (https://x)"),
	}
	for _, cause := range causes {
		var logs bytes.Buffer
		h := NewHandler(&Handlers{Queries: leakyQueries{err: cause}, Stats: &statsRec{}}, slog.New(slog.NewTextHandler(&logs, nil)))
		for _, path := range []string{"/skiers/5/vertical?resort=1", "/skiers/1/seasons/2024/days/1/skiers/5"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			body := rec.Body.String()
			for _, secret := range internals {
				if strings.Contains(body, secret) {
					t.Errorf("GET %s with cause %q: body %s names %q", path, cause, body, secret)
				}
			}
			var m ResponseMsg
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || !strings.Contains(m.Message, "retry") && !strings.Contains(m.Message, "server log") {
				t.Errorf("GET %s: body %s does not say what the client can do", path, body)
			}
		}
		if !strings.Contains(logs.String(), "10.0.7.12") && !strings.Contains(logs.String(), "s_adopted_skierTable") {
			t.Errorf("the cause %q is not in the log:\n%s", cause, logs.String())
		}
		if strings.Contains(logs.String(), "hunter2") {
			t.Errorf("the log shows a password:\n%s", logs.String())
		}
	}
}

func TestUnavailableIsAFixedMessagePerDependency(t *testing.T) {
	cause := fmt.Errorf("%w: query s_adopted_skierTable", domain.ErrUnavailable)
	h := NewHandler(&Handlers{Queries: leakyQueries{err: cause}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/skiers/5/vertical?resort=1", nil))
	want := fmt.Sprintf(`{"message":"the ride store is unavailable; retry after %d s"}`, RetryAfterSeconds)
	if rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("GET = %d %s; want 503 %s", rec.Code, rec.Body.String(), want)
	}
	srv := serve(t, func(context.Context, domain.LiftRide) error {
		return fmt.Errorf("%w: publish ride to amqp://u:hunter2@h/: channel closed", domain.ErrUnavailable)
	}, &statsRec{})
	resp, body := postRide(t, srv)
	want = fmt.Sprintf(`{"message":"the ride queue cannot take the ride now; retry after %d s"}`, RetryAfterSeconds)
	if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(body) != want {
		t.Errorf("POST = %d %s; want 503 %s", resp.StatusCode, body, want)
	}
}

// slowQueries waits on the store until the request's deadline.
type slowQueries struct{ ports.RideQueries }

func (slowQueries) SkierDayVertical(ctx context.Context, _ domain.ResortID, _ domain.Season, _ domain.Day, _ domain.SkierID) (int64, error) {
	<-ctx.Done()
	return 0, fmt.Errorf("day vertical of skier 5: %w", ctx.Err())
}

func TestRequestPastItsDeadlineIs503(t *testing.T) {
	h := NewHandler(&Handlers{Queries: slowQueries{}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/skiers/1/seasons/2024/days/1/skiers/5", nil).WithContext(ctx))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "retry after") || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a request past its deadline = %d %s; want 503 with Retry-After", rec.Code, rec.Body.String())
	}
}

type fixedHealth struct{ r ports.Readiness }

func (h fixedHealth) Ready(context.Context) ports.Readiness { return h.r }

func TestReadyzStatusIsOkDegradedOrUnavailable(t *testing.T) {
	for _, c := range []struct {
		r      ports.Readiness
		status int
		want   string
	}{
		{ports.Readiness{Ready: true, Checks: map[string]string{"postgres": "ok"}}, 200, `"status":"ok"`},
		{ports.Readiness{Ready: true, Degraded: true, Checks: map[string]string{"postgres": "ok", "redis": "unavailable"}}, 200, `"status":"degraded"`},
		{ports.Readiness{Checks: map[string]string{"postgres": "unavailable"}}, 503, `"status":"unavailable"`},
	} {
		h := NewHandler(&Handlers{Health: fixedHealth{c.r}, Stats: &statsRec{}}, slog.New(slog.DiscardHandler))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("readyz for %+v = %d %s; want %d with %s", c.r, rec.Code, rec.Body.String(), c.status, c.want)
		}
	}
}

// TestTooManyRequestsCarriesARateLimitHeader: a 429 keeps Retry-After
// (whole seconds, HTTP's) and adds the IETF draft's RateLimit field
// (draft-ietf-httpapi-ratelimit-headers): no quota left in the "ingest"
// policy, reset within the second. No other answer carries it.
func TestTooManyRequestsCarriesARateLimitHeader(t *testing.T) {
	srv := serve(t, func(context.Context, domain.LiftRide) error {
		return domain.Overloaded("this server takes at most 2000 rides per second now")
	}, &statsRec{})
	resp, _ := postRide(t, srv)
	want := fmt.Sprintf(`"ingest";r=0;t=%d`, RetryAfterSeconds)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("RateLimit") != want || resp.Header.Get("Retry-After") != fmt.Sprint(RetryAfterSeconds) {
		t.Errorf("429: RateLimit %q, Retry-After %q; want %q and %d", resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After"), want, RetryAfterSeconds)
	}
	srv = serve(t, func(context.Context, domain.LiftRide) error { return domain.Unavailable("queue full") }, &statsRec{})
	if resp, _ := postRide(t, srv); resp.Header.Get("RateLimit") != "" {
		t.Errorf("a 503 carries RateLimit %q; the rate limit is not why it was refused", resp.Header.Get("RateLimit"))
	}
}

// lockedStats records each observation's status, safe for a test to read
// while the server writes.
type lockedStats struct {
	mu       sync.Mutex
	statuses []int
}

func (s *lockedStats) Observe(_, _ string, status int, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, status)
}

func (s *lockedStats) Snapshot() []ports.EndpointStat { return nil }

func (s *lockedStats) seen() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// lockedBuffer is a log's output, safe to read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAClientThatLeavesIsNeitherA500NorAnError: a ride whose client hangs
// up while it waits (for a rate-limit token, which ends with the context's
// error, or for the queue's confirm, which ends as unavailable) was logged
// at ERROR or WARN as a 500 or 503 and counted with the server's errors.
// It is recorded as 499 (client closed request) and logged at debug.
func TestAClientThatLeavesIsNeitherA500NorAnError(t *testing.T) {
	for name, leftWith := range map[string]func(ctx context.Context) error{
		"waiting for a token": func(ctx context.Context) error { return fmt.Errorf("wait for a token: %w", ctx.Err()) },
		"waiting for a confirm": func(ctx context.Context) error {
			return domain.Unavailable("ride not confirmed before the request ended: %v", ctx.Err())
		},
	} {
		t.Run(name, func(t *testing.T) {
			var logs lockedBuffer
			stats := &lockedStats{}
			waiting := make(chan struct{})
			h := NewHandler(&Handlers{Ingest: ingestFunc(func(ctx context.Context, _ domain.LiftRide) error {
				close(waiting)
				<-ctx.Done()
				return leftWith(ctx)
			}), Stats: stats}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			srv := httptest.NewServer(h)
			defer srv.Close()
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			body := `{"time":1,"liftID":2}`
			fmt.Fprintf(c, "POST /skiers/1/seasons/2024/days/1/skiers/2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			<-waiting
			c.Close()
			poll.Until(t, 10*time.Second, "the request's answer", func() string {
				if len(stats.seen()) == 0 {
					return "not recorded"
				}
				return ""
			})
			if got := stats.seen(); !slices.Equal(got, []int{StatusClientClosedRequest}) {
				t.Errorf("recorded statuses %v; want [499]", got)
			}
			if out := logs.String(); strings.Contains(out, "level=ERROR") || strings.Contains(out, "level=WARN") || !strings.Contains(out, "level=DEBUG msg=\"client went away before its answer\"") {
				t.Errorf("log:\n%s\nwant one debug line saying the client went away, no error or warning", out)
			}
		})
	}
}
