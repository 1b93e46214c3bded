package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
	"github.com/skidata/skidata/test/apitest"
)

// TestMain lets this test binary serve as --baseline's server process.
func TestMain(m *testing.M) {
	loadgen.ServeBaselineIfAsked()
	os.Exit(m.Run())
}

// eachClient runs f once with each --client.
func eachClient(t *testing.T, f func(t *testing.T, client string)) {
	for _, client := range []string{loadgen.ClientNet, loadgen.ClientFast} {
		t.Run(client, func(t *testing.T) { f(t, client) })
	}
}

// TestLoadAgainstTheRealServiceLosesNothing runs skiload end to end against
// the whole service in memory mode on a loopback port, with each HTTP
// client: a small two-phase load, then --verify.
func TestLoadAgainstTheRealServiceLosesNothing(t *testing.T) { eachClient(t, loadLosesNothing) }

func loadLosesNothing(t *testing.T, client string) {
	base := memoryService(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"--url", base, "--client", client, "--phase1-workers", "4", "--phase1-requests", "200",
		"--phase2-workers", "8", "--phase2-requests", "200", "--verify", "--verify-deadline", "30s",
	}, &stdout, &stderr, false)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d; want 0\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"2400 ok, 0 failed", "201×2400", "lost: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("a fresh service reported extra rides:\n%s", out)
	}
}

// memoryService starts the whole service in memory mode on a loopback port.
func memoryService(t *testing.T) string {
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.LogLevel = "warn"
	return apitest.Start(t, cfg)
}

// TestGetCasesAfterThePostLoadAnswer200: --mode all POSTs the seed's rides,
// waits for /readyz queueDepth 0, then asks about those rides' skiers and
// days: every GET must be a 200; a later --mode get with the same seed and
// load flags asks about the same rides.
func TestGetCasesAfterThePostLoadAnswer200(t *testing.T) { eachClient(t, getCasesAnswer200) }

func getCasesAnswer200(t *testing.T, client string) {
	base := memoryService(t)
	small := []string{"--url", base, "--client", client, "--phase1-workers", "4", "--phase1-requests", "100", "--phase2-workers", "4", "--phase2-requests", "100",
		"--get-workers", "4", "--get-requests", "50", "--quiet"}
	for _, c := range []struct {
		args      []string
		reports   int
		baselines int
	}{{[]string{"--mode", "all"}, 3, 0}, {[]string{"--mode", "get", "--baseline"}, 6, 3}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(c.args, small...), &stdout, &stderr, false)
		out := stdout.String()
		if code != 0 {
			t.Fatalf("%v: exit %d; want 0\n%s\n%s", c.args, code, out, stderr.String())
		}
		if got := strings.Count(out, "200 ok, 0 failed; 200: 100.00%\n"); got != c.reports || strings.Contains(out, "not found") || !strings.Contains(out, "drained in") {
			t.Errorf("%v: want %d GET reports each 200 ok (all 200), after the drain:\n%s", c.args, c.reports, out)
		}
		// Runs this short are compared with the baseline, but not called
		// a share of this machine's ceiling.
		if got := strings.Count(out, "baseline (trivial 200 server, a process of its own)"); got != c.baselines || strings.Count(out, ": too short to say what share of this machine's HTTP ceiling") != c.baselines || strings.Contains(out, "% of this machine's HTTP ceiling") {
			t.Errorf("%v: %d GET baselines; want %d, each compared without a share of the ceiling:\n%s", c.args, got, c.baselines, out)
		}
	}
}

