package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
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

func TestEveryOperationWithABodyHasAStrictRule(t *testing.T) {
	rules, err := bodyRules()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}": {"liftID", "time"},
		"POST /resorts/{resortID}/seasons":                                         {"year"},
	}
	if len(rules) != len(want) {
		t.Errorf("rules %v; want exactly %v", rules, want)
	}
	for route, fields := range want {
		if got := rules[route]; strings.Join(got, ",") != strings.Join(fields, ",") {
			t.Errorf("rule for %s = %v; want %v", route, got, fields)
		}
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
