package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
)

// fakeClock moves only when the scheduler sleeps (to exactly the time it
// sleeps until) or a test's server stalls (Advance), so schedules and
// latencies come out exact, whatever the real machine does.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.now = t
	}
	return nil
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// indexed builds request i as GET base/i, so the server knows which it got.
func indexed(base string) func(i int) (*http.Request, error) {
	return func(i int) (*http.Request, error) {
		return http.NewRequest(http.MethodGet, base+"/"+strconv.Itoa(i), nil)
	}
}

// collect records every result by index and fails the test on a repeat.
type collect struct {
	mu  sync.Mutex
	t   *testing.T
	res map[int]Result
}

func (c *collect) record(i int, r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.res[i]; dup {
		c.t.Errorf("request %d recorded twice", i)
	}
	c.res[i] = r
}

func TestScheduleKeepsTheRateAndSendsNothingEarly(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	var mu sync.Mutex
	arrived := map[int]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		mu.Lock()
		arrived[i] = clock.Now()
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	loop := OpenLoop{Rate: 1000, Count: 2500, MaxInFlight: 20, Grace: time.Minute, Clock: clock}
	got := &collect{t: t, res: map[int]Result{}}
	sent := loop.Run(context.Background(), NewHTTPClient(20, 10*time.Second), indexed(srv.URL), got.record)
	if sent != 2500 || len(got.res) != 2500 || len(arrived) != 2500 {
		t.Fatalf("sent %d, recorded %d, server saw %d; want 2500 each", sent, len(got.res), len(arrived))
	}
	perSecond := map[int]int{}
	for i, r := range got.res {
		want := t0.Add(time.Duration(i) * time.Millisecond)
		if !r.Start.Equal(want) {
			t.Fatalf("request %d intended at %s after the start; want %s", i, r.Start.Sub(t0), want.Sub(t0))
		}
		if arrived[i].Before(want) {
			t.Errorf("request %d reached the server at %s, before its intended start %s", i, arrived[i].Sub(t0), want.Sub(t0))
		}
		if r.Err != nil || r.Status != http.StatusOK {
			t.Errorf("request %d: %d %v", i, r.Status, r.Err)
		}
		perSecond[int(r.Start.Sub(t0)/time.Second)]++
	}
	if perSecond[0] != 1000 || perSecond[1] != 1000 || perSecond[2] != 500 {
		t.Errorf("intended starts per second %v; want 1000, 1000, 500", perSecond)
	}
	if end := clock.Now().Sub(t0); end < 2499*time.Millisecond {
		t.Errorf("the scheduler slept until %s; want at least the last intended start, 2.499s", end)
	}
}

func TestOpenLoopSendsWithoutWaitingForAnswersUpToMaxInFlight(t *testing.T) {
	for _, c := range []struct{ count, maxInFlight, wantBusy int }{{40, 100, 40}, {40, 8, 8}} {
		t.Run(fmt.Sprintf("%d requests, max %d in flight", c.count, c.maxInFlight), func(t *testing.T) {
			release := make(chan struct{})
			var busy, peak atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := busy.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				busy.Add(-1)
			}))
			t.Cleanup(srv.Close)
			loop := OpenLoop{Rate: 1000, Count: c.count, MaxInFlight: c.maxInFlight, Grace: time.Minute, Clock: newFakeClock()}
			got := &collect{t: t, res: map[int]Result{}}
			done := make(chan int)
			go func() {
				done <- loop.Run(context.Background(), NewHTTPClient(c.count, 10*time.Second), indexed(srv.URL), got.record)
			}()
			// No answer comes until released: a closed loop would have one
			// request per worker out; the open loop has as many as it may.
			deadline := time.Now().Add(30 * time.Second)
			for busy.Load() < int64(c.wantBusy) {
				if time.Now().After(deadline) {
					close(release)
					t.Fatalf("%d requests in flight before any answer; want %d", busy.Load(), c.wantBusy)
				}
				time.Sleep(5 * time.Millisecond) // polling, with the deadline above
			}
			close(release)
			if sent := <-done; sent != c.count || len(got.res) != c.count {
				t.Errorf("sent %d, recorded %d; want %d", sent, len(got.res), c.count)
			}
			if p := peak.Load(); p > int64(c.maxInFlight) {
				t.Errorf("%d requests in flight at once; the bound is %d", p, c.maxInFlight)
			}
		})
	}
}

