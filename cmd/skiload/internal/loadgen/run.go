package loadgen

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // failed requests, lost rides, or the run could not finish
	ExitUsage  = 2
)

// Config is everything skiload is told.
type Config struct {
	URL            string
	Mode           string // post, get or all
	Seed           uint64
	Ranges         Ranges
	Phases         Phases
	Rides          int // > 0: the simple load (--rides), that many rides in place of the phases and as many GETs a case in place of GetRequests
	GetWorkers     int
	GetRequests    int
	Retry          RetryPolicy
	Timeout        time.Duration
	CSV, Chart     string
	Verify         bool
	VerifyDeadline time.Duration
	VerifySample   int
	Baseline       bool
	// Interleave > 1, with Baseline and Rate, runs each case in that many
	// slices of its schedule, the baseline's and the service's in turn,
	// so that the two meet the machine at the same moments; each server's
	// CPU is read over the whole case.
	Interleave int
	// Rate > 0 makes the run open-loop: each case sends Rate × Duration
	// requests at Rate per second, from at most MaxInFlight at once.
	Rate        float64
	Duration    time.Duration
	MaxInFlight int
	// CPUOf names local processes (by command name, from /proc) whose CPU
	// per request is reported beside the service's; CPUMetrics names
	// other skidata processes (a consumer) by their base URL, name=URL.
	CPUOf      string
	CPUMetrics string
	// Client is the HTTP client the load goes through: ClientNet or
	// ClientFast.
	Client string
}

// DefaultConfig is the assignment's load against localhost:8080.
func DefaultConfig() Config {
	return Config{
		URL: "http://127.0.0.1:8080", Mode: "post", Seed: 1,
		Ranges: DefaultRanges(), Phases: DefaultPhases(),
		GetWorkers: 100, GetRequests: 1000,
		Retry: DefaultRetryPolicy(), Timeout: 10 * time.Second,
		VerifyDeadline: 2 * time.Minute, VerifySample: 1000,
		Duration: 10 * time.Second, MaxInFlight: 2000, Interleave: 1, Client: ClientNet,
	}
}

// RegisterFlags binds c's fields to flags on fs, defaults from c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "url", c.URL, "base URL of the Ski Data API")
	c.registerOpenLoopFlags(fs, "case")
	fs.StringVar(&c.Mode, "mode", c.Mode, "post: the POST load; get: the three GET test cases, about the rides the POST load of the same --seed created; all: POST, wait for the queue to drain, then the GETs")
	fs.Var(&c.Ranges.Skiers, "skiers", "skier ids, lo-hi")
	fs.Var(&c.Ranges.Resorts, "resorts", "resort ids, lo-hi (the demo catalogue has 1-10)")
	fs.Var(&c.Ranges.Lifts, "lifts", "lift ids, lo-hi")
	fs.Var(&c.Ranges.Times, "times", "ride times (minutes), lo-hi")
	fs.Var(&c.Ranges.Days, "days", "day ids, lo-hi or one day")
	fs.Func("season", fmt.Sprintf("season year (default %d; must exist for the resorts)", c.Ranges.Season), func(s string) error {
		n, err := strconv.ParseInt(s, 10, 32)
		c.Ranges.Season = int32(n)
		return err
	})
	fs.IntVar(&c.Rides, "rides", c.Rides, fmt.Sprintf("a simple load of this many rides, in place of the four --phase* flags: one phase of %d workers (fewer below %d rides) sharing them; each GET case then sends as many GETs, from --get-workers workers sharing them, in place of --get-requests; --mode get with the same --seed and --rides asks about exactly the skiers such a load wrote (0: the phases)", ridesWorkers, ridesWorkers))
	fs.IntVar(&c.Phases.Phase1Workers, "phase1-workers", c.Phases.Phase1Workers, "POST workers started at once")
	fs.IntVar(&c.Phases.Phase1Requests, "phase1-requests", c.Phases.Phase1Requests, "POSTs each phase-1 worker sends")
	fs.IntVar(&c.Phases.Phase2Workers, "phase2-workers", c.Phases.Phase2Workers, "POST workers started when the first phase-1 worker finishes")
	fs.IntVar(&c.Phases.Phase2Requests, "phase2-requests", c.Phases.Phase2Requests, "POSTs each phase-2 worker sends (total rides = p1 workers × p1 requests + p2 workers × p2 requests)")
	fs.IntVar(&c.GetWorkers, "get-workers", c.GetWorkers, "workers per GET test case (closed loop)")
	fs.IntVar(&c.GetRequests, "get-requests", c.GetRequests, "GETs per worker per test case (closed loop)")
	fs.IntVar(&c.Retry.Retries, "retries", c.Retry.Retries, "retries of a request after a network error, 5xx or 429 (then it counts as failed); closed loop only: --rate sends each request once")
	fs.DurationVar(&c.Retry.Base, "backoff-base", c.Retry.Base, "first retry waits up to this (full jitter, doubling), unless Retry-After says")
	fs.DurationVar(&c.Retry.Max, "backoff-max", c.Retry.Max, "longest backoff ceiling")
	fs.StringVar(&c.CSV, "csv", c.CSV, "write one line per request (start, method, latency_ms, status) to this file (closed loop, --mode post or get)")
	fs.StringVar(&c.Chart, "chart", c.Chart, "write an SVG of throughput and p99 latency per second to this file (closed loop, --mode post or get)")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "after the POST load, wait for the queue to drain and check the store holds every 201'd ride; exact only on a fresh service (rides from earlier runs show as \"extra\")")
	fs.DurationVar(&c.VerifyDeadline, "verify-deadline", c.VerifyDeadline, "how long --verify (and the wait before the GETs) waits for /readyz queueDepth 0")
	fs.IntVar(&c.VerifySample, "verify-sample", c.VerifySample, "skier-days whose day vertical --verify checks")
	fs.BoolVar(&c.Baseline, "baseline", c.Baseline, "also run every case, in the same run, against a trivial in-process server that answers the same status with a small body (201 to a POST, 200 and a little JSON to a GET), to show this machine's ceiling")
	fs.IntVar(&c.Interleave, "interleave", c.Interleave, "with --rate and --baseline: run each case in this many slices, the baseline's and the service's in turn, so that both meet the machine's same moments (steadier ratios on a busy machine); 1: the baseline's whole case, then the service's")
	fs.StringVar(&c.CPUMetrics, "cpu-metrics", c.CPUMetrics, "also report the CPU per request of these skidata processes, name=base URL comma-separated, read from their /metrics (e.g. consumer=http://127.0.0.1:8081)")
}

