package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/test/apitest"
)

func TestGeneratorIsDeterministicForASeedAndRespectsRanges(t *testing.T) {
	g := Ranges{Skiers: Range{5, 9}, Resorts: Range{2, 3}, Lifts: Range{1, 4}, Times: Range{0, 10}, Days: Range{7, 8}, Season: 2030}
	a, b, other := NewGenerator(42, g), NewGenerator(42, g), NewGenerator(43, g)
	differs := false
	for i := range 5000 {
		ra, rb, ro := a.Next(), b.Next(), other.Next()
		if ra != rb {
			t.Fatalf("ride %d: %+v and %+v from the same seed", i, ra, rb)
		}
		differs = differs || ra != ro
		for _, c := range []struct {
			name string
			v    int32
			r    Range
		}{{"skier", ra.SkierID, g.Skiers}, {"resort", ra.ResortID, g.Resorts}, {"lift", ra.LiftID, g.Lifts}, {"time", ra.Time, g.Times}, {"day", ra.Day, g.Days}} {
			if c.v < c.r.Lo || c.v > c.r.Hi {
				t.Fatalf("ride %d: %s %d outside %s", i, c.name, c.v, c.r)
			}
		}
		if ra.Season != 2030 {
			t.Fatalf("ride %d: season %d; want 2030", i, ra.Season)
		}
	}
	if !differs {
		t.Error("seeds 42 and 43 made the same 5000 rides")
	}
}

func TestFeedSendsExactlyNRides(t *testing.T) {
	n := 0
	for range NewGenerator(1, DefaultRanges()).Feed(context.Background(), 1234) {
		n++
	}
	if n != 1234 {
		t.Errorf("fed %d rides; want 1234", n)
	}
}

func TestPhaseTwoStartsWhenTheFirstPhaseOneWorkerFinishes(t *testing.T) {
	p := Phases{Phase1Workers: 2, Phase1Requests: 2, Phase2Workers: 3, Phase2Requests: 1}
	calls := make(chan chan struct{}) // every send announces itself and waits for its release
	send := func(ctx context.Context, r Ride) Result {
		release := make(chan struct{})
		calls <- release
		<-release
		return Result{Status: 201}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rides := NewGenerator(7, DefaultRanges()).Feed(ctx, p.Total())
	done := make(chan []Result)
	go func() { done <- p.Run(ctx, rides, send, nil) }()

	next := func(what string) chan struct{} {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatalf("no send arrived: waiting for %s", what)
			return nil
		}
	}
	a1, b1 := next("phase-1 worker A"), next("phase-1 worker B")
	select {
	case <-calls:
		t.Fatal("a third send started while only the two phase-1 workers exist and both are busy")
	default:
	}
	close(a1)
	a2 := next("worker A's second ride")
	close(a2) // worker A is done; B is still blocked on its first ride
	var held []chan struct{}
	for i := range 3 {
		held = append(held, next(fmt.Sprintf("phase-2 worker %d while phase-1 worker B is still busy", i+1)))
	}
	close(b1)
	close(next("worker B's second ride"))
	for _, h := range held {
		close(h)
	}
	res := <-done
	if len(res) != p.Total() || p.Total() != 7 {
		t.Errorf("sent %d rides; want exactly %d", len(res), p.Total())
	}
}

func TestPhasesSendExactlyTheTotal(t *testing.T) {
	p := Phases{Phase1Workers: 3, Phase1Requests: 50, Phase2Workers: 7, Phase2Requests: 20}
	var sent atomic.Int64
	rides := NewGenerator(3, DefaultRanges()).Feed(context.Background(), p.Total())
	res := p.Run(context.Background(), rides, func(context.Context, Ride) Result { sent.Add(1); return Result{} }, nil)
	if sent.Load() != 290 || len(res) != 290 {
		t.Errorf("sent %d, results %d; want 290", sent.Load(), len(res))
	}
}