// TestRidesIsASmallLoadWhoseGETsAskOnlyAboutItsSkiers: --rides N POSTs
// exactly N rides without the --phase* flags, and a later --mode get with
// the same --seed and --rides asks N GETs a case about those rides'
// skiers only: every answer a 200, none "not found".
func TestRidesIsASmallLoadWhoseGETsAskOnlyAboutItsSkiers(t *testing.T) {
	base := memoryService(t)
	for _, c := range []struct {
		args []string
		want string
		n    int
	}{
		{[]string{"--rides", "150", "--verify"}, "150 ok, 0 failed; 201: 100.00%\n", 1},
		{[]string{"--rides", "150", "--mode", "get"}, "150 ok, 0 failed; 200: 100.00%\n", 3},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(c.args, "--url", base, "--seed", "7", "--quiet"), &stdout, &stderr, false)
		out := stdout.String()
		if code != 0 || strings.Count(out, c.want) != c.n || strings.Contains(out, "not found") || strings.Contains(out, "404") {
			t.Errorf("%v: exit %d; want 0 and %d reports of %q, no 404:\n%s\n%s", c.args, code, c.n, c.want, out, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--url", base, "--rides", "10", "--phase1-workers", "2"}, &stdout, &stderr, false); code != 2 || !strings.Contains(stderr.String(), "--rides replaces the four --phase* flags") {
		t.Errorf("--rides with --phase1-workers: exit %d, stderr %q; want 2 saying --rides replaces them", code, stderr.String())
	}
}

// TestOpenLoopRunAgainstTheServiceAndTheBaseline runs every case open-loop
// against the service in memory mode and the baseline: all requests sent,
// the POSTs all 201, the GETs (after the drain) all 200, the CPU per
// request of every process named, and the side-by-side table.
func TestOpenLoopRunAgainstTheServiceAndTheBaseline(t *testing.T) { eachClient(t, openLoopRun) }

func openLoopRun(t *testing.T, client string) {
	base := memoryService(t)
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	comm := strings.TrimSpace(string(self))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--url", base, "--client", client, "--mode", "all", "--rate", "400", "--duration", "500ms", "--baseline", "--verify", "--quiet",
		"--cpu-metrics", "consumer=" + base, "--cpu-of", comm}, &stdout, &stderr, false)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d; want 0\n%s\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"200 scheduled, 200 sent, 0 not sent; 200 ok, 0 failed; 201: 100.00%", "lost: 0", "drained in", "== service vs baseline", "corrected for coordinated omission"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Three GET cases, each against the baseline and the service.
	if got := strings.Count(out, "200 scheduled, 200 sent, 0 not sent; 200 ok, 0 failed; 200: 100.00%"); got != 6 {
		t.Errorf("%d GET reports with every answer 200; want 6:\n%s", got, out)
	}
	// The service runs in this test's process, so its three sources read
	// the same counter: each case shows all three, and their total. A
	// case this short may use too few of /proc's ticks for a figure: then
	// the source says so instead of a number.
	const cpu = `(?:[0-9.]+|n/a \(too short to measure: [0-9]+ ticks of 10ms of CPU; a figure needs 20 or more, to be within 5%\))`
	cpuLine := regexp.MustCompile(`CPU per request \(µs\): service ` + cpu + `, consumer ` + cpu + `, ` + regexp.QuoteMeta(comm) + ` ` + cpu + `(?:, total [0-9.]+)?\n`)
	if got := len(cpuLine.FindAllString(out, -1)); got != 4 {
		t.Errorf("%d service cases report their CPU per request in every source; want 4:\n%s", got, out)
	}
	if got := len(regexp.MustCompile(`CPU per request \(µs\): baseline `+cpu+`\n`).FindAllString(out, -1)); got != 4 {
		t.Errorf("%d baseline cases report their CPU per request; want 4:\n%s", got, out)
	}
	table := out[strings.Index(out, "== service vs baseline"):]
	for _, name := range []string{"POST", "GET skier day vertical", "GET skier season totals", "GET unique skiers per resort-day"} {
		// The row ends: CPU svc, CPU base, their ratio, ok share, then late svc/base.
		row := regexp.MustCompile(`(?m)^` + name + ` .* (?:[0-9.]+|n/a) +(?:[0-9.]+|n/a) +(?:[0-9.]+x|n/a) +100\.00% +[0-9.]+%/[0-9.]+%$`)
		if !row.MatchString(table) {
			t.Errorf("comparison: %s does not show every answer as expected:\n%s", name, table)
		}
	}
}