// registerOpenLoopFlags binds the flags a run and a sweep share: the
// rides, the open-loop schedule and the CPU to report. unit names what
// one schedule serves (a run's case, a sweep's point).
func (c *Config) registerOpenLoopFlags(fs *flag.FlagSet, unit string) {
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the random rides and ids (same seed, same rides)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "per-attempt HTTP timeout (with --rate also how long a "+unit+" waits for answers after its last send)")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "open loop: send each "+unit+" at this many requests per second, whatever the answers do, and measure latency from each request's intended start (0, outside a sweep: the closed-loop workers)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "with --rate: how long each "+unit+"'s schedule runs (it sends rate × duration requests)")
	fs.IntVar(&c.MaxInFlight, "max-inflight", c.MaxInFlight, "with --rate: most requests (so connections) in flight at once; beyond it requests are sent late, and their wait still counts")
	fs.StringVar(&c.Client, "client", c.Client, "HTTP client of the load: net (net/http's) or fasthttp (sends and reads on the calling goroutine, without net/http's hand-offs to each connection's loops: less of skiload's own CPU a request, which on one box is CPU the server under test gets back); requests are built by the API's generated client either way")
	fs.StringVar(&c.CPUOf, "cpu-of", c.CPUOf, "also report the CPU per request of these local processes, by command name, comma-separated (e.g. beam.smp,postgres: every process of that name, from /proc)")
}

// validateClient refuses a --client that names no client (a run's flag
// and a sweep's).
func (c Config) validateClient() error {
	if c.Client != ClientNet && c.Client != ClientFast {
		return fmt.Errorf("--client %q: want %s or %s", c.Client, ClientNet, ClientFast)
	}
	return nil
}

// loadClient is the client --client names for the load's requests, with
// connections for workers at once.
func (c Config) loadClient(workers int) *http.Client {
	if c.Client == ClientFast {
		return newFastClient(workers, c.Timeout)
	}
	return NewHTTPClient(workers, c.Timeout)
}

// ridesWorkers is how many workers share a --rides load: the default
// load's phase 1.
const ridesWorkers = 32

// postPhases is the POST load's shape: the phases, or for --rides N one
// phase of up to ridesWorkers workers sharing the N rides (a worker stops
// when the generator's N rides are gone, so the load is exactly N).
func (c Config) postPhases() Phases {
	if c.Rides == 0 {
		return c.Phases
	}
	w := min(c.Rides, ridesWorkers)
	return Phases{Phase1Workers: w, Phase1Requests: (c.Rides + w - 1) / w}
}

// getShape is a closed-loop GET case's workers and requests in all.
func (c Config) getShape() (workers, requests int) {
	if c.Rides > 0 {
		return min(c.GetWorkers, c.Rides), c.Rides
	}
	return c.GetWorkers, c.GetWorkers * c.GetRequests
}

// RateCount is how many requests an open-loop case sends.
func (c Config) RateCount() int { return int(c.Rate * c.Duration.Seconds()) }