// TestRidesIsExactlyThatManyRidesAndGETs: --rides N sends exactly N
// rides from up to 32 workers in one phase, whatever N's divisors, and
// each GET case N GETs shared by the GET workers; the GET cases then ask
// about those N rides only.
func TestRidesIsExactlyThatManyRidesAndGETs(t *testing.T) {
	for _, n := range []int{1, 5, 31, 32, 33, 997, 1000} {
		c := DefaultConfig()
		c.Rides = n
		if err := c.Validate(); err != nil {
			t.Fatalf("--rides %d: %v", n, err)
		}
		phases := c.postPhases()
		if phases.Phase1Workers != min(n, 32) || phases.Phase2Workers != 0 {
			t.Errorf("--rides %d: %+v; want one phase of %d workers", n, phases, min(n, 32))
		}
		var sent atomic.Int64
		rides := NewGenerator(c.Seed, c.Ranges).Feed(context.Background(), c.PostCount())
		res := phases.Run(context.Background(), rides, func(context.Context, Ride) Result { sent.Add(1); return Result{} }, nil)
		if sent.Load() != int64(n) || len(res) != n {
			t.Errorf("--rides %d: sent %d, results %d; want %d", n, sent.Load(), len(res), n)
		}
		workers, total := c.getShape()
		var calls atomic.Int64
		got := Repeat(context.Background(), workers, total, func(context.Context, int) Result { calls.Add(1); return Result{} }, nil)
		if workers != min(n, 100) || total != n || calls.Load() != int64(n) || len(got) != n {
			t.Errorf("--rides %d: GET case of %d workers, %d requests, %d calls; want %d workers and %d calls", n, workers, total, calls.Load(), min(n, 100), n)
		}
		if known := Known(c.Seed, c.Ranges, c.PostCount()); len(known) != n {
			t.Errorf("--rides %d: the GETs ask about %d rides; want the %d the load sent", n, len(known), n)
		}
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Rides = -1 },
		func(c *Config) { c.Rides = 100; c.Phases.Phase1Workers = 4 },
		func(c *Config) { c.Rides = 100; c.GetRequests = 5 },
		func(c *Config) { c.Rides = 100; c.Rate = 100 },
	} {
		c := DefaultConfig()
		bad(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--rides") {
			t.Errorf("%+v: err %v; want a usage error naming --rides", c, err)
		}
	}
}

// TestCeilingIsClaimedOnlyFromRunsLongEnough: the share of this
// machine's HTTP ceiling is said only when both runs lasted long enough
// for it to mean something; a short pair gives the throughputs and says
// why there is no share (a short run once read 164% of the ceiling).
func TestCeilingIsClaimedOnlyFromRunsLongEnough(t *testing.T) {
	for _, c := range []struct {
		base, svc time.Duration
		want      string
	}{
		{20 * time.Second, 25 * time.Second, "baseline 10000 req/s, service 8000 req/s: the service reaches 80% of this machine's HTTP ceiling\n"},
		{100 * time.Millisecond, 25 * time.Second, "baseline 10000 req/s, service 8000 req/s in runs of 100ms and 25s: too short to say what share of this machine's HTTP ceiling the service reaches (it takes runs of 5s or more each)\n"},
		{20 * time.Second, 4 * time.Second, "in runs of 20s and 4s: too short"},
	} {
		var b strings.Builder
		printCeiling(&b, Summary{Throughput: 10000, Wall: c.base}, Summary{Throughput: 8000, Wall: c.svc})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("runs of %s and %s printed %q; want %q", c.base, c.svc, b.String(), c.want)
		}
		if long := min(c.base, c.svc) >= MinCeilingWall; long != strings.Contains(b.String(), "% of this machine's HTTP ceiling") {
			t.Errorf("runs of %s and %s printed %q: a share of the ceiling only from runs of %s or more", c.base, c.svc, b.String(), MinCeilingWall)
		}
	}
}