// TestInterleavedCasesTakeTurnsWithTheBaseline runs the POST case in two
// slices (--interleave 2) against a service that notes when each POST
// arrives: its POSTs come in two halves with the baseline's turn, a
// second of schedule, between them, and the rate reported is the
// schedule's, not diluted by the baseline's turn.
func TestInterleavedCasesTakeTurnsWithTheBaseline(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			arrivals = append(arrivals, time.Now())
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			return
		}
		http.NotFound(w, r)
	}))
	defer svc.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--url", svc.URL, "--mode", "post", "--rate", "200", "--duration", "2s", "--baseline", "--interleave", "2", "--quiet"}, &stdout, &stderr, false)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d; want 0\n%s\n%s", code, out, stderr.String())
	}
	if got := strings.Count(out, "400 scheduled, 400 sent, 0 not sent; 400 ok, 0 failed"); got != 2 {
		t.Errorf("%d cases sent their whole schedule; want 2 (the baseline and the service):\n%s", got, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 400 {
		t.Fatalf("the service saw %d POSTs; want 400", len(arrivals))
	}
	slices.SortFunc(arrivals, time.Time.Compare)
	widest := 1
	for i := 2; i < len(arrivals); i++ {
		if arrivals[i].Sub(arrivals[i-1]) > arrivals[widest].Sub(arrivals[widest-1]) {
			widest = i
		}
	}
	if gap := arrivals[widest].Sub(arrivals[widest-1]); widest != 200 || gap < 500*time.Millisecond {
		t.Errorf("the widest pause between the service's POSTs is %s, before POST %d; want the baseline's turn (a second of schedule) before POST 200", gap, widest)
	}
	achieved := regexp.MustCompile(`(?m)^== POST, open loop .*\n.*\nrate: +200/s asked, ([0-9]+)/s achieved`).FindStringSubmatch(out)
	if achieved == nil {
		t.Fatalf("no rate line for the service's case:\n%s", out)
	}
	// Counting the baseline's turn as the service's time would report about
	// 133/s (399 sends over three seconds); 150 leaves the schedule two
	// thirds of a second of lateness on a loaded machine.
	if n, _ := strconv.Atoi(achieved[1]); n < 150 {
		t.Errorf("the service's case achieved %d/s; want about the 200/s asked (the baseline's turn is not its time):\n%s", n, out)
	}
}

// TestClientFlagPicksTheClientTheLoadGoesThrough: the POSTs of a closed
// loop and of an open loop reach the server through the client --client
// names (net/http's says who it is in User-Agent; skiload's fasthttp
// client sends none).
func TestClientFlagPicksTheClientTheLoadGoesThrough(t *testing.T) {
	for _, c := range []struct{ client, agent string }{{loadgen.ClientNet, "Go-http-client/1.1"}, {loadgen.ClientFast, ""}} {
		for _, loop := range [][]string{
			{"--phase1-workers", "2", "--phase1-requests", "5", "--phase2-workers", "0"},
			{"--rate", "50", "--duration", "200ms"},
		} {
			var mu sync.Mutex
			agents := map[string]int{}
			svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost { // not skiload's reads of /metrics
					mu.Lock()
					agents[r.UserAgent()]++
					mu.Unlock()
				}
				w.WriteHeader(http.StatusCreated)
			}))
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"--url", svc.URL, "--client", c.client, "--quiet"}, loop...), &stdout, &stderr, false)
			svc.Close()
			if code != 0 {
				t.Fatalf("--client %s %v: exit %d\n%s\n%s", c.client, loop, code, stdout.String(), stderr.String())
			}
			if want := map[string]int{c.agent: 10}; !maps.Equal(agents, want) {
				t.Errorf("--client %s %v: the server saw User-Agents %v; want %v", c.client, loop, agents, want)
			}
		}
	}
}