// PostCount is how many rides the POST load sends: the GET cases ask about
// the first PostCount rides of the seed's sequence.
func (c Config) PostCount() int {
	switch {
	case c.Rate > 0:
		return c.RateCount()
	case c.Rides > 0:
		return c.Rides
	}
	return c.Phases.Total()
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Mode != "post" && c.Mode != "get" && c.Mode != "all" {
		return fmt.Errorf("--mode %q: want post, get or all", c.Mode)
	}
	if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("--url %q: want http://host:port", c.URL)
	}
	if err := c.Ranges.Validate(); err != nil {
		return err
	}
	if err := c.Phases.Validate(); err != nil {
		return err
	}
	if c.GetWorkers < 1 || c.GetRequests < 1 {
		return fmt.Errorf("--get-workers and --get-requests must be at least 1")
	}
	if err := c.validateRides(); err != nil {
		return err
	}
	if c.Retry.Retries < 0 || c.Retry.Base < 0 || c.Retry.Max < c.Retry.Base {
		return fmt.Errorf("--retries must be ≥ 0 and --backoff-max ≥ --backoff-base ≥ 0")
	}
	if c.Verify && c.Mode == "get" {
		return fmt.Errorf("--verify checks the POST load; it does not apply to --mode get")
	}
	if err := c.validateClient(); err != nil {
		return err
	}
	if c.Rate < 0 {
		return fmt.Errorf("--rate %g: want requests per second, or 0 for the closed loop", c.Rate)
	}
	if c.Rate > 0 {
		if c.RateCount() < 1 {
			return fmt.Errorf("--rate %g for --duration %s sends no request", c.Rate, c.Duration)
		}
		if c.MaxInFlight < 1 {
			return fmt.Errorf("--max-inflight must be at least 1")
		}
		if c.CSV != "" || c.Chart != "" {
			return fmt.Errorf("--csv and --chart record the closed loop; with --rate the report's HDR percentiles are the record")
		}
		if c.Interleave < 1 || c.Interleave > c.RateCount() {
			return fmt.Errorf("--interleave %d: want 1 to the %d requests of a case", c.Interleave, c.RateCount())
		}
	}
	if c.Interleave != 1 && (c.Rate == 0 || !c.Baseline) {
		return fmt.Errorf("--interleave takes turns with the baseline in an open loop: use it with --rate and --baseline")
	}
	if _, _, err := ParseCPUMetrics(c.CPUMetrics); err != nil {
		return err
	}
	if c.Mode == "all" && (c.CSV != "" || c.Chart != "") {
		return fmt.Errorf("--csv and --chart record one kind of request: use --mode post or --mode get")
	}
	return nil
}

// validateRides refuses a --rides that cannot be meant: negative, or
// beside the flags it replaces or the open loop's own count.
func (c Config) validateRides() error {
	d := DefaultConfig()
	switch {
	case c.Rides < 0:
		return fmt.Errorf("--rides %d: want a number of rides, or 0 for the phases", c.Rides)
	case c.Rides == 0:
		return nil
	case c.Phases != d.Phases || c.GetRequests != d.GetRequests:
		return fmt.Errorf("--rides replaces the four --phase* flags and --get-requests: give one or the other")
	case c.Rate > 0:
		return fmt.Errorf("--rides sets the closed loop's load; with --rate each case sends --rate × --duration requests")
	}
	return nil
}

// Run runs the load c describes, writes the report to stdout and
// progress to p, and returns the exit code.
func Run(ctx context.Context, c Config, stdout io.Writer, p *Progress) int {
	c.URL = strings.TrimRight(c.URL, "/")
	if err := c.Validate(); err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		return ExitUsage
	}
	if c.Rate > 0 {
		return runOpen(ctx, c, stdout, p)
	}
	code := ExitOK
	if c.Mode != "get" {
		code = runPost(ctx, c, stdout, p)
		if ctx.Err() != nil {
			return code
		}
	}
	if c.Mode != "post" {
		if c.Mode == "all" {
			fmt.Fprintln(stdout)
		}
		code = max(code, runGet(ctx, c, stdout, p))
	}
	return code
}

// target is one server the cases run against and how to read what the
// requests cost it in CPU.
type target struct {
	URL string
	CPU []CPUSource
	// Queued: a skidata service, whose POST case waits for /readyz to show
	// an empty queue before the CPU is read again, so that the consumer's
	// and the store's work on the case's rides is counted with it.
	Queued bool
	// Queue reads the requests its processes made of a queue that bills
	// by request (nil: not a skidata service).
	Queue func(ctx context.Context) ([]float64, error)
}