// scripted answers the statuses in order, then 201.
func scripted(t *testing.T, answers ...func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(answers) {
			answers[i](w)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func status(code int, retryAfter string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

// clientKinds are the --client values; the retry tests run with each.
var clientKinds = []string{ClientNet, ClientFast}

func testCaller(kind string, waits *[]time.Duration) *Caller {
	c := &Caller{Client: Config{Client: kind, Timeout: 5 * time.Second}.loadClient(2), Policy: RetryPolicy{Retries: 5, Base: time.Millisecond, Max: 5 * time.Millisecond}}
	c.onWait = func(_ error, d time.Duration) { *waits = append(*waits, d) }
	return c
}

func post(c *Caller, url string) Result {
	return c.Do(context.Background(), func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	}, false)
}

// eachClient runs f once with every --client kind.
func eachClient(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range clientKinds {
		t.Run(kind, func(t *testing.T) { f(t, kind) })
	}
}

func TestRetriesOn503And429HonouringRetryAfter(t *testing.T) {
	eachClient(t, retriesHonouringRetryAfter)
}

func retriesHonouringRetryAfter(t *testing.T, kind string) {
	srv, n := scripted(t, status(503, ""), status(429, "1"), status(503, ""))
	var waits []time.Duration
	res := post(testCaller(kind, &waits), srv.URL)
	if res.Err != nil || res.Status != 201 || res.Retries != 3 || n.Load() != 4 {
		t.Fatalf("result %+v after %d attempts; want 201 after 3 retries", res, n.Load())
	}
	if len(waits) != 3 || waits[1] != time.Second {
		t.Errorf("waits %v; want the second (after 429 Retry-After: 1) to be exactly 1s", waits)
	}
	for _, i := range []int{0, 2} {
		if waits[i] > 5*time.Millisecond {
			t.Errorf("wait %d = %s; want full jitter within the 5ms ceiling", i, waits[i])
		}
	}
}

func TestRetriesOnNetworkError(t *testing.T) { eachClient(t, retriesOnNetworkError) }

func retriesOnNetworkError(t *testing.T, kind string) {
	// A listener that accepts and immediately closes: every attempt is a network error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var waits []time.Duration
	c := testCaller(kind, &waits)
	if tr, ok := c.Client.Transport.(*http.Transport); ok {
		tr.DisableKeepAlives = true
	}
	res := post(c, "http://"+ln.Addr().String())
	if res.Err == nil || res.Status != 0 || res.Retries != 5 {
		t.Fatalf("result %+v; want a network error after 5 retries", res)
	}
	if accepted.Load() < 6 {
		t.Errorf("server saw %d connections; want at least 6 attempts", accepted.Load())
	}
}

func TestGivesUpAfterFiveRetries(t *testing.T) { eachClient(t, givesUpAfterFiveRetries) }

func givesUpAfterFiveRetries(t *testing.T, kind string) {
	always := make([]func(http.ResponseWriter), 10)
	for i := range always {
		always[i] = status(503, "")
	}
	srv, n := scripted(t, always...)
	var waits []time.Duration
	res := post(testCaller(kind, &waits), srv.URL)
	var se *StatusError
	if !errors.As(res.Err, &se) || res.Status != 503 || res.Retries != 5 || n.Load() != 6 {
		t.Errorf("result %+v after %d attempts; want failed 503 after 1 try + 5 retries", res, n.Load())
	}
}

func TestNoRetryOn400(t *testing.T) { eachClient(t, noRetryOn400) }

func noRetryOn400(t *testing.T, kind string) {
	srv, n := scripted(t, status(400, ""))
	var waits []time.Duration
	res := post(testCaller(kind, &waits), srv.URL)
	if res.Err == nil || res.Status != 400 || res.Retries != 0 || n.Load() != 1 {
		t.Errorf("result %+v after %d attempts; want a failed 400 after one attempt", res, n.Load())
	}
}

func TestPercentilesAreNearestRank(t *testing.T) {
	var res []Result
	for i := 100; i >= 1; i-- { // unsorted on purpose
		res = append(res, Result{Latency: time.Duration(i) * time.Millisecond, Status: 201})
	}
	res = append(res, Result{Latency: time.Millisecond, Status: 503, Err: errors.New("x"), Retries: 5})
	s := Summarize("t", "POST", res, 2*time.Second, false)
	if s.P50 != 50*time.Millisecond || s.P95 != 95*time.Millisecond || s.P99 != 99*time.Millisecond || s.Max != 100*time.Millisecond {
		t.Errorf("p50 %s p95 %s p99 %s max %s; want 50/95/99/100ms (101 values: 1ms twice, then 2..100)", s.P50, s.P95, s.P99, s.Max)
	}
	if s.Succeeded != 100 || s.Failed != 1 || s.Retries != 5 || s.Statuses[201] != 100 || s.Statuses[503] != 1 || s.Throughput != 50 {
		t.Errorf("summary %+v", s)
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one value = %s", got)
	}
}

func TestCSVHasOneLinePerRequestAndChartIsSVG(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	res := []Result{
		{Start: t0.Add(1500 * time.Millisecond), Latency: 3 * time.Millisecond, Status: 503, Err: errors.New("x")},
		{Start: t0, Latency: 2 * time.Millisecond, Status: 201},
	}
	var csv strings.Builder
	if err := WriteCSV(&csv, "POST", res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 3 || lines[0] != "start,method,latency_ms,status" || !strings.HasSuffix(lines[1], ",POST,2.000,201") || !strings.HasSuffix(lines[2], ",POST,3.000,503") {
		t.Errorf("csv:\n%s", csv.String())
	}
	secs := Buckets(res, time.Second)
	if b := secs.Buckets; len(b) != 2 || b[0].Completed != 1 || b[1].Completed != 0 || b[1].P99 != 3*time.Millisecond {
		t.Errorf("per second %+v", secs)
	}
	var svg strings.Builder
	if err := WriteChart(&svg, "a <title>", secs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "successful requests / s", "p99 latency (ms)", "a &lt;title&gt;", "</svg>"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestSummaryKeepsTheFirstDistinctErrorsPerStatus(t *testing.T) {
	fail := func(status int, body string) Result {
		return Result{Status: status, Err: &StatusError{Status: status, Body: body}}
	}
	res := []Result{{Status: 201}}
	for range 5 {
		res = append(res, fail(404, `{"message":"season 2030 not found"}`+"\n"))
	}
	for i := range maxErrorSamples + 2 {
		res = append(res, fail(400, fmt.Sprintf(`{"message":"bad %d"}`, i)))
	}
	var out strings.Builder
	s := Summarize("t", "POST", res, time.Second, false)
	s.Print(&out)
	if got := s.Errors[404]; len(got) != 1 || got[0].Count != 5 || got[0].Reason != `{"message":"season 2030 not found"}` {
		t.Errorf("404 errors %+v; want the server's message once, counted 5 times", got)
	}
	if got := s.Errors[400]; len(got) != maxErrorSamples || got[0].Reason != `{"message":"bad 0"}` {
		t.Errorf("400 errors %+v; want the first %d distinct bodies", got, maxErrorSamples)
	}
	if !strings.Contains(out.String(), `404×5: {"message":"season 2030 not found"}`) {
		t.Errorf("report does not show the 404's message:\n%s", out.String())
	}
	if _, ok := s.Errors[201]; ok {
		t.Errorf("a success was listed as an error: %+v", s.Errors)
	}
}

func TestSummaryNamesTheAddressAndCauseOfNetworkErrors(t *testing.T) {
	eachClient(t, summaryNamesTheAddressAndCause)
}

func summaryNamesTheAddressAndCause(t *testing.T, kind string) {
	addr := apitest.ClosedAddr(t)
	var waits []time.Duration
	c := testCaller(kind, &waits)
	c.Policy.Retries = 0
	res := []Result{post(c, "http://"+addr+"/skiers/1/seasons/2024/days/1/skiers/7"), post(c, "http://"+addr+"/skiers/2/seasons/2024/days/1/skiers/8")}
	s := Summarize("t", "POST", res, time.Second, false)
	got := s.Errors[0]
	if len(got) != 1 || got[0].Count != 2 {
		t.Fatalf("network errors %+v; want one reason for both rides (the URL's ids left out)", got)
	}
	for _, want := range []string{"http://" + addr, "connection refused"} {
		if !strings.Contains(got[0].Reason, want) {
			t.Errorf("reason %q lacks %q", got[0].Reason, want)
		}
	}
	if strings.Contains(got[0].Reason, "/skiers/") {
		t.Errorf("reason %q carries one ride's path", got[0].Reason)
	}
}

func TestRequestsKeepTheBaseURLsPath(t *testing.T) {
	for _, base := range []string{"http://h:1/api", "http://h:1/api/"} {
		req, err := GetCases[0].Request(httpapi.ServerURL(base), Ride{ResortID: 3, Season: 2024, Day: 5, SkierID: 7})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := req.URL.String(), "http://h:1/api/skiers/3/seasons/2024/days/5/skiers/7"; got != want {
			t.Errorf("base %q: request to %s; want %s", base, got, want)
		}
	}
}