// TestCPUProfileIsWrittenForTheRun: --cpu-profile leaves a profile of
// the run (pprof's gzipped protobuf); a file that cannot be created is
// refused before any load is sent.
func TestCPUProfileIsWrittenForTheRun(t *testing.T) {
	var posts atomic.Int64
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer svc.Close()
	dir := t.TempDir()
	load := []string{"--url", svc.URL, "--rate", "50", "--duration", "200ms", "--quiet"}
	var stdout, stderr bytes.Buffer
	path := filepath.Join(dir, "skiload.prof")
	if code := run(context.Background(), append(load, "--cpu-profile", path), &stdout, &stderr, false); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpu-profile wrote %d bytes (%v); want a gzipped profile", len(b), err)
	}
	sent := posts.Load()
	stderr.Reset()
	code := run(context.Background(), append(load, "--cpu-profile", filepath.Join(dir, "no-such-dir", "p.prof")), &stdout, &stderr, false)
	if code != 2 || !strings.Contains(stderr.String(), "--cpu-profile") || posts.Load() != sent {
		t.Errorf("an uncreatable profile: exit %d, stderr %q, %d POSTs sent; want exit 2 naming the flag, none sent", code, stderr.String(), posts.Load()-sent)
	}
}

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, 0},
		{[]string{"--no-such-flag"}, 2},
		{[]string{"--mode", "put"}, 2},
		{[]string{"--skiers", "10-1"}, 2},
		{[]string{"--verify", "--mode", "get"}, 2},
		{[]string{"--rate", "-5"}, 2},
		{[]string{"--rate", "1", "--duration", "100ms"}, 2},
		{[]string{"--rate", "100", "--csv", "x.csv"}, 2},
		{[]string{"--rate", "100", "--max-inflight", "0"}, 2},
		{[]string{"--rate", "100", "--baseline", "--interleave", "0"}, 2},
		{[]string{"--rate", "100", "--duration", "1s", "--baseline", "--interleave", "101"}, 2},
		{[]string{"--rate", "100", "--interleave", "2"}, 2},
		{[]string{"--baseline", "--interleave", "2"}, 2},
		{[]string{"--mode", "all", "--chart", "x.svg"}, 2},
		{[]string{"--cpu-metrics", "consumer"}, 2},
		{[]string{"--cpu-metrics", "consumer=127.0.0.1:8081"}, 2},
		{[]string{"--client", "curl"}, 2},
		{[]string{"sweep", "--vary", "batch-size=10", "--client", "curl"}, 2},
		{[]string{"nemesis", "--help"}, 0},
		{[]string{"nemesis", "--modes", "rabbitmq-postgres,no-such-mode"}, 2},
		{[]string{"nemesis", "--fault-min", "5s", "--fault-max", "1s"}, 2},
		{[]string{"nemesis", "--get-every", "1"}, 2},
		{[]string{"extra-arg"}, 2},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), c.args, &stdout, &stderr, false); got != c.code {
			t.Errorf("skiload %v: exit %d; want %d (stderr %s)", c.args, got, c.code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"--help"}, &stdout, &stderr, false)
	for _, flag := range []string{"phase1-workers", "phase2-requests", "verify-deadline", "verify-sample", "baseline", "csv", "chart", "retries", "mode", "get-workers", "seed", "skiers", "season", "fresh service", "rate", "duration", "max-inflight", "coordinated omission", "cpu-of", "cpu-metrics", "interleave", "client", "cpu-profile"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("--help does not mention %q", flag)
		}
	}
}