// cpuClient reads the CPU sources' /metrics: a connection per reading, so
// nothing is left open between cases.
func cpuClient(c Config) *http.Client {
	return &http.Client{Timeout: c.Timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// service is the service under load: its own CPU from its /metrics, plus
// whatever --cpu-metrics and --cpu-of name.
func service(c Config) target {
	t := target{URL: c.URL, Queued: true}
	client := cpuClient(c)
	t.CPU = append(t.CPU, MetricsCPU("service", client, c.URL))
	bases := []string{c.URL}
	urls, names, _ := ParseCPUMetrics(c.CPUMetrics) // checked by Validate
	for _, name := range names {
		t.CPU = append(t.CPU, MetricsCPU(name, client, urls[name]))
		bases = append(bases, urls[name])
	}
	t.Queue = MetricsQueue(client, bases)
	for _, comm := range strings.Split(c.CPUOf, ",") {
		if comm = strings.TrimSpace(comm); comm != "" {
			t.CPU = append(t.CPU, ProcCPU(comm))
		}
	}
	return t
}

// startBaseline starts the baseline server, in a process of its own, when
// c asks for it; stop is never nil.
func startBaseline(c Config) (t target, stop func(), err error) {
	if !c.Baseline {
		return target{}, func() {}, nil
	}
	b, err := StartBaseline()
	if err != nil {
		return target{}, nil, fmt.Errorf("baseline server: %w", err)
	}
	return target{URL: b.URL, CPU: []CPUSource{PidCPU("baseline", b.PID)}}, b.Stop, nil
}

// startBaselineOrSay is startBaseline, saying on stdout why it failed.
func startBaselineOrSay(c Config, stdout io.Writer) (target, func(), bool) {
	t, stop, err := startBaseline(c)
	if err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		return target{}, nil, false
	}
	return t, stop, true
}

// measure runs f, which returns how many requests it sent, and what they
// cost t in CPU.
func measure(ctx context.Context, c Config, t target, method string, f func() int) CPUCost {
	// Only a service that answers its /metrics is waited for: a server
	// that is down, or not skidata, has no queue to drain.
	wait := t.Queued && method == http.MethodPost && len(t.CPU) > 0
	if wait {
		_, err := t.CPU[0].Read(ctx)
		wait = err == nil
	}
	var queueBefore []float64
	if t.Queue != nil {
		queueBefore, _ = t.Queue(ctx) // nil when unreadable: then not reported
	}
	n := 0
	cost := MeasureCPU(ctx, t.CPU, func() int {
		n = f()
		if wait && ctx.Err() == nil {
			client := NewHTTPClient(1, c.Timeout)
			_, _ = WaitDrained(ctx, client, t.URL, c.VerifyDeadline) // a failure shows in the report's own drain
			client.CloseIdleConnections()
		}
		return n
	})
	if queueBefore != nil {
		if after, err := t.Queue(ctx); err == nil {
			cost.Queue = queueRequests(queueBefore, after, n)
		}
	}
	return cost
}

func runPost(ctx context.Context, c Config, stdout io.Writer, p *Progress) int {
	base, stopBaseline, ok := startBaselineOrSay(c, stdout)
	if !ok {
		return ExitFailed
	}
	var baseline Summary
	if c.Baseline {
		var res []Result
		var wall time.Duration
		cpu := measure(ctx, c, base, http.MethodPost, func() int {
			res, wall = postLoad(ctx, c, base.URL, p, "baseline")
			return len(res)
		})
		baseline = Summarize("POST baseline (trivial 201 server, a process of its own)", http.MethodPost, res, wall, false)
		baseline.CPU = cpu
		baseline.Print(stdout)
		fmt.Fprintln(stdout)
	}
	stopBaseline()
	if ctx.Err() != nil {
		return ExitFailed
	}
	var res []Result
	var wall time.Duration
	cpu := measure(ctx, c, service(c), http.MethodPost, func() int {
		res, wall = postLoad(ctx, c, c.URL, p, "POST")
		return len(res)
	})
	s := Summarize("POST "+c.URL, http.MethodPost, res, wall, false)
	s.CPU = cpu
	s.Print(stdout)
	if c.Baseline {
		printCeiling(stdout, baseline, s)
	}
	code := ExitOK
	if s.Failed > 0 || len(res) < c.PostCount() {
		code = ExitFailed
	}
	if err := writeOutputs(c, "POST", res); err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		code = ExitFailed
	}
	if c.Verify && ctx.Err() == nil {
		accepted := make([]Ride, 0, len(res))
		for _, r := range res {
			if r.Err == nil {
				accepted = append(accepted, r.Ride)
			}
		}
		if !verify(ctx, c, accepted, stdout) {
			code = ExitFailed
		}
	}
	if interrupted(ctx, stdout) {
		return ExitFailed
	}
	return code
}