// TestStallIsChargedToTheRequestsScheduledDuringIt: one worker, 1,000/s,
// and the server stalls 100 ms (of the test's clock) on the first request.
// Requests 1..99 were due during the stall; a closed-loop measurement would
// time them from when they finally went out and see nothing. Each must be
// recorded with at least its wait: 100 ms minus its intended start.
func TestStallIsChargedToTheRequestsScheduledDuringIt(t *testing.T) {
	const stall = 100 * time.Millisecond
	clock := newFakeClock()
	t0 := clock.Now()
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { clock.Advance(stall) })
	}))
	t.Cleanup(srv.Close)
	loop := OpenLoop{Rate: 1000, Count: 200, MaxInFlight: 1, Grace: time.Minute, Clock: clock}
	got := &collect{t: t, res: map[int]Result{}}
	rec := NewRecorder(loop.Count, false, nil)
	sent := loop.Run(context.Background(), NewHTTPClient(1, 10*time.Second), indexed(srv.URL), func(i int, r Result) {
		got.record(i, r)
		rec.Record(i, r)
	})
	if sent != 200 {
		t.Fatalf("sent %d; want 200", sent)
	}
	for i := 1; i < 100; i++ {
		r := got.res[i]
		wait := stall - r.Start.Sub(t0)
		if r.Latency < wait || r.Lag < wait {
			t.Errorf("request %d (due %s in, during the stall): latency %s, lag %s; want both at least its wait %s",
				i, r.Start.Sub(t0), r.Latency, r.Lag, wait)
		}
	}
	s := rec.Summary("stall", http.MethodGet, loop, sent)
	// The 99 requests due during the stall waited 99, 98, ... 1 ms: the top
	// 10% of 200 waited at least 79 ms, the worst at least 99 ms.
	if s.P90 < 79*time.Millisecond || s.Max < 99*time.Millisecond {
		t.Errorf("histogram p90 %s, max %s; want at least 79 ms and 99 ms", s.P90, s.Max)
	}
	if s.Late < 98 || s.Late > 100 {
		t.Errorf("%d sent late; want the 98 or 99 due more than 1 ms before the stall ended", s.Late)
	}
	if s.Latency.TotalCount() != 200 || s.Succeeded != 200 || s.Share(http.StatusOK) != 1 {
		t.Errorf("histogram holds %d, %d ok, 200 share %.2f; want all 200", s.Latency.TotalCount(), s.Succeeded, s.Share(http.StatusOK))
	}
}

func TestBaselineAnswersEachCaseWithItsStatusAndABodyOfItsShape(t *testing.T) {
	b, err := StartBaseline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	base := b.URL
	client := NewHTTPClient(1, 10*time.Second)
	do := func(req *http.Request, err error) (int, string, []byte) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}
	ride := Ride{ResortID: 3, Season: 2024, Day: 1, SkierID: 7, Time: 10, LiftID: 4}
	if st, _, body := do(postRequest(httpapi.ServerURL(base), ride)); st != http.StatusCreated || len(body) != 0 {
		t.Errorf("POST: %d %q; want 201 and no body", st, body)
	}
	targets := []any{new(int32), new(httpapi.SkierVertical), new(httpapi.ResortSkiers)}
	for k, gc := range GetCases {
		st, ct, body := do(gc.Request(httpapi.ServerURL(base), ride))
		if st != http.StatusOK || ct != "application/json" || len(body) == 0 || len(body) > 100 {
			t.Errorf("%s: %d %s %q; want 200 and a small JSON body", gc.Name, st, ct, body)
		}
		if err := json.Unmarshal(body, targets[k]); err != nil {
			t.Errorf("%s: body %q is not the service's answer's shape: %v", gc.Name, body, err)
		}
	}
	if v := targets[1].(*httpapi.SkierVertical); len(v.Resorts) != 1 {
		t.Errorf("season totals body decoded to %+v; want one season", v)
	}
	if v := targets[2].(*httpapi.ResortSkiers); v.NumSkiers == 0 {
		t.Errorf("resort-day body decoded to %+v; want a skier count", v)
	}
}

