package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// SweepConfig is a batching study: the same open-loop POST load against a
// service started afresh for every combination of the settings varied.
type SweepConfig struct {
	Skiapi string   // the skiapi executable
	Flags  []string // given to every process (store, queue, URLs)
	Vary   []Variation
	// Split runs the API and the consumer as two processes (--role api,
	// --role consumer), as production does; otherwise one (--role all).
	Split bool
	Load  Config // Rate, Duration, MaxInFlight, Seed, Ranges, CPUOf, Timeout, VerifyDeadline
	JSON  string
	Chart string
}

// Variation is one skiapi flag and the values the sweep gives it.
type Variation struct {
	Flag   string
	Values []string
}

// variations is the repeatable --vary flag.
type variations []Variation

func (v *variations) String() string { return "" }

func (v *variations) Set(s string) error {
	name, values, ok := strings.Cut(s, "=")
	name = strings.TrimPrefix(name, "--")
	if !ok || name == "" || values == "" {
		return fmt.Errorf("want flag=value,value,… (e.g. batch-size=100,500)")
	}
	*v = append(*v, Variation{Flag: name, Values: strings.Split(values, ",")})
	return nil
}

// DefaultSweepConfig sweeps nothing until told: 8,000 POSTs/s for 10 s a point.
func DefaultSweepConfig() SweepConfig {
	load := DefaultConfig()
	load.Rate = 8000
	return SweepConfig{Skiapi: "skiapi", Split: true, Load: load}
}

// RegisterFlags binds c's fields to flags on fs.
func (c *SweepConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Skiapi, "skiapi", c.Skiapi, "the skiapi executable the sweep starts for every point")
	fs.Func("service-flags", "flags given to every skiapi process, space-separated (e.g. \"--store postgres --queue rabbitmq\"); the sweep sets --listen (a port each process picks and logs), --role, --log-level and --log-format itself", func(s string) error {
		c.Flags = strings.Fields(s)
		return nil
	})
	fs.Var((*variations)(&c.Vary), "vary", "a skiapi flag and its values, flag=v1,v2,…; repeat for more flags: every combination is a point")
	c.Load.registerOpenLoopFlags(fs, "point")
	fs.BoolVar(&c.Split, "split", c.Split, "run the API and the consumer as two processes (--role api and --role consumer); false: one --role all")
	fs.DurationVar(&c.Load.VerifyDeadline, "drain-deadline", c.Load.VerifyDeadline, "how long a point waits for its queue to drain")
	fs.StringVar(&c.JSON, "json", c.JSON, "write the points as JSON to this file")
	fs.StringVar(&c.Chart, "chart", c.Chart, "write an SVG of CPU per ride, p99 and store writes per ride at every point to this file")
}

// Validate reports the first setting that cannot work.
func (c SweepConfig) Validate() error {
	if len(c.Vary) == 0 {
		return errors.New("--vary: name at least one skiapi flag to vary, e.g. --vary batch-size=100,500")
	}
	for _, f := range c.Flags {
		for _, own := range []string{"--listen", "--role", "--log-level", "--log-format"} {
			if f == own || strings.HasPrefix(f, own+"=") {
				return fmt.Errorf("--service-flags: %s is set by the sweep for each process", own)
			}
		}
	}
	if c.Load.Rate <= 0 || c.Load.RateCount() < 1 {
		return fmt.Errorf("--rate %g for --duration %s sends no request", c.Load.Rate, c.Load.Duration)
	}
	return c.Load.validateClient()
}

// Points are the combinations of c.Vary, the first flag varying slowest.
func (c SweepConfig) Points() [][]Setting {
	points := [][]Setting{nil}
	for _, v := range c.Vary {
		var next [][]Setting
		for _, p := range points {
			for _, value := range v.Values {
				next = append(next, append(append([]Setting(nil), p...), Setting{v.Flag, value}))
			}
		}
		points = next
	}
	return points
}