// MinCeilingWall is the shortest closed-loop run, the baseline's and the
// service's each, whose throughputs are compared as a share of this
// machine's HTTP ceiling: in a shorter one the workers' start and the
// last stragglers weigh enough to put the service above its own ceiling.
const MinCeilingWall = 5 * time.Second

// printCeiling compares the service's closed-loop run with the baseline's:
// the share of the ceiling only from runs of MinCeilingWall or more, the
// CPU per request only when both were measured.
func printCeiling(w io.Writer, baseline, service Summary) {
	fmt.Fprintf(w, "\nbaseline %.0f req/s, service %.0f req/s", baseline.Throughput, service.Throughput)
	if min(baseline.Wall, service.Wall) < MinCeilingWall {
		fmt.Fprintf(w, " in runs of %s and %s: too short to say what share of this machine's HTTP ceiling the service reaches (it takes runs of %s or more each)\n",
			baseline.Wall.Round(time.Millisecond), service.Wall.Round(time.Millisecond), MinCeilingWall)
	} else {
		fmt.Fprintf(w, ": the service reaches %.0f%% of this machine's HTTP ceiling\n", 100*service.Throughput/max(baseline.Throughput, 1e-9))
	}
	if service.CPU.Measured() && baseline.CPU.Measured() {
		fmt.Fprintf(w, "CPU per request: service %.1f µs (all measured processes), baseline %.1f µs: %.2fx\n",
			us(service.CPU.Total()), us(baseline.CPU.Total()), ratio(service.CPU.Total(), baseline.CPU.Total()))
	}
}

// postLoad sends the POST load (the phases, or --rides) to base and
// returns every result and the wall time.
func postLoad(ctx context.Context, c Config, base string, p *Progress, label string) ([]Result, time.Duration) {
	phases := c.postPhases()
	client := c.loadClient(phases.Workers())
	defer client.CloseIdleConnections()
	caller := &Caller{Client: client, Policy: c.Retry}
	server := httpapi.ServerURL(base)
	send := func(ctx context.Context, r Ride) Result {
		return caller.Do(ctx, func(ctx context.Context) (*http.Request, error) {
			return withContext(ctx)(postRequest(server, r))
		}, false)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rides := NewGenerator(c.Seed, c.Ranges).Feed(ctx, c.PostCount())
	stop := p.Start(ctx, label, c.PostCount())
	start := time.Now()
	res := phases.Run(ctx, rides, send, p.Observe)
	wall := time.Since(start)
	stop()
	return res, wall
}

// postRequest is the POST of ride r, built with the generated client.
func postRequest(server string, r Ride) (*http.Request, error) {
	return httpapi.NewWriteNewLiftRideRequest(server, r.ResortID, itoa(r.Season), itoa(r.Day), r.SkierID,
		httpapi.LiftRide{Time: &r.Time, LiftID: &r.LiftID})
}

// drain waits for the service's queue to empty, so that what the POST load
// was answered 201 for is in the store, and says how long that took.
func drain(ctx context.Context, c Config, stdout io.Writer, before string) bool {
	client := NewHTTPClient(1, c.Timeout)
	defer client.CloseIdleConnections()
	drained, err := WaitDrained(ctx, client, c.URL, c.VerifyDeadline)
	if err != nil {
		fmt.Fprintln(stdout, "skiload: waiting for the queue to drain:", err)
		return false
	}
	// Called as soon as the POST load has returned, this is the time from
	// its last answer to the first /readyz with queueDepth 0, to within one
	// poll interval.
	fmt.Fprintf(stdout, "drained in %.2f s (queueDepth 0 on /readyz, %s)\n", drained.Seconds(), before)
	return true
}

// interrupted says so when ctx has ended (Ctrl-C): the run stops there.
func interrupted(ctx context.Context, stdout io.Writer) bool {
	if ctx.Err() == nil {
		return false
	}
	fmt.Fprintln(stdout, "skiload: interrupted")
	return true
}

// verify checks, after a blank line, that the store holds accepted.
func verify(ctx context.Context, c Config, accepted []Ride, stdout io.Writer) bool {
	fmt.Fprintln(stdout)
	if !drain(ctx, c, stdout, "after the last POST") {
		return false
	}
	client := NewHTTPClient(4, c.Timeout)
	defer client.CloseIdleConnections()
	v, err := Verify(ctx, &Caller{Client: client, Policy: c.Retry}, c.URL, Expect(accepted), c.VerifySample, c.Seed)
	if err != nil {
		fmt.Fprintln(stdout, "verify:", err)
		return false
	}
	v.Print(stdout)
	return v.Lost() == 0
}

// GetCase is one GET test case: a name and how to build its request about
// one ride the POST load created (with the generated client's builders,
// against httpapi.ServerURL(base)).
type GetCase struct {
	Name    string
	Request func(server string, r Ride) (*http.Request, error)
}

// GetCases are the three GET test cases of the design notes, each asking
// about a ride of the seed's POST load: its skier's day vertical at its
// resort and day, its skier's season totals at its resort, its resort-day's
// unique skiers. On a service that stored that load, every answer is 200.
var GetCases = []GetCase{
	{"GET skier day vertical", func(server string, r Ride) (*http.Request, error) {
		return httpapi.NewGetSkierDayVerticalRequest(server, r.ResortID, itoa(r.Season), itoa(r.Day), r.SkierID)
	}},
	{"GET skier season totals", func(server string, r Ride) (*http.Request, error) {
		return httpapi.NewGetSkierResortTotalsRequest(server, r.SkierID, &httpapi.GetSkierResortTotalsParams{Resort: []string{itoa(r.ResortID)}})
	}},
	{"GET unique skiers per resort-day", func(server string, r Ride) (*http.Request, error) {
		return httpapi.NewGetResortSkiersDayRequest(server, r.ResortID, r.Season, r.Day)
	}},
}

// caseRand is the random source that picks the rides GET case k asks
// about: the same for the baseline and the service, and for every run
// with the same seed.
func caseRand(seed uint64, k, worker int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(k)<<32|uint64(worker)))
}

