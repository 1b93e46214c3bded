package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/valyala/fasthttp"
)

// fastAnswer serves the raw HTTP/1.1 request through FastHandler(h) and
// returns fasthttp's response; ok is false when fasthttp cannot parse the
// request.
func fastAnswer(h http.Handler, raw string) (resp *fasthttp.Response, ok bool) {
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		return nil, false
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234}, nil)
	FastHandler(h, 0, nil)(&ctx)
	resp = &fasthttp.Response{}
	ctx.Response.CopyTo(resp)
	return resp, true
}

// rawRequest is method and target as HTTP/1.1, with body sent with its
// length, or chunked.
func rawRequest(method, target, body string, chunked bool, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: skidata.test\r\nContent-Type: application/json\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	switch {
	case chunked:
		fmt.Fprintf(&b, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	case body != "":
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	default:
		b.WriteString("\r\n")
	}
	return b.String()
}

// TestTheFastFrontServesTheCommonRequestsDirectly: on fasthttp's server,
// the POST every client sends and the three queries, as a client sends
// them, are answered by the direct routes from fasthttp's request (the mux
// behind, the net/http handler, answers 418 here) and recorded under their
// route; any other form goes to the net/http handler.
func TestTheFastFrontServesTheCommonRequestsDirectly(t *testing.T) {
	var asked []string
	fixture := fixtureHandlers(&asked)
	fixture.ClientAddress = RemoteAddress
	_, addr := servedBoth(t, onlyDirect{&instrumented{direct: &direct{h: fixture, errs: errorWriter{log: slog.New(slog.DiscardHandler)}}, stats: askedStats{&asked}}})
	ride := `{"time":217,"liftID":21}`
	for _, c := range []struct {
		raw  string
		fast bool
		want string // what the use cases and statistics were asked
	}{
		{rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", ride, false), true, `[ride 1/2024/1/2/217/21 client=127.0.0.1 stats POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID} 201]`},
		{rawRequest("GET", "/skiers/1/seasons/2024/days/1/skiers/2", "", false), true, `[day vertical 1 "2024" 1 2 stats GET /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID} 200]`},
		{rawRequest("GET", "/skiers/2/vertical?resort=1&season=2024", "", false), true, `[totals 2 [1] ["2024"] stats GET /skiers/{skierID}/vertical 200]`},
		{rawRequest("GET", "/resorts/1/seasons/2024/day/1/skiers", "", false), true, `[skiers 1 "2024" 1 stats GET /resorts/{resortID}/seasons/{seasonID}/day/{dayID}/skiers 200]`},
		{rawRequest("POST", "/skiers/503/seasons/2024/days/1/skiers/2", ride, false), true, `[ride 503/2024/1/2/217/21 client=127.0.0.1 stats POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID} 503]`},
		{rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", ride, true), true, `[ride 1/2024/1/2/217/21 client=127.0.0.1 stats POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID} 201]`}, // chunked: fasthttp has read it whole
		{rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", ride, false, "Content-Encoding: identity"), false, ""},
		{rawRequest("HEAD", "/resorts/1/seasons/2024/day/1/skiers", "", false), false, ""},
		{rawRequest("PUT", "/skiers/1/seasons/2024/days/1/skiers/2", ride, false), false, ""},
		{rawRequest("POST", "/skiers/%31/seasons/2024/days/1/skiers/2", ride, false), false, ""},
		{rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21,"x":1}`, false), false, ""},
		{rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2/", ride, false), false, ""},
		{rawRequest("GET", "/skiers/2/vertical?resort=%zz", "", false), false, ""},
		{rawRequest("GET", "/metrics", "", false), false, ""},
	} {
		asked = nil
		resp, _ := sendOnTheWire(t, addr, c.raw)
		if fast := resp.StatusCode != http.StatusTeapot; fast != c.fast {
			t.Errorf("%q: answered %d by the direct routes: %v; want %v", c.raw, resp.StatusCode, fast, c.fast)
			continue
		}
		if got := fmt.Sprint(asked); c.fast && got != c.want {
			t.Errorf("%q: asked %s; want %s", c.raw, got, c.want)
		}
	}
}

// onlyDirect serves the direct routes' requests through serveDirect, as
// the fasthttp front hands them on, and answers 418 to every request that
// reaches it as a net/http handler.
type onlyDirect struct{ *instrumented }

func (onlyDirect) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }

// raw is q as HTTP/1.1 on the wire.
func (q routeRequest) raw() string {
	r := q.new()
	target := r.URL.EscapedPath()
	if q.query != "" {
		target += "?" + q.query
	}
	var headers []string
	if q.encoding != "" {
		headers = append(headers, "Content-Encoding: "+q.encoding)
	}
	return rawRequest(r.Method, target, q.body, q.chunked, headers...)
}

// servedBoth serves h on net/http's server and on the fasthttp front
// (NewFastServer), each on a loopback port, until the test ends.
func servedBoth(t testing.TB, h http.Handler) (netAddr, fastAddr string) {
	t.Helper()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	lnNet, lnFast := listen(), listen()
	ns := &http.Server{Handler: h}
	fs := NewFastServer(FastServerConfig{Handler: h, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	go func() { _ = ns.Serve(lnNet) }()
	go func() { _ = fs.Serve(lnFast) }()
	t.Cleanup(func() {
		_ = ns.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fs.Shutdown(ctx)
	})
	return lnNet.Addr().String(), lnFast.Addr().String()
}

// answerOnTheWire sends raw to addr on a connection of its own and
// describes the answer as answerOf does.
func answerOnTheWire(t testing.TB, addr, raw string, asked *[]string) string {
	t.Helper()
	*asked = nil
	resp, body := sendOnTheWire(t, addr, raw)
	return fmt.Sprintf("%d %q Content-Type=%q Retry-After=%q RateLimit=%q Allow=%q Accept-Encoding=%q asked=%v",
		resp.StatusCode, body, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit"), resp.Header.Get("Allow"),
		resp.Header.Get("Accept-Encoding"), *asked)
}

// sendOnTheWire sends raw to addr on a connection of its own and returns
// the answer and its body.
func sendOnTheWire(t testing.TB, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return resp, body
}

// comparedHandler is the API as served (the direct routes, the generated
// ones, /metrics beside them) on the fixture's use cases, each ride's
// client named by its address (the same over either server).
func comparedHandler(asked *[]string) http.Handler {
	h := fixtureHandlers(asked)
	h.ClientAddress = RemoteAddress
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "skidata_metrics 1\n") })
	return WithMetrics(newHandler(h, slog.New(slog.DiscardHandler), true), metrics)
}

// TestTheFastFrontAnswersAsNetHTTP: every request of the direct routes'
// comparison, and requests to no route, with a method a route does not
// take, to /metrics and with odd spellings, is answered on the wire by the
// fasthttp front as by net/http's server (status, body, the headers a
// client acts on), and the use cases and statistics are asked the same.
func TestTheFastFrontAnswersAsNetHTTP(t *testing.T) {
	var asked []string
	netAddr, fastAddr := servedBoth(t, comparedHandler(&asked))
	var raws []string
	for _, q := range directRouteCases() {
		raws = append(raws, q.raw())
	}
	ride := `{"time":217,"liftID":21}`
	raws = append(raws,
		rawRequest("GET", "/nowhere", "", false),
		rawRequest("DELETE", "/skiers/1/seasons/2024/days/1/skiers/2", "", false),
		rawRequest("HEAD", "/resorts/1/seasons/2024/day/1/skiers", "", false),
		rawRequest("HEAD", "/skiers/2/vertical?resort=1", "", false),
		rawRequest("GET", "/metrics", "", false),
		rawRequest("POST", "/metrics", "", false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2?x=%zz", ride, false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2?", ride, false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1//skiers/2", ride, false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/./skiers/2", ride, false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/%32", ride, false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", "", false),
		rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", ride, false, "X-Forwarded-For: 203.0.113.9"),
		rawRequest("GET", "/skiers/1/seasons/2024/days/1/skiers/2", ride, false),
	)
	for _, raw := range raws {
		if got, want := answerOnTheWire(t, fastAddr, raw, &asked), answerOnTheWire(t, netAddr, raw, &asked); got != want {
			t.Errorf("%q:\n fasthttp: %s\n net/http: %s", raw, got, want)
		}
	}
}

func FuzzTheFastFrontAnswersAsNetHTTP(f *testing.F) {
	addDirectRouteSeeds(f)
	var asked []string
	netAddr, fastAddr := servedBoth(f, comparedHandler(&asked))
	f.Fuzz(func(t *testing.T, route uint8, a, b, c, d, query, body string) {
		if strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }) || len(body) > MaxBodyBytes {
			return // not a request target either server reads; a body over the limit is refused before the handler
		}
		q := routeRequest{pattern: directPatterns[int(route)%len(directPatterns)], ids: [4]string{a, b, c, d}, query: query, body: body}
		raw := q.raw()
		if got, want := answerOnTheWire(t, fastAddr, raw, &asked), answerOnTheWire(t, netAddr, raw, &asked); got != want {
			t.Errorf("%q:\n fasthttp: %s\n net/http: %s", raw, got, want)
		}
	})
}

// TestAPanicOnTheFastFrontIsAnswered500: a handler that panics, behind the
// adaptor or on a direct route, is answered 500 with the API's message and
// its connection closed; the process goes on (fasthttp would let the panic
// end it).
func TestAPanicOnTheFastFrontIsAnswered500(t *testing.T) {
	var asked []string
	h := fixtureHandlers(&asked)
	h.Ingest = ingestFunc(func(context.Context, domain.LiftRide) error { panic("the use case broke") })
	api := newHandler(h, slog.New(slog.DiscardHandler), true)
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("the handler broke") })
	for name, c := range map[string]struct {
		h   http.Handler
		raw string
	}{
		"behind the adaptor": {panicking, rawRequest("GET", "/resorts", "", false)},
		"on a direct route":  {api, rawRequest("POST", "/skiers/1/seasons/2024/days/1/skiers/2", `{"time":217,"liftID":21}`, false)},
	} {
		resp, ok := fastAnswer(c.h, c.raw)
		if !ok {
			t.Fatalf("%s: %q does not parse", name, c.raw)
		}
		if resp.StatusCode() != http.StatusInternalServerError || !resp.ConnectionClose() ||
			string(resp.Body()) != `{"message":"internal error; the cause is in the server log"}`+"\n" || string(resp.Header.ContentType()) != "application/json" {
			t.Errorf("%s: %d %q (%s), close %v; want 500 with the API's message, and the connection closed", name, resp.StatusCode(), resp.Body(), resp.Header.ContentType(), resp.ConnectionClose())
		}
	}
}
