package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Clock is the time an open-loop run schedules and measures by. The real
// one is the monotonic clock; tests give a fake one that only moves when
// told, so the schedule and the latency correction can be checked exactly
// without asserting anything about real time.
type Clock interface {
	Now() time.Time
	// SleepUntil returns once t has come, or ctx's error if ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the wall clock (its readings carry the monotonic clock, so
// differences between them are immune to clock steps).
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// coarseMargin is how much of a wait is left to preciseSleep: the runtime's
// timers wake a goroutine on an idle process through epoll, whose timeout
// is in whole milliseconds, so a 50 µs sleep (the gap between requests at
// 20,000/s) can last a whole millisecond; that would send every request up
// to a millisecond late, in bursts, and add the delay to both sides of the
// baseline comparison.
const coarseMargin = 2 * time.Millisecond

// SleepUntil sleeps until t: on a runtime timer until coarseMargin before
// it (so a long wait still ends when ctx does), then preciseSleep.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := time.Until(t)
		switch {
		case d <= 0:
			return nil
		case d <= coarseMargin:
			preciseSleep(d)
		default:
			timer := time.NewTimer(d - coarseMargin)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
		}
	}
}

// LateAfter is how far past its intended start a request may be sent and
// still count as on time: the scheduler's own wake-up jitter on a busy
// machine is tens of microseconds, so a millisecond late means the client
// could not keep up (every worker busy, or no CPU for the scheduler).
const LateAfter = time.Millisecond

// OpenLoop is an open-loop load: Count requests whose intended start times
// are fixed in advance, Rate per second from the start, whatever the
// answers do. A closed loop (N workers, each sending its next request when
// the last one is answered) sends less while the service is slow, so the
// slow moments get few samples and every request that would have arrived
// meanwhile is never measured: "coordinated omission". Here a slow answer
// delays no later request, and each latency runs from the request's
// intended start, so a request that had to wait (for a free worker, or
// because the scheduler itself was late) carries its wait.
type OpenLoop struct {
	Rate  float64 // requests per second
	Count int
	// MaxInFlight bounds the workers (so the connections): as many as are
	// busy at once, up to this. At the bound a request waits for a worker,
	// is sent late, and its latency still counts from its intended start.
	MaxInFlight int
	// Grace is how long after the last intended start the run waits for
	// answers; then it cancels what is still in flight, so a run is bounded
	// by Count/Rate + Grace.
	Grace time.Duration
	Clock Clock
	// KeepBody keeps each 2xx answer's body (up to 64 KB) in
	// Result.Body, for a caller that checks what a GET said; otherwise
	// it is read and dropped.
	KeepBody bool
	// Stop, when closed, ends the schedule early: no request is sent
	// after it, and those in flight are answered as usual. nil: never.
	Stop <-chan struct{}
}

// Duration is the span of the intended starts.
func (o OpenLoop) Duration() time.Duration {
	return time.Duration(float64(o.Count) / o.Rate * float64(time.Second))
}

// intended is request i's intended start: computed from i, never by adding
// intervals up, so rounding cannot drift the rate.
func (o OpenLoop) intended(t0 time.Time, i int) time.Time {
	return t0.Add(time.Duration(float64(i) * float64(time.Second) / o.Rate))
}

type job struct {
	i        int
	intended time.Time
	req      *http.Request
}

// Run sends request i, as build makes it, at its intended start, and gives
// each outcome to record (from the worker that sent it, so record must be
// safe for concurrent use): Start is the intended start, Lag from it to the
// moment the request was handed to the client, Latency from it to the end
// of the answer. Requests are built by the scheduler before their time, so
// building costs no latency. It returns how many requests it sent; the rest
// (ctx ended, or the run's bound passed) were not sent.
func (o OpenLoop) Run(ctx context.Context, client *http.Client, build func(i int) (*http.Request, error), record func(i int, r Result)) int {
	ctx, cancel := context.WithTimeout(ctx, o.Duration()+o.Grace)
	defer cancel()
	// Unbuffered: a send succeeds only into the hands of an idle worker,
	// which is how the scheduler knows when to start another.
	jobs := make(chan job)
	var wg sync.WaitGroup
	work := func(j job) {
		sent := o.Clock.Now()
		res := sendOnce(client, j.req, o.KeepBody)
		done := o.Clock.Now()
		res.Start, res.Lag, res.Latency = j.intended, sent.Sub(j.intended), done.Sub(j.intended)
		record(j.i, res)
	}
	worker := func(first job) {
		defer wg.Done()
		work(first)
		for j := range jobs {
			work(j)
		}
	}
	workers, sent := 0, 0
	t0 := o.Clock.Now()
schedule:
	for i := range o.Count {
		at := o.intended(t0, i)
		req, err := build(i)
		if err != nil { // counted as sent, and failed with the reason
			record(i, Result{Start: at, Err: fmt.Errorf("build request: %w", err)})
			sent++
			continue
		}
		j := job{i: i, intended: at, req: req.WithContext(ctx)}
		if o.Clock.SleepUntil(ctx, at) != nil {
			break
		}
		select {
		case <-o.Stop:
			break schedule
		default:
		}
		select {
		case jobs <- j:
		default:
			if workers < o.MaxInFlight {
				workers++
				wg.Add(1)
				go worker(j)
				break
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				break schedule
			}
		}
		sent++
	}
	close(jobs)
	wg.Wait()
	return sent
}