// Setting is one flag's value at a point.
type Setting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// SweepPoint is what one point measured.
type SweepPoint struct {
	Settings []Setting `json:"settings"`
	Sent     int       `json:"sent"`
	OK       int       `json:"ok"`
	// RidesPerSecond is the answers with 201 per second of the load.
	RidesPerSecond float64 `json:"ridesPerSecond"`
	P50Ms          float64 `json:"p50Ms"`
	P99Ms          float64 `json:"p99Ms"`
	// CPU is µs of CPU per ride, per process (api, consumer, the --cpu-of
	// programs) and "total" (of those measured); CPUNotMeasured says, per
	// process, why it has no figure (unreadable, or the point too short).
	CPU            map[string]float64 `json:"cpuMicrosPerRide"`
	CPUNotMeasured map[string]string  `json:"cpuNotMeasured,omitempty"`
	// MessagesPerRide is the messages the API published per ride (each a
	// broker confirm); StoreWritesPerRide the persister's store writes
	// (batches) per ride; WriteUnitsPerRide the store's capacity units per
	// ride (DynamoDB), 0 where the store reports none.
	MessagesPerRide    float64 `json:"messagesPerRide"`
	StoreWritesPerRide float64 `json:"storeWritesPerRide"`
	WriteUnitsPerRide  float64 `json:"writeUnitsPerRide"`
	Err                string  `json:"error,omitempty"`
}