func TestBaselineReportsBothThroughputs(t *testing.T) {
	base := memoryService(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--url", base, "--baseline", "--phase1-workers", "2", "--phase1-requests", "50", "--phase2-workers", "2", "--phase2-requests", "50"}, &stdout, &stderr, false)
	if code != 0 || !strings.Contains(stdout.String(), "POST baseline") || !strings.Contains(stdout.String(), "of this machine's HTTP ceiling") {
		t.Errorf("exit %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// TestReportShowsTheServersMessageAndNetworkCauses: a load against a season
// the service does not have reports the service's own 404 message, and a
// load against a port nothing listens on names the address and the cause.
func TestReportShowsTheServersMessageAndNetworkCauses(t *testing.T) {
	base := memoryService(t)
	small := []string{"--phase1-workers", "2", "--phase1-requests", "5", "--phase2-workers", "0", "--phase2-requests", "0", "--retries", "0", "--quiet"}

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"--url", base, "--season", "2030"}, small...), &stdout, &stderr, false)
	out := stdout.String()
	if code != 1 || !strings.Contains(out, "404×10") || !strings.Contains(out, "2030") || !strings.Contains(out, `"message"`) {
		t.Errorf("missing season: exit %d; want 1 and the server's 404 message naming 2030:\n%s\n%s", code, out, stderr.String())
	}

	down := "http://" + apitest.ClosedAddr(t)
	stdout.Reset()
	code = run(context.Background(), append([]string{"--url", down}, small...), &stdout, &stderr, false)
	out = stdout.String()
	if code != 1 || !strings.Contains(out, "network-error×10: Post "+down+": dial tcp") || !strings.Contains(out, "connection refused") {
		t.Errorf("server down: exit %d; want 1 and the address and cause:\n%s", code, out)
	}
}

// TestSweepStartsTheServiceForEveryPointAndMeasuresIt runs a tiny sweep
// of skiapi (built here) in memory mode, one process a point: every point
// answers every POST 201 and reports the CPU and store writes per ride,
// in the table, the JSON and the chart.
func TestSweepStartsTheServiceForEveryPointAndMeasuresIt(t *testing.T) {
	skiapi := filepath.Join(t.TempDir(), "skiapi")
	if out, err := exec.Command("go", "build", "-o", skiapi, "../skiapi").CombinedOutput(); err != nil {
		t.Fatalf("go build skiapi: %v\n%s", err, out)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--skiapi", skiapi, "--split=false", "--service-flags", "--store memory",
		"--vary", "batch-size=10,100", "--rate", "200", "--duration", "500ms", "--quiet",
		"--json", filepath.Join(dir, "s.json"), "--chart", filepath.Join(dir, "s.svg")}, &stdout, &stderr, false)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	var points []loadgen.SweepPoint
	if err := json.Unmarshal(b, &points); err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 {
		t.Fatalf("%d points; want 2:\n%s", len(points), stdout.String())
	}
	for _, p := range points {
		// A point this short may use too few of /proc's ticks for a
		// figure: then it says so instead of a number.
		measured := p.CPU["all"] > 0 && p.CPU["total"] == p.CPU["all"] && p.CPUNotMeasured["all"] == ""
		tooShort := strings.HasPrefix(p.CPUNotMeasured["all"], "too short to measure") && len(p.CPU) == 0
		if p.Sent != 100 || p.OK != 100 || measured == tooShort || p.StoreWritesPerRide <= 0 || p.StoreWritesPerRide > 1 || p.MessagesPerRide <= 0 || p.MessagesPerRide > 1 {
			t.Errorf("point %s: %+v; want 100 sent and 201'd, CPU measured or too short to measure, between 0 and 1 message and store write per ride", p.Label(), p)
		}
		if tooShort && !strings.Contains(stdout.String(), "n/a: all at "+p.Label()+": too short to measure") {
			t.Errorf("point %s was too short to measure; the table does not say so:\n%s", p.Label(), stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "batch-size=10 ") || !strings.Contains(stdout.String(), "batch-size=100 ") {
		t.Errorf("table lacks a point:\n%s", stdout.String())
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "s.svg")); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Errorf("chart: %v", err)
	}
}
