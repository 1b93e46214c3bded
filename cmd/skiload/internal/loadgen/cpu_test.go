package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
)

// TestMain lets this test binary serve as the baseline's server process.
// It also shortens Verify's wait for lagging reads: the tests' fakes that
// lag do so for a few requests, and a lost ride is found a second later.
func TestMain(m *testing.M) {
	ServeBaselineIfAsked()
	lagAllowance = time.Second
	os.Exit(m.Run())
}

func TestCPUIsReadFromTheProcessCounterOfPrometheusText(t *testing.T) {
	text := "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n" +
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.25\n" +
		"# TYPE skidata_rides_total counter\nskidata_rides_total 3\n"
	got, err := counterSum(strings.NewReader(text), "process_cpu_seconds_total")
	if err != nil || got != 12.25 {
		t.Errorf("got %v, %v; want 12.25", got, err)
	}
	if _, err := counterSum(strings.NewReader("# TYPE skidata_rides_total counter\nskidata_rides_total 3\n"), "process_cpu_seconds_total"); err == nil {
		t.Error("metrics without the process counter gave no error")
	}
}

func TestAHistogramCountsItsObservations(t *testing.T) {
	text := "# TYPE skidata_publish_message_rides histogram\n" +
		"skidata_publish_message_rides_bucket{le=\"1\"} 2\nskidata_publish_message_rides_bucket{le=\"+Inf\"} 5\n" +
		"skidata_publish_message_rides_sum 120\nskidata_publish_message_rides_count 5\n"
	if got, err := counterSum(strings.NewReader(text), "skidata_publish_message_rides"); err != nil || got != 5 {
		t.Errorf("got %v, %v; want 5 messages", got, err)
	}
}

// fakeCPU reads the next of its values at each call.
func fakeCPU(name string, values ...time.Duration) CPUSource {
	return CPUSource{Name: name, Read: func(context.Context) (time.Duration, error) {
		if len(values) == 0 {
			return 0, errors.New("gone")
		}
		v := values[0]
		values = values[1:]
		return v, nil
	}}
}

func TestMeasureCPUDividesEachSourcesUseByTheRequestsSent(t *testing.T) {
	cost := MeasureCPU(context.Background(), []CPUSource{
		fakeCPU("api", time.Second, 1800*time.Millisecond),
		fakeCPU("postgres", 10*time.Second, 10400*time.Millisecond),
		fakeCPU("vanished", time.Second), // unreadable after the run
	}, func() int { return 10000 })
	if cost.Per[0] != 80*time.Microsecond || cost.Per[1] != 40*time.Microsecond {
		t.Errorf("per request %v; want api 80µs, postgres 40µs", cost.Per)
	}
	if cost.Err[2] == nil || cost.Total() != 120*time.Microsecond {
		t.Errorf("unreadable source: err %v, total %v; want an error and a total of the other two, 120µs", cost.Err[2], cost.Total())
	}
	var b strings.Builder
	cost.Print(&b)
	if want := "CPU per request (µs): api 80.0, postgres 40.0, vanished n/a (gone), total 120.0\n"; b.String() != want {
		t.Errorf("printed %q; want %q", b.String(), want)
	}
}

// TestMeasureCPUMarksAFewTicksTooShortToMeasure: /proc counts CPU in
// 10 ms ticks, so a case whose CPU difference is a few ticks gives no
// figure per request: it is marked too short, and the total and the
// comparison leave it out, rather than printing a tick divided by the
// requests as microseconds.
func TestMeasureCPUMarksAFewTicksTooShortToMeasure(t *testing.T) {
	cost := MeasureCPU(context.Background(), []CPUSource{
		fakeCPU("service", time.Second, 1030*time.Millisecond),  // 3 ticks
		fakeCPU("consumer", time.Second, 1190*time.Millisecond), // 19 ticks
		fakeCPU("postgres", time.Second, 1200*time.Millisecond), // 20 ticks: 200 ms over 1000 requests
	}, func() int { return 1000 })
	var b strings.Builder
	cost.Print(&b)
	want := "CPU per request (µs): service n/a (too short to measure: 3 ticks of 10ms of CPU; a figure needs 20 or more, to be within 5%), " +
		"consumer n/a (too short to measure: 19 ticks of 10ms of CPU; a figure needs 20 or more, to be within 5%), postgres 200.0, total 200.0\n"
	if b.String() != want {
		t.Errorf("printed %q;\nwant    %q", b.String(), want)
	}
	short := MeasureCPU(context.Background(), []CPUSource{fakeCPU("service", time.Second, 1010*time.Millisecond)}, func() int { return 1000 })
	if short.Measured() || cpuCell(short) != "n/a" || cpuRatioCell(cost, short) != "n/a" {
		t.Errorf("a case of one tick: measured %v, cell %q, ratio %q; want not measured, n/a, n/a", short.Measured(), cpuCell(short), cpuRatioCell(cost, short))
	}
}

// burn spends CPU in this process until it has used d more.
func burn(t *testing.T, d time.Duration) {
	self := PidCPU("self", os.Getpid())
	start, err := self.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		now, err := self.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if now-start >= d {
			_ = x
			return
		}
	}
}

