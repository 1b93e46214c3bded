package loadgen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skidata/skidata/adapters/httpapi/apiclient"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailed  = 1 // failed requests, lost rides, or the run could not finish
	ExitUsage   = 2
	getNotFound = true
)

// Config is everything skiload is told.
type Config struct {
	URL            string
	Mode           string // post or get
	Seed           uint64
	Ranges         Ranges
	Phases         Phases
	GetWorkers     int
	GetRequests    int
	Retry          RetryPolicy
	Timeout        time.Duration
	CSV, Chart     string
	Verify         bool
	VerifyDeadline time.Duration
	VerifySample   int
	Baseline       bool
}

// DefaultConfig is the assignment's load against localhost:8080.
func DefaultConfig() Config {
	return Config{
		URL: "http://127.0.0.1:8080", Mode: "post", Seed: 1,
		Ranges: DefaultRanges(), Phases: DefaultPhases(),
		GetWorkers: 100, GetRequests: 1000,
		Retry: DefaultRetryPolicy(), Timeout: 10 * time.Second,
		VerifyDeadline: 2 * time.Minute, VerifySample: 1000,
	}
}

// RegisterFlags binds c's fields to flags on fs, defaults from c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "url", c.URL, "base URL of the Ski Data API")
	fs.StringVar(&c.Mode, "mode", c.Mode, "post: the two-phase POST load; get: the three GET test cases")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the random rides and ids (same seed, same rides)")
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
	fs.IntVar(&c.Phases.Phase1Workers, "phase1-workers", c.Phases.Phase1Workers, "POST workers started at once")
	fs.IntVar(&c.Phases.Phase1Requests, "phase1-requests", c.Phases.Phase1Requests, "POSTs each phase-1 worker sends")
	fs.IntVar(&c.Phases.Phase2Workers, "phase2-workers", c.Phases.Phase2Workers, "POST workers started when the first phase-1 worker finishes")
	fs.IntVar(&c.Phases.Phase2Requests, "phase2-requests", c.Phases.Phase2Requests, "POSTs each phase-2 worker sends (total rides = p1 workers × p1 requests + p2 workers × p2 requests)")
	fs.IntVar(&c.GetWorkers, "get-workers", c.GetWorkers, "workers per GET test case (--mode get)")
	fs.IntVar(&c.GetRequests, "get-requests", c.GetRequests, "GETs per worker per test case (--mode get)")
	fs.IntVar(&c.Retry.Retries, "retries", c.Retry.Retries, "retries of a request after a network error, 5xx or 429 (then it counts as failed)")
	fs.DurationVar(&c.Retry.Base, "backoff-base", c.Retry.Base, "first retry waits up to this (full jitter, doubling), unless Retry-After says")
	fs.DurationVar(&c.Retry.Max, "backoff-max", c.Retry.Max, "longest backoff ceiling")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "per-attempt HTTP timeout")
	fs.StringVar(&c.CSV, "csv", c.CSV, "write one line per request (start, method, latency_ms, status) to this file")
	fs.StringVar(&c.Chart, "chart", c.Chart, "write an SVG of throughput and p99 latency per second to this file")
	fs.BoolVar(&c.Verify, "verify", c.Verify, "after the POST load, wait for the queue to drain and check the store holds every 201'd ride; exact only on a fresh service (rides from earlier runs show as \"extra\")")
	fs.DurationVar(&c.VerifyDeadline, "verify-deadline", c.VerifyDeadline, "how long --verify waits for /readyz queueDepth 0")
	fs.IntVar(&c.VerifySample, "verify-sample", c.VerifySample, "skier-days whose day vertical --verify checks")
	fs.BoolVar(&c.Baseline, "baseline", c.Baseline, "first run the same POST load against a trivial in-process server that answers 201, to show this machine's ceiling")
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.Mode != "post" && c.Mode != "get" {
		return fmt.Errorf("--mode %q: want post or get", c.Mode)
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
	if c.Retry.Retries < 0 || c.Retry.Base < 0 || c.Retry.Max < c.Retry.Base {
		return fmt.Errorf("--retries must be ≥ 0 and --backoff-max ≥ --backoff-base ≥ 0")
	}
	if c.Verify && c.Mode != "post" {
		return fmt.Errorf("--verify checks the POST load; it does not apply to --mode get")
	}
	if c.Baseline && c.Mode != "post" {
		return fmt.Errorf("--baseline measures the POST load; it does not apply to --mode get")
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
	if c.Mode == "get" {
		return runGet(ctx, c, stdout, p)
	}
	return runPost(ctx, c, stdout, p)
}

func runPost(ctx context.Context, c Config, stdout io.Writer, p *Progress) int {
	var baseline Summary
	if c.Baseline {
		url, stop, err := StartBaseline()
		if err != nil {
			fmt.Fprintln(stdout, "skiload: baseline server:", err)
			return ExitFailed
		}
		res, wall := postLoad(ctx, c, url, p, "baseline")
		stop()
		baseline = Summarize("POST baseline (trivial in-process 201 server)", http.MethodPost, res, wall, false)
		baseline.Print(stdout)
		fmt.Fprintln(stdout)
		if ctx.Err() != nil {
			return ExitFailed
		}
	}
	res, wall := postLoad(ctx, c, c.URL, p, "POST")
	s := Summarize("POST "+c.URL, http.MethodPost, res, wall, false)
	s.Print(stdout)
	if c.Baseline {
		fmt.Fprintf(stdout, "\nbaseline %.0f req/s, service %.0f req/s: the service reaches %.0f%% of this machine's HTTP ceiling\n",
			baseline.Throughput, s.Throughput, 100*s.Throughput/max(baseline.Throughput, 1e-9))
	}
	code := ExitOK
	if s.Failed > 0 || len(res) < c.Phases.Total() {
		code = ExitFailed
	}
	if err := writeOutputs(c, "POST", res); err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		code = ExitFailed
	}
	if c.Verify && ctx.Err() == nil {
		fmt.Fprintln(stdout)
		if !verify(ctx, c, res, stdout) {
			code = ExitFailed
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stdout, "skiload: interrupted")
		return ExitFailed
	}
	return code
}