// withContext adapts a generated builder's (request, error) to the Caller,
// which builds a fresh request for every attempt under the attempt's context.
func withContext(ctx context.Context) func(*http.Request, error) (*http.Request, error) {
	return func(req *http.Request, err error) (*http.Request, error) {
		if err != nil {
			return nil, err
		}
		return req.WithContext(ctx), nil
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func runGet(ctx context.Context, c Config, stdout io.Writer, p *Progress) int {
	code := ExitOK
	if !drain(ctx, c, stdout, "before the GETs") {
		code = ExitFailed
	}
	fmt.Fprintln(stdout)
	base, stopBaseline, ok := startBaselineOrSay(c, stdout)
	if !ok {
		return ExitFailed
	}
	defer stopBaseline()
	svc := service(c)
	known := Known(c.Seed, c.Ranges, c.PostCount())
	workers, n := c.getShape()
	load := func(k int, gc GetCase, t target, label string) (res []Result, wall time.Duration, cpu CPUCost) {
		client := c.loadClient(workers)
		defer client.CloseIdleConnections()
		caller := &Caller{Client: client, Policy: c.Retry}
		server := httpapi.ServerURL(t.URL)
		rngs := make([]*rand.Rand, workers)
		for w := range rngs {
			rngs[w] = caseRand(c.Seed, k, w)
		}
		call := func(ctx context.Context, w int) Result {
			req, err := gc.Request(server, known[rngs[w].IntN(len(known))])
			return caller.Do(ctx, func(ctx context.Context) (*http.Request, error) {
				return withContext(ctx)(req, err)
			}, false)
		}
		stop := p.Start(ctx, label, n)
		cpu = measure(ctx, c, t, http.MethodGet, func() int {
			start := time.Now()
			res = Repeat(ctx, workers, n, call, p.Observe)
			wall = time.Since(start)
			return len(res)
		})
		stop()
		return res, wall, cpu
	}
	var all []Result
	for k, gc := range GetCases {
		if k > 0 {
			fmt.Fprintln(stdout)
		}
		var baseline Summary
		if c.Baseline {
			res, wall, cpu := load(k, gc, base, "baseline "+gc.Name)
			baseline = Summarize(gc.Name+" baseline (trivial 200 server, a process of its own)", http.MethodGet, res, wall, true)
			baseline.CPU = cpu
			baseline.Print(stdout)
			fmt.Fprintln(stdout)
		}
		res, wall, cpu := load(k, gc, svc, gc.Name)
		s := Summarize(gc.Name, http.MethodGet, res, wall, true)
		s.CPU = cpu
		s.Print(stdout)
		if c.Baseline {
			printCeiling(stdout, baseline, s)
		}
		if s.Failed > 0 || len(res) < n {
			code = ExitFailed
		}
		all = append(all, res...)
		if interrupted(ctx, stdout) {
			return ExitFailed
		}
	}
	if err := writeOutputs(c, "GET", all); err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		code = ExitFailed
	}
	return code
}

// openCase is one case of an open-loop run.
type openCase struct {
	name   string
	method string
	// build returns, for one run against server, the builder of request i.
	build func(server string) func(i int) (*http.Request, error)
}

// offsetBuild builds request i of a slice starting at lo as request lo+i
// of the whole case.
func offsetBuild(build func(int) (*http.Request, error), lo int) func(int) (*http.Request, error) {
	return func(i int) (*http.Request, error) { return build(lo + i) }
}

// offsetRecord records request i of a slice starting at lo as request
// lo+i of the whole case.
func offsetRecord(rec *Recorder, lo int) func(int, Result) {
	return func(i int, r Result) { rec.Record(lo+i, r) }
}

// openCases are the cases c's mode runs: the POST of the known rides in
// order, and the GET cases each asking about known rides picked at random.
func openCases(c Config, known []Ride) []openCase {
	var cases []openCase
	if c.Mode != "get" {
		cases = append(cases, openCase{name: "POST", method: http.MethodPost,
			build: func(server string) func(int) (*http.Request, error) {
				return func(i int) (*http.Request, error) { return postRequest(server, known[i]) }
			}})
	}
	if c.Mode != "post" {
		for k, gc := range GetCases {
			cases = append(cases, openCase{name: gc.Name, method: http.MethodGet,
				build: func(server string) func(int) (*http.Request, error) {
					rng := caseRand(c.Seed, k, 0)
					return func(int) (*http.Request, error) { return gc.Request(server, known[rng.IntN(len(known))]) }
				}})
		}
	}
	return cases
}

// runOpen runs the open-loop cases: each against the baseline server (with
// --baseline), then against the service, so both see the machine in the
// same state (with --interleave, a slice of each at a time, in turn), and
// ends with the two side by side.
func runOpen(ctx context.Context, c Config, stdout io.Writer, p *Progress) int {
	n := c.RateCount()
	known := Known(c.Seed, c.Ranges, n)
	loop := OpenLoop{Rate: c.Rate, Count: n, MaxInFlight: c.MaxInFlight, Grace: c.Timeout, Clock: RealClock{}}
	base, stopBaseline, ok := startBaselineOrSay(c, stdout)
	if !ok {
		return ExitFailed
	}
	defer stopBaseline()
	svc := service(c)
	// One client per server for the whole run: its connections, once
	// opened, serve every case.
	svcClient, baseClient := c.loadClient(c.MaxInFlight), c.loadClient(c.MaxInFlight)
	defer svcClient.CloseIdleConnections()
	defer baseClient.CloseIdleConnections()
	run := func(oc openCase, client *http.Client, t target, label string) RateSummary {
		rec := NewRecorder(n, oc.method == http.MethodGet, p.Observe)
		stop := p.Start(ctx, label, n)
		var sent int
		cpu := measure(ctx, c, t, oc.method, func() int {
			sent = loop.Run(ctx, client, oc.build(httpapi.ServerURL(t.URL)), rec.Record)
			return sent
		})
		stop()
		s := rec.Summary(fmt.Sprintf("%s, open loop %.0f/s for %s against %s", label, c.Rate, c.Duration, t.URL), oc.method, loop, sent)
		s.CPU = cpu
		return s
	}
	// both runs a case against the baseline and the service in turn, a
	// slice of its schedule at a time (Interleave), and reads each
	// server's CPU over the whole case.
	both := func(oc openCase) (b, s RateSummary) {
		get := oc.method == http.MethodGet
		recB, recS := NewRecorder(n, get, p.Observe), NewRecorder(n, get, p.Observe)
		buildB, buildS := oc.build(httpapi.ServerURL(base.URL)), oc.build(httpapi.ServerURL(svc.URL))
		stop := p.Start(ctx, oc.name+" and its baseline, interleaved", 2*n)
		var sentB, sentS int
		var cpuS CPUCost
		cpuB := MeasureCPU(ctx, base.CPU, func() int {
			cpuS = measure(ctx, c, svc, oc.method, func() int {
				for j := 0; j < c.Interleave && ctx.Err() == nil; j++ {
					lo, hi := j*n/c.Interleave, (j+1)*n/c.Interleave
					slice := loop
					slice.Count = hi - lo
					sentB += slice.Run(ctx, baseClient, offsetBuild(buildB, lo), offsetRecord(recB, lo))
					recB.EndSlice()
					sentS += slice.Run(ctx, svcClient, offsetBuild(buildS, lo), offsetRecord(recS, lo))
					recS.EndSlice()
				}
				return sentS
			})
			return sentB
		})
		stop()
		of := fmt.Sprintf(", open loop %.0f/s for %s in %d slices, in turn, against ", c.Rate, c.Duration, c.Interleave)
		b = recB.Summary(oc.name+" baseline"+of+base.URL, oc.method, loop, sentB)
		s = recS.Summary(oc.name+of+svc.URL, oc.method, loop, sentS)
		b.CPU, s.CPU = cpuB, cpuS
		return b, s
	}
	code := ExitOK
	cases := openCases(c, known)
	var names []string
	var service, baseline []RateSummary
	for k, oc := range cases {
		if k > 0 {
			fmt.Fprintln(stdout)
		}
		if oc.method == http.MethodGet && (k == 0 || cases[k-1].method != http.MethodGet) {
			if !drain(ctx, c, stdout, "before the GETs") {
				code = ExitFailed
			}
			fmt.Fprintln(stdout)
		}
		var s RateSummary
		inTurn := c.Baseline && c.Interleave > 1
		if c.Baseline {
			var b RateSummary
			if inTurn {
				b, s = both(oc)
			} else {
				b = run(oc, baseClient, base, oc.name+" baseline")
			}
			b.Print(stdout)
			fmt.Fprintln(stdout)
			baseline = append(baseline, b)
		}
		if !inTurn {
			s = run(oc, svcClient, svc, oc.name)
		}
		s.Print(stdout)
		service, names = append(service, s), append(names, oc.name)
		if s.Failed > 0 || s.NotSent() > 0 {
			code = ExitFailed
		}
		if oc.method == http.MethodPost && c.Verify && ctx.Err() == nil {
			var accepted []Ride
			for i, ok := range s.OK {
				if ok {
					accepted = append(accepted, known[i])
				}
			}
			if !verify(ctx, c, accepted, stdout) {
				code = ExitFailed
			}
		}
		if interrupted(ctx, stdout) {
			return ExitFailed
		}
	}
	if c.Baseline {
		fmt.Fprintln(stdout)
		PrintComparison(stdout, c.Rate, names, service, baseline)
	}
	return code
}

func writeOutputs(c Config, method string, res []Result) error {
	write := func(path string, f func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		out, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		if err := f(out); err != nil {
			out.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := out.Close(); err != nil {
			return fmt.Errorf("close %s: %w", path, err)
		}
		return nil
	}
	return errors.Join(
		write(c.CSV, func(w io.Writer) error { return WriteCSV(w, method, res) }),
		write(c.Chart, func(w io.Writer) error {
			series := ChartSeries(res)
			return WriteChart(w, fmt.Sprintf("skiload %s %s: successful requests/s and p99 latency per %s", method, c.URL, series.Width), series)
		}),
	)
}

// Baseline answers, small bodies shaped like the service's 200s to the
// three GET cases (the real ones vary in their digits only).
var (
	baselineResortSkiers = []byte(`{"time":"Mission Ridge","numSkiers":17543}` + "\n")
	baselineSkierTotals  = []byte(`{"resorts":[{"seasonID":"2024","totalVert":320}]}` + "\n")
	baselineDayVertical  = []byte("320\n")
)

// BaselineHandler answers as the service would, without the service: a
// POST (any method but GET) 201 with no body after reading its body, a GET
// 200 with a small JSON body picked by the path's shape. It does the HTTP
// work a client and the kernel do and nothing else.
func BaselineHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusCreated)
			return
		}
		body := baselineDayVertical
		switch {
		case strings.HasPrefix(r.URL.Path, "/resorts/"):
			body = baselineResortSkiers
		case strings.HasSuffix(r.URL.Path, "/vertical"):
			body = baselineSkierTotals
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// Baseline is the baseline server, running in a process of its own so
// that its CPU is read apart from skiload's (a server sharing skiload's
// process would share its garbage collector and scheduler too).
type Baseline struct {
	URL  string
	PID  int
	Stop func()
}

// baselineEnv, set in the environment of skiload's own executable, makes
// it the baseline server (ServeBaselineIfAsked).
const baselineEnv = "SKILOAD_BASELINE_SERVER"

// StartBaseline starts skiload's own executable as the baseline server and
// waits for its address.
func StartBaseline() (Baseline, error) {
	exe, err := os.Executable()
	if err != nil {
		return Baseline{}, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), baselineEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Baseline{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Baseline{}, err
	}
	if err := cmd.Start(); err != nil {
		return Baseline{}, err
	}
	stop := func() {
		stdin.Close() // the server exits when its stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "http://") {
		stop()
		return Baseline{}, fmt.Errorf("%s did not start as the baseline server (printed %q, %v): a test binary must call loadgen.ServeBaselineIfAsked in TestMain", exe, line, err)
	}
	return Baseline{URL: strings.TrimSpace(line), PID: cmd.Process.Pid, Stop: stop}, nil
}

// ServeBaselineIfAsked returns at once, unless this process was started by
// StartBaseline: then it serves BaselineHandler on a loopback port, prints
// its URL on stdout, and exits when its stdin closes. skiload's main (and
// a test binary's TestMain) call it first.
func ServeBaselineIfAsked() {
	if os.Getenv(baselineEnv) != "1" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiload baseline server: listen:", err)
		os.Exit(1)
	}
	fmt.Println("http://" + ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until skiload closes it, or exits
		os.Exit(0)
	}()
	srv := &http.Server{Handler: BaselineHandler(), ReadHeaderTimeout: 10 * time.Second}
	err = srv.Serve(ln)
	fmt.Fprintln(os.Stderr, "skiload baseline server:", err)
	os.Exit(1)
}