// TestProcCPUCountsEveryProcessOfThatName: the sum over this test binary's
// name includes at least what this process alone used in between.
func TestProcCPUCountsEveryProcessOfThatName(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	byName := ProcCPU(strings.TrimSpace(string(comm)))
	before, err := byName.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	burn(t, 100*time.Millisecond)
	after, err := byName.Read(context.Background())
	if err != nil || after-before < 100*time.Millisecond {
		t.Errorf("processes named %s used %v over a 100ms burn (%v); want at least 100ms", comm, after-before, err)
	}
	if _, err := ProcCPU("no-such-program").Read(context.Background()); err == nil || !strings.Contains(err.Error(), "no process named no-such-program") {
		t.Errorf("unknown program: %v; want an error naming it", err)
	}
}

// TestBaselineRunsInAProcessOfItsOwn: its CPU is read apart from skiload's.
func TestBaselineRunsInAProcessOfItsOwn(t *testing.T) {
	b, err := StartBaseline()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	if b.PID == os.Getpid() || b.PID <= 0 {
		t.Fatalf("baseline pid %d; want another process than this one (%d)", b.PID, os.Getpid())
	}
	client := NewHTTPClient(1, 10*time.Second)
	defer client.CloseIdleConnections()
	for range 200 {
		req, err := postRequest(httpapi.ServerURL(b.URL), Ride{ResortID: 1, Season: 2024, Day: 1, SkierID: 1, Time: 1, LiftID: 1})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("baseline answered %d; want 201", resp.StatusCode)
		}
	}
	if _, err := PidCPU("baseline", b.PID).Read(context.Background()); err != nil {
		t.Errorf("baseline CPU unreadable: %v", err)
	}
	b.Stop()
	if _, err := os.Stat("/proc/" + itoa(int32(b.PID)) + "/stat"); err == nil {
		if st, _ := os.ReadFile("/proc/" + itoa(int32(b.PID)) + "/stat"); !strings.Contains(string(st), ") Z ") {
			t.Errorf("baseline process %d still runs after Stop", b.PID)
		}
	}
}

func TestCPUMetricsFlagIsNameEqualsURL(t *testing.T) {
	urls, order, err := ParseCPUMetrics("consumer=http://127.0.0.1:8081, other=https://h:1")
	if err != nil || len(order) != 2 || urls["consumer"] != "http://127.0.0.1:8081" || urls["other"] != "https://h:1" {
		t.Errorf("got %v %v %v", urls, order, err)
	}
	for _, bad := range []string{"consumer", "=http://x", "c=127.0.0.1:1", "c=http://a,c=http://b"} {
		if _, _, err := ParseCPUMetrics(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestQueueRequestsAreSummedOverEveryProcessPerMillion: the requests to a
// queue that bills by request are read from every process's /metrics (the
// API sends, the consumer receives and deletes), summed, and given per
// million requests of the case; a case that asked nothing of such a queue
// (RabbitMQ) reports none.
func TestQueueRequestsAreSummedOverEveryProcessPerMillion(t *testing.T) {
	var mu sync.Mutex
	values := map[string][3]float64{} // by process: billed, requests, empty receives
	serve := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			v := values[name]
			mu.Unlock()
			fmt.Fprintf(w, "# TYPE skidata_queue_billed_requests_total counter\nskidata_queue_billed_requests_total %g\n"+
				"# TYPE skidata_queue_requests_total counter\nskidata_queue_requests_total{api=\"SendMessage\"} %g\nskidata_queue_requests_total{api=\"GetQueueAttributes\"} 2\n"+
				"# TYPE skidata_queue_empty_receives_total counter\nskidata_queue_empty_receives_total %g\n", v[0], v[1]-2, v[2])
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	set := func(name string, v [3]float64) { mu.Lock(); values[name] = v; mu.Unlock() }
	set("api", [3]float64{10, 10, 0})
	set("consumer", [3]float64{4, 4, 1})
	read := MetricsQueue(http.DefaultClient, []string{serve("api"), serve("consumer")})
	before, err := read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	set("api", [3]float64{60, 60, 0})      // 50 sends
	set("consumer", [3]float64{34, 32, 3}) // 28 receives and deletes, one of 64 KiB more, 2 of them empty
	after, err := read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	q := queueRequests(before, after, 4000)
	if want := (QueueRequests{Billed: 20_000, Requests: 19_500, EmptyReceives: 500}); q == nil || *q != want {
		t.Fatalf("queue requests %+v; want %+v per million of the 4,000 requests", q, want)
	}
	var b strings.Builder
	CPUCost{Names: []string{"service"}, Per: []time.Duration{80 * time.Microsecond}, Err: []error{nil}, Queue: q}.Print(&b)
	if want := "CPU per request (µs): service 80.0\nqueue requests per million requests: 20000 billed, 19500 sent, 500 of them empty receives (every process's own count)\n"; b.String() != want {
		t.Errorf("printed %q; want %q", b.String(), want)
	}
	if q := queueRequests(after, after, 4000); q != nil {
		t.Errorf("a case that asked nothing of the queue reports %+v; want nothing", q)
	}
}