// postLoad sends the two-phase load to base and returns every result and the wall time.
func postLoad(ctx context.Context, c Config, base string, p *Progress, label string) ([]Result, time.Duration) {
	client := NewHTTPClient(c.Phases.Workers(), c.Timeout)
	defer client.CloseIdleConnections()
	caller := &Caller{Client: client, Policy: c.Retry}
	server := apiclient.ServerURL(base)
	send := func(ctx context.Context, r Ride) Result {
		return caller.Do(ctx, func(ctx context.Context) (*http.Request, error) {
			return withContext(ctx)(apiclient.NewWriteNewLiftRideRequest(server, r.ResortID, itoa(r.Season), itoa(r.Day), r.SkierID,
				apiclient.LiftRide{Time: &r.Time, LiftID: &r.LiftID}))
		}, false)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rides := NewGenerator(c.Seed, c.Ranges).Feed(ctx, c.Phases.Total())
	stop := p.Start(ctx, label, c.Phases.Total())
	start := time.Now()
	res := c.Phases.Run(ctx, rides, send, p.Observe)
	wall := time.Since(start)
	stop()
	return res, wall
}

func verify(ctx context.Context, c Config, res []Result, stdout io.Writer) bool {
	accepted := make([]Ride, 0, len(res))
	for _, r := range res {
		if r.Err == nil {
			accepted = append(accepted, r.Ride)
		}
	}
	client := NewHTTPClient(4, c.Timeout)
	defer client.CloseIdleConnections()
	drained, err := WaitDrained(ctx, client, c.URL, c.VerifyDeadline)
	if err != nil {
		fmt.Fprintln(stdout, "verify:", err)
		return false
	}
	// Measured from the last POST's answer (the load has returned) to the
	// first /readyz with queueDepth 0, to within one poll interval.
	fmt.Fprintf(stdout, "drained in %.2f s (queueDepth 0 on /readyz after the last POST)\n", drained.Seconds())
	v, err := Verify(ctx, &Caller{Client: client, Policy: c.Retry}, c.URL, Expect(accepted), c.VerifySample, c.Seed)
	if err != nil {
		fmt.Fprintln(stdout, "verify:", err)
		return false
	}
	v.Print(stdout)
	return v.Lost() == 0
}

// GetCase is one GET test case: a name and how to build a random request
// (with the generated client's builders, against apiclient.ServerURL(base)).
type GetCase struct {
	Name    string
	Request func(server string, rng *rand.Rand, g Ranges) (*http.Request, error)
}

// GetCases are the three GET test cases of the design notes.
var GetCases = []GetCase{
	{"GET skier day vertical", func(server string, rng *rand.Rand, g Ranges) (*http.Request, error) {
		return apiclient.NewGetSkierDayVerticalRequest(server, g.Resorts.pick(rng), itoa(g.Season), itoa(g.Days.pick(rng)), g.Skiers.pick(rng))
	}},
	{"GET skier season totals", func(server string, rng *rand.Rand, g Ranges) (*http.Request, error) {
		return apiclient.NewGetSkierResortTotalsRequest(server, g.Skiers.pick(rng), &apiclient.GetSkierResortTotalsParams{Resort: []string{itoa(g.Resorts.pick(rng))}})
	}},
	{"GET unique skiers per resort-day", func(server string, rng *rand.Rand, g Ranges) (*http.Request, error) {
		return apiclient.NewGetResortSkiersDayRequest(server, g.Resorts.pick(rng), g.Season, g.Days.pick(rng))
	}},
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
	client := NewHTTPClient(c.GetWorkers, c.Timeout)
	defer client.CloseIdleConnections()
	caller := &Caller{Client: client, Policy: c.Retry}
	server := apiclient.ServerURL(c.URL)
	code := ExitOK
	var all []Result
	for i, gc := range GetCases {
		rngs := make([]*rand.Rand, c.GetWorkers)
		for w := range rngs {
			rngs[w] = rand.New(rand.NewPCG(c.Seed, uint64(i)<<32|uint64(w)))
		}
		call := func(ctx context.Context, w int) Result {
			req, err := gc.Request(server, rngs[w], c.Ranges)
			return caller.Do(ctx, func(ctx context.Context) (*http.Request, error) {
				return withContext(ctx)(req, err)
			}, false)
		}
		stop := p.Start(ctx, gc.Name, c.GetWorkers*c.GetRequests)
		start := time.Now()
		res := Repeat(ctx, c.GetWorkers, c.GetRequests, call, p.Observe)
		wall := time.Since(start)
		stop()
		s := Summarize(gc.Name, http.MethodGet, res, wall, getNotFound)
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		s.Print(stdout)
		if s.Failed > 0 || len(res) < c.GetWorkers*c.GetRequests {
			code = ExitFailed
		}
		all = append(all, res...)
		if ctx.Err() != nil {
			fmt.Fprintln(stdout, "skiload: interrupted")
			return ExitFailed
		}
	}
	if err := writeOutputs(c, "GET", all); err != nil {
		fmt.Fprintln(stdout, "skiload:", err)
		code = ExitFailed
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

// StartBaseline serves, on a loopback port, a server that answers every
// request 201 after reading and discarding its body: the same HTTP work a
// client and the kernel do, with no service behind it. It returns the base
// URL and a stop function.
func StartBaseline() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return "http://" + ln.Addr().String(), func() { srv.Close(); <-done }, nil
}