// sendOnce sends req once (no retries: a retry would be an arrival the
// schedule did not plan) and reads the answer; the body is kept for a
// failure's reason, and of a success when keep is set.
func sendOnce(client *http.Client, req *http.Request, keep bool) Result {
	resp, err := client.Do(req)
	if err != nil {
		return Result{Err: err}
	}
	defer resp.Body.Close()
	st := resp.StatusCode
	if st < 400 {
		var body []byte
		if keep {
			body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		} else {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		if err != nil {
			return Result{Status: st, Err: fmt.Errorf("read answer: %w", err)}
		}
		return Result{Status: st, Body: body}
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return Result{Status: st, Err: &StatusError{Status: st, Body: string(b)}}
}

// Histogram bounds, in microseconds: 1 µs to an hour, three significant
// digits (a recorded value is within 0.1% of the true one).
const (
	histMin, histMax = 1, int64(time.Hour / time.Microsecond)
	histDigits       = 3
)

// Recorder tallies an open-loop case as its answers arrive: counts and
// errors as the closed loop does, corrected latency and send lag in HDR
// histograms, the late sends, and which requests succeeded (for --verify).
type Recorder struct {
	mu         sync.Mutex
	sum        Summary
	notFoundOK bool
	latency    *hdrhistogram.Histogram
	lag        *hdrhistogram.Histogram
	late       int
	firstSent  time.Time
	lastSent   time.Time
	lastDone   time.Time
	// The slices already ended (EndSlice): their send spans and wall
	// times, summed, without the time between them.
	slices                 int
	slicesSpan, slicesWall time.Duration
	ok                     []bool
	observe                func(Result)
}

// NewRecorder tallies a case of n requests; observe (may be nil) sees each
// result too, for progress.
func NewRecorder(n int, notFoundOK bool, observe func(Result)) *Recorder {
	return &Recorder{
		sum:        Summary{Statuses: map[int]int{}},
		notFoundOK: notFoundOK,
		latency:    hdrhistogram.New(histMin, histMax, histDigits),
		lag:        hdrhistogram.New(histMin, histMax, histDigits),
		ok:         make([]bool, n),
		observe:    observe,
	}
}

func micros(d time.Duration) int64 { return min(max(int64(d/time.Microsecond), histMin), histMax) }

// Record tallies request i's result.
func (c *Recorder) Record(i int, r Result) {
	c.mu.Lock()
	c.sum.count(r, c.notFoundOK)
	_ = c.latency.RecordValue(micros(r.Latency)) // in range by construction
	_ = c.lag.RecordValue(micros(r.Lag))
	if r.Lag > LateAfter {
		c.late++
	}
	sent, done := r.Start.Add(r.Lag), r.Start.Add(r.Latency)
	if c.firstSent.IsZero() || sent.Before(c.firstSent) {
		c.firstSent = sent
	}
	if sent.After(c.lastSent) {
		c.lastSent = sent
	}
	if done.After(c.lastDone) {
		c.lastDone = done
	}
	if r.Err == nil {
		c.ok[i] = true
	}
	c.mu.Unlock()
	if c.observe != nil {
		c.observe(r)
	}
}

// EndSlice ends a slice of the case's schedule: the time until the next
// slice's first send (another server's turn) counts in neither the rate
// achieved nor the wall time.
func (c *Recorder) EndSlice() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstSent.IsZero() {
		return
	}
	c.slices++
	c.slicesSpan += c.lastSent.Sub(c.firstSent)
	c.slicesWall += c.lastDone.Sub(c.firstSent)
	c.firstSent, c.lastSent, c.lastDone = time.Time{}, time.Time{}, time.Time{}
}

// RateSummary is the report of one open-loop case against one server.
type RateSummary struct {
	Summary
	Asked                    float64 // requests per second
	Scheduled, Sent          int
	Late                     int
	Achieved                 float64 // sends per second, first send to last
	P50, P90, P99, P999, Max time.Duration
	LagP99, LagMax           time.Duration
	// Latency is the corrected latency histogram, in microseconds.
	Latency *hdrhistogram.Histogram
	// OK says which requests got a 2xx, by index.
	OK []bool
}

// Summary sums the recorder up after the run (Run has returned).
func (c *Recorder) Summary(name, method string, o OpenLoop, sent int) RateSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := RateSummary{Summary: c.sum, Asked: o.Rate, Scheduled: o.Count, Sent: sent, Late: c.late, Latency: c.latency, OK: c.ok}
	s.Name, s.Method = name, method
	slices, span, wall := c.slices, c.slicesSpan, c.slicesWall
	if !c.firstSent.IsZero() {
		slices, span, wall = slices+1, span+c.lastSent.Sub(c.firstSent), wall+c.lastDone.Sub(c.firstSent)
	}
	if slices > 0 {
		s.Wall = wall
		if s.Wall > 0 {
			s.Throughput = float64(s.Succeeded+s.NotFound) / s.Wall.Seconds()
		}
		if span > 0 && sent > slices { // each slice's first send starts its span
			s.Achieved = float64(sent-slices) / span.Seconds()
		}
	}
	at := func(h *hdrhistogram.Histogram, q float64) time.Duration {
		return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond
	}
	s.P50, s.P90, s.P99, s.P999 = at(c.latency, 50), at(c.latency, 90), at(c.latency, 99), at(c.latency, 99.9)
	s.Max = time.Duration(c.latency.Max()) * time.Microsecond
	s.LagP99, s.LagMax = at(c.lag, 99), time.Duration(c.lag.Max())*time.Microsecond
	return s
}