// Label is the point's settings, "batch-size=100 batch-linger=5ms".
func (p SweepPoint) Label() string {
	var parts []string
	for _, s := range p.Settings {
		parts = append(parts, s.Flag+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

// RunSweep measures every point, prints a table and writes the JSON and
// the chart; it returns the exit code.
func RunSweep(ctx context.Context, c SweepConfig, stdout io.Writer, p *Progress) int {
	if err := c.Validate(); err != nil {
		fmt.Fprintln(stdout, "skiload sweep:", err)
		return ExitUsage
	}
	code := ExitOK
	var points []SweepPoint
	for i, settings := range c.Points() {
		load := c.Load
		load.Seed = c.Load.Seed + uint64(i) // fresh rides at every point
		pt := runPoint(ctx, c, load, settings, p)
		if pt.Err != "" || pt.OK < pt.Sent || pt.Sent < load.RateCount() {
			code = ExitFailed
		}
		points = append(points, pt)
		if interrupted(ctx, stdout) {
			return ExitFailed
		}
	}
	PrintSweep(stdout, c, points)
	if c.JSON != "" {
		b, _ := json.MarshalIndent(points, "", "  ")
		if err := os.WriteFile(c.JSON, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stdout, "skiload sweep:", err)
			code = ExitFailed
		}
	}
	if c.Chart != "" {
		var buf bytes.Buffer
		title := fmt.Sprintf("skiload sweep: %.0f POSTs/s for %s a point", c.Load.Rate, c.Load.Duration)
		if err := WriteSweepChart(&buf, title, points); err == nil {
			err = os.WriteFile(c.Chart, buf.Bytes(), 0o644)
			if err != nil {
				fmt.Fprintln(stdout, "skiload sweep:", err)
				code = ExitFailed
			}
		}
	}
	return code
}

// runPoint starts the service with the point's settings, runs the load,
// reads what it cost and stops the service.
func runPoint(ctx context.Context, c SweepConfig, load Config, settings []Setting, p *Progress) SweepPoint {
	pt := SweepPoint{Settings: settings, CPU: map[string]float64{}}
	var extra []string
	for _, s := range settings {
		extra = append(extra, "--"+s.Flag+"="+s.Value)
	}
	roles := []string{"all"}
	if c.Split {
		roles = []string{"api", "consumer"}
	}
	var procs []*serviceProcess
	defer func() {
		for _, sp := range procs {
			sp.stop()
		}
	}()
	for _, role := range roles {
		sp, err := startService(ctx, c.Skiapi, append(append(append([]string(nil), c.Flags...), extra...), "--role", role), c.Load.VerifyDeadline)
		if err != nil {
			pt.Err = fmt.Sprintf("%s: %v", role, err)
			return pt
		}
		procs = append(procs, sp)
	}
	api, persister := procs[0], procs[len(procs)-1]
	load.URL = api.url
	if c.Split {
		load.CPUMetrics = "consumer=" + persister.url
	}
	svc := service(load)
	svc.CPU[0].Name = roles[0]
	client := cpuClient(load)
	messages0, _ := ReadCounter(ctx, client, api.url, "skidata_publish_message_rides")
	batches0, _ := ReadCounter(ctx, client, persister.url, "skidata_persist_batches_total")
	units0, unitsErr := ReadCounter(ctx, client, persister.url, "skidata_store_capacity_units_total")

	n := load.RateCount()
	known := Known(load.Seed, load.Ranges, n)
	loop := OpenLoop{Rate: load.Rate, Count: n, MaxInFlight: load.MaxInFlight, Grace: load.Timeout, Clock: RealClock{}}
	httpClient := load.loadClient(load.MaxInFlight)
	defer httpClient.CloseIdleConnections()
	post := openCases(Config{Mode: "post"}, known)[0]
	rec := NewRecorder(n, false, p.Observe)
	stop := p.Start(ctx, pt.Label(), n)
	cost := measure(ctx, load, svc, http.MethodPost, func() int {
		pt.Sent = loop.Run(ctx, httpClient, post.build(api.url), rec.Record)
		return pt.Sent
	})
	stop()
	s := rec.Summary(pt.Label(), http.MethodPost, loop, pt.Sent)
	pt.OK = s.Succeeded
	pt.RidesPerSecond = s.Throughput
	pt.P50Ms, pt.P99Ms = float64(s.P50)/1e6, float64(s.P99)/1e6
	for i, name := range cost.Names {
		if cost.Err[i] != nil {
			if pt.CPUNotMeasured == nil {
				pt.CPUNotMeasured = map[string]string{}
			}
			pt.CPUNotMeasured[name] = cost.Err[i].Error()
			continue
		}
		pt.CPU[name] = us(cost.Per[i])
	}
	if cost.Measured() {
		pt.CPU["total"] = us(cost.Total())
	}
	if messages1, err := ReadCounter(ctx, client, api.url, "skidata_publish_message_rides"); err == nil && pt.OK > 0 {
		pt.MessagesPerRide = (messages1 - messages0) / float64(pt.OK)
	}
	if batches1, err := ReadCounter(ctx, client, persister.url, "skidata_persist_batches_total"); err == nil && pt.OK > 0 {
		pt.StoreWritesPerRide = (batches1 - batches0) / float64(pt.OK)
	}
	if units1, err := ReadCounter(ctx, client, persister.url, "skidata_store_capacity_units_total"); err == nil && unitsErr == nil && pt.OK > 0 {
		pt.WriteUnitsPerRide = (units1 - units0) / float64(pt.OK)
	}
	return pt
}

// serviceProcess is one skiapi process the sweep started. Its output is
// read only once it has exited (exited closes after cmd.Wait and after
// the output is copied), so the buffer needs no lock.
type serviceProcess struct {
	cmd    *exec.Cmd
	url    string
	output bytes.Buffer
	exited chan struct{}
}

// outputTail is the end of what the exited process wrote.
func (sp *serviceProcess) outputTail() string {
	s := strings.TrimSpace(sp.output.String())
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// servingMessage is the line skiapi logs once it listens, with the
// address in its "addr" attribute.
const servingMessage = "skidata serving"

// startService starts skiapi with args, listening on a loopback port of
// its own choosing, learns the port from the line it logs once serving,
// and waits until its /readyz answers 200. (A port picked here and handed
// over would be free only for a moment: another process could take it
// first and, answering /readyz, be measured in the service's place.)
func startService(ctx context.Context, skiapi string, args []string, deadline time.Duration) (*serviceProcess, error) {
	cmd := exec.Command(skiapi, append(args, "--listen", "127.0.0.1:0", "--log-level", "info", "--log-format", "json")...)
	sp := &serviceProcess{cmd: cmd, exited: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	addrs := make(chan string, 1)
	go func() {
		lines := bufio.NewReader(r)
		for {
			line, err := lines.ReadBytes('\n')
			sp.output.Write(line)
			if addr, ok := servingAddr(line); ok {
				select {
				case addrs <- addr:
				default: // sent already
				}
			}
			if err != nil {
				break
			}
		}
		r.Close()
		_ = cmd.Wait()
		close(sp.exited)
	}()
	give := time.After(deadline)
	fail := func(why string) (*serviceProcess, error) {
		sp.stop()
		return nil, fmt.Errorf("skiapi %s %s: %s", strings.Join(args, " "), why, sp.outputTail())
	}
	select {
	case addr := <-addrs:
		sp.url = "http://" + addr
	case <-sp.exited:
		return nil, fmt.Errorf("skiapi %s exited before it was serving: %s", strings.Join(args, " "), sp.outputTail())
	case <-give:
		return fail(fmt.Sprintf("logged no %q line within %s", servingMessage, deadline))
	case <-ctx.Done():
		sp.stop()
		return nil, ctx.Err()
	}
	client := &http.Client{Timeout: time.Second}
	for {
		if resp, err := client.Get(sp.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return sp, nil
			}
		}
		select {
		case <-sp.exited:
			return nil, fmt.Errorf("skiapi %s exited before it was ready: %s", strings.Join(args, " "), sp.outputTail())
		case <-give:
			return fail(fmt.Sprintf("not ready within %s", deadline))
		case <-ctx.Done():
			sp.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// servingAddr is the address in line if it is skiapi's JSON log line
// saying it serves.
func servingAddr(line []byte) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal(line, &l) != nil || l.Msg != servingMessage || l.Addr == "" {
		return "", false
	}
	return l.Addr, true
}

// stop sends SIGTERM (the service drains its queue) and kills the process
// if it has not exited within 30 s.
func (sp *serviceProcess) stop() {
	_ = sp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-sp.exited:
	case <-time.After(30 * time.Second):
		_ = sp.cmd.Process.Kill()
		<-sp.exited
	}
}

// PrintSweep writes one line per point.
func PrintSweep(w io.Writer, c SweepConfig, points []SweepPoint) {
	names := cpuNames(points)
	fmt.Fprintf(w, "== sweep: open loop %.0f POSTs/s for %s a point, %s ==\n", c.Load.Rate, c.Load.Duration, map[bool]string{true: "API and consumer as two processes", false: "one process"}[c.Split])
	fmt.Fprintf(w, "%-44s %9s %8s %8s", "point", "rides/s", "p50 ms", "p99 ms")
	for _, n := range names {
		fmt.Fprintf(w, " %9s", n)
	}
	fmt.Fprintf(w, " %10s %12s %11s\n", "msgs/ride", "writes/ride", "units/ride")
	for _, p := range points {
		if p.Err != "" {
			fmt.Fprintf(w, "%-44s failed: %s\n", p.Label(), p.Err)
			continue
		}
		fmt.Fprintf(w, "%-44s %9.0f %8.2f %8.2f", p.Label(), p.RidesPerSecond, p.P50Ms, p.P99Ms)
		for _, n := range names {
			if cpu, ok := p.CPU[n]; ok {
				fmt.Fprintf(w, " %9.1f", cpu)
			} else {
				fmt.Fprintf(w, " %9s", "n/a")
			}
		}
		fmt.Fprintf(w, " %10.4f %12.4f %11.3f\n", p.MessagesPerRide, p.StoreWritesPerRide, p.WriteUnitsPerRide)
	}
	fmt.Fprintln(w, "(CPU: µs per ride in each process, read before the load and after the queue drained; msgs: messages published (broker confirms) per ride; writes: store writes (persister batches) per ride; units: store capacity units per ride, DynamoDB only)")
	for _, p := range points {
		for _, n := range slices.Sorted(maps.Keys(p.CPUNotMeasured)) {
			fmt.Fprintf(w, "n/a: %s at %s: %s\n", n, p.Label(), p.CPUNotMeasured[n])
		}
	}
}

// cpuNames are the processes measured, or not, at any point, "total"
// last.
func cpuNames(points []SweepPoint) []string {
	var names []string
	seen := map[string]bool{"total": true}
	has := func(p SweepPoint, n string) bool {
		_, measured := p.CPU[n]
		_, not := p.CPUNotMeasured[n]
		return measured || not
	}
	for _, p := range points {
		for _, s := range []string{"api", "all", "consumer"} {
			if has(p, s) && !seen[s] {
				seen[s] = true
				names = append(names, s)
			}
		}
	}
	for _, p := range points {
		for _, n := range slices.Concat(slices.Collect(maps.Keys(p.CPU)), slices.Collect(maps.Keys(p.CPUNotMeasured))) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return append(names, "total")
}