func TestGetCasesAskAboutTheSeedsRides(t *testing.T) {
	c := DefaultConfig()
	c.Mode, c.Rate, c.Duration = "get", 100, time.Second
	known := Known(c.Seed, c.Ranges, c.PostCount())
	// The POST load's first 100 rides, in order, are Known's.
	gen := NewGenerator(c.Seed, c.Ranges)
	for i := range known {
		if r := gen.Next(); r != known[i] {
			t.Fatalf("known ride %d is %+v; the POST load sends %+v", i, known[i], r)
		}
	}
	asked := map[string]bool{}
	for _, r := range known {
		asked[fmt.Sprintf("/skiers/%d/seasons/%d/days/%d/skiers/%d", r.ResortID, r.Season, r.Day, r.SkierID)] = true
		asked[fmt.Sprintf("/skiers/%d/vertical?resort=%d", r.SkierID, r.ResortID)] = true
		asked[fmt.Sprintf("/resorts/%d/seasons/%d/day/%d/skiers", r.ResortID, r.Season, r.Day)] = true
	}
	for _, oc := range openCases(c, known) {
		build := oc.build("http://h:1/")
		for i := range 300 {
			req, err := build(i)
			if err != nil {
				t.Fatal(err)
			}
			if !asked[req.URL.RequestURI()] {
				t.Fatalf("%s asks %s, which no ride of the POST load created", oc.name, req.URL.RequestURI())
			}
		}
	}
}

// TestOpenLoopKeepsSuccessBodiesWhenAsked: with KeepBody each 2xx
// answer's body comes back in the result (what a GET read); without, it
// is read and dropped.
func TestOpenLoopKeepsSuccessBodiesWhenAsked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	t.Cleanup(srv.Close)
	for _, keep := range []bool{true, false} {
		loop := OpenLoop{Rate: 1000, Count: 5, MaxInFlight: 5, Grace: time.Minute, Clock: newFakeClock(), KeepBody: keep}
		got := &collect{t: t, res: map[int]Result{}}
		loop.Run(context.Background(), NewHTTPClient(5, 10*time.Second), indexed(srv.URL), got.record)
		for i, r := range got.res {
			want := ""
			if keep {
				want = strconv.Itoa(i)
			}
			if r.Err != nil || string(r.Body) != want {
				t.Errorf("KeepBody %v: request %d body %q, %v; want %q", keep, i, r.Body, r.Err, want)
			}
		}
	}
}

// TestOpenLoopStopEndsTheScheduleAndAnswersWhatWasSent: once Stop is
// closed no further request is sent, and every request sent before it is
// answered and recorded, not cancelled.
func TestOpenLoopStopEndsTheScheduleAndAnswersWhatWasSent(t *testing.T) {
	stop := make(chan struct{})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 20 {
			close(stop)
		}
		time.Sleep(50 * time.Millisecond) // still in flight when Stop closes
	}))
	t.Cleanup(srv.Close)
	loop := OpenLoop{Rate: 1000, Count: 100_000, MaxInFlight: 200, Grace: time.Minute, Clock: RealClock{}, Stop: stop}
	got := &collect{t: t, res: map[int]Result{}}
	sent := loop.Run(context.Background(), NewHTTPClient(200, 10*time.Second), indexed(srv.URL), got.record)
	if sent < 20 || sent >= 1000 {
		t.Fatalf("sent %d of 100000 at 1000/s; want the schedule to end soon after the 20th request was served", sent)
	}
	if len(got.res) != sent {
		t.Errorf("%d requests recorded; want every one of the %d sent", len(got.res), sent)
	}
	for i, r := range got.res {
		if r.Err != nil || r.Status != http.StatusOK {
			t.Errorf("request %d: %d, %v; want it answered 200", i, r.Status, r.Err)
		}
	}
}