// NotSent is how many scheduled requests never went out.
func (s RateSummary) NotSent() int { return s.Scheduled - s.Sent }

// Share is the fraction of sent requests answered with status.
func (s RateSummary) Share(status int) float64 { return share(s.Statuses[status], s.Sent) }

// Print writes the case's report block, with the share of the status the
// case expects (201 for the POST, 200 for a GET).
func (s RateSummary) Print(w io.Writer) {
	want := wantStatus(s.Method)
	fmt.Fprintf(w, "== %s ==\n", s.Name)
	fmt.Fprintf(w, "requests:    %d scheduled, %d sent, %d not sent; %d ok, %d failed", s.Scheduled, s.Sent, s.NotSent(), s.Succeeded, s.Failed)
	if s.NotFound > 0 {
		fmt.Fprintf(w, ", %d not found", s.NotFound)
	}
	fmt.Fprintf(w, "; %d: %.2f%%\n", want, 100*s.Share(want))
	fmt.Fprintf(w, "rate:        %.0f/s asked, %.0f/s achieved, %.0f answers/s; %d sent late (>%s after the intended start), send lag p99 %s ms, max %s ms\n",
		s.Asked, s.Achieved, s.Throughput, s.Late, LateAfter, ms(s.LagP99), ms(s.LagMax))
	fmt.Fprintf(w, "latency ms:  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (from the intended start: corrected for coordinated omission)\n",
		ms(s.P50), ms(s.P90), ms(s.P99), ms(s.P999), ms(s.Max))
	s.CPU.Print(w)
	s.printStatuses(w)
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// LateWarn is the share of late sends above which a case's latencies say
// more about the client's backlog than about the server.
const LateWarn = 0.01

// LateShare is the fraction of sent requests that went out late.
func (s RateSummary) LateShare() float64 { return share(s.Late, s.Sent) }

// PrintComparison writes service against baseline per case: p50 and p99
// and their ratios, the share of the expected status, and the share of
// late sends on each side.
func PrintComparison(w io.Writer, rate float64, cases []string, service, baseline []RateSummary) {
	fmt.Fprintf(w, "== service vs baseline (open loop, %.0f/s per case, same run) ==\n", rate)
	fmt.Fprintf(w, "%-34s %8s %8s %7s %8s %8s %7s %8s %8s %7s %9s %14s\n", "case", "p50 svc", "p50 base", "ratio", "p99 svc", "p99 base", "ratio", "CPU svc", "CPU base", "ratio", "ok share", "late svc/base")
	behind := false
	for i, name := range cases {
		s, b := service[i], baseline[i]
		fmt.Fprintf(w, "%-34s %8s %8s %6.2fx %8s %8s %6.2fx %8s %8s %7s %8.2f%% %6.2f%%/%.2f%%\n", name,
			ms(s.P50), ms(b.P50), ratio(s.P50, b.P50), ms(s.P99), ms(b.P99), ratio(s.P99, b.P99),
			cpuCell(s.CPU), cpuCell(b.CPU), cpuRatioCell(s.CPU, b.CPU), 100*s.Share(wantStatus(s.Method)),
			100*s.LateShare(), 100*b.LateShare())
		behind = behind || s.LateShare() > LateWarn || b.LateShare() > LateWarn
	}
	fmt.Fprintf(w, "(ms; CPU: µs per request, the service's total over every measured process, n/a when none could be measured; ok share: answers with the case's status, 201 for the POST, 200 for the GETs; late: sent more than %s after the intended start)\n", LateAfter)
	if behind {
		fmt.Fprintf(w, "WARNING: more than %.0f%% of some case's requests went out late: the client did not hold the rate (a busy machine, or --max-inflight too low), so those latencies include the client's own backlog\n", 100*LateWarn)
	}
}

// cpuCell is a cost's total in µs, or n/a when no source could be
// measured (unreadable, or the case too short).
func cpuCell(c CPUCost) string {
	if !c.Measured() {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", us(c.Total()))
}

// cpuRatioCell is the service's cost over the baseline's, or n/a when
// either was not measured.
func cpuRatioCell(service, baseline CPUCost) string {
	if !service.Measured() || !baseline.Measured() {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", ratio(service.Total(), baseline.Total()))
}
