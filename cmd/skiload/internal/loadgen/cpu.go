package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/skidata/skidata/cmd/internal/cpuclock"
)

// CPUSource reads the CPU time (user + system) one process, or a group of
// processes, has used so far.
type CPUSource struct {
	Name string
	Read func(ctx context.Context) (time.Duration, error)
}

// MetricsCPU reads process_cpu_seconds_total from the Prometheus endpoint
// at base + "/metrics" (the service's own, or a consumer's).
func MetricsCPU(name string, client *http.Client, base string) CPUSource {
	return CPUSource{Name: name, Read: func(ctx context.Context) (time.Duration, error) {
		v, err := ReadCounter(ctx, client, base, "process_cpu_seconds_total")
		return seconds(v), err
	}}
}

// ReadCounter sums the series of the counter name on base + "/metrics".
func ReadCounter(ctx context.Context, client *http.Client, base, name string) (float64, error) {
	url := strings.TrimRight(base, "/") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return counterSum(resp.Body, name)
}

// counterSum finds the counter name in a Prometheus text exposition and
// sums its series; a histogram counts its observations.
func counterSum(r io.Reader, name string) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("parse metrics: %w", err)
	}
	f, ok := families[name]
	if !ok || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("no %s in the metrics", name)
	}
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return sum, nil
}

// ProcCPU sums, from /proc, the CPU time of every process whose command
// name is comm (beam.smp for RabbitMQ, postgres for PostgreSQL's server
// and its backends). A process that exits between two readings takes its
// time with it, so short-lived backends are undercounted; the long-lived
// ones of a load run are not.
func ProcCPU(comm string) CPUSource {
	return CPUSource{Name: comm, Read: func(context.Context) (time.Duration, error) {
		procs, err := procfs.AllProcs()
		if err != nil {
			return 0, err
		}
		var total float64
		found := false
		for _, p := range procs {
			st, err := p.Stat()
			if err != nil || st.Comm != comm {
				continue // gone since the listing, or another program
			}
			found = true
			total += st.CPUTime()
		}
		if !found {
			return 0, fmt.Errorf("no process named %s", comm)
		}
		return seconds(total), nil
	}}
}

// PidCPU reads the CPU time of the process pid from /proc.
func PidCPU(name string, pid int) CPUSource {
	return CPUSource{Name: name, Read: func(context.Context) (time.Duration, error) {
		p, err := procfs.NewProc(pid)
		if err != nil {
			return 0, err
		}
		st, err := p.Stat()
		if err != nil {
			return 0, err
		}
		return seconds(st.CPUTime()), nil
	}}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// CPUCost is what a case cost each source, per request.
type CPUCost struct {
	Names []string
	Per   []time.Duration // CPU per request of source i; valid when Err[i] is nil
	Err   []error
	// Queue is what the service's processes asked of a queue that bills
	// by request, when they asked anything (nil: nothing, or not read).
	Queue *QueueRequests
}

// QueueRequests is what a case's requests cost in requests to a queue
// that bills by request (SQS), per million of them, summed over every
// skidata process whose /metrics is read, from the queue adapter's own
// counters: the billed units, the requests, and the receives that found
// nothing.
type QueueRequests struct {
	Billed, Requests, EmptyReceives float64
}

// queueCounters are the names of QueueRequests' counters, in its order.
var queueCounters = []string{"skidata_queue_billed_requests_total", "skidata_queue_requests_total", "skidata_queue_empty_receives_total"}

// MetricsQueue reads queueCounters, each summed over the /metrics of every
// base.
func MetricsQueue(client *http.Client, bases []string) func(ctx context.Context) ([]float64, error) {
	return func(ctx context.Context) ([]float64, error) {
		sums := make([]float64, len(queueCounters))
		for _, base := range bases {
			for i, name := range queueCounters {
				v, err := ReadCounter(ctx, client, base, name)
				if err != nil {
					return nil, err
				}
				sums[i] += v
			}
		}
		return sums, nil
	}
}

// queueRequests is the queue requests per million of n requests between
// two readings of MetricsQueue; nil when nothing was asked of a queue.
func queueRequests(before, after []float64, n int) *QueueRequests {
	if n < 1 || after[1] <= before[1] {
		return nil
	}
	per := func(i int) float64 { return (after[i] - before[i]) * 1e6 / float64(n) }
	return &QueueRequests{Billed: per(0), Requests: per(1), EmptyReceives: per(2)}
}

// Total is the sum over the sources that could be read.
func (c CPUCost) Total() time.Duration {
	var t time.Duration
	for i, d := range c.Per {
		if c.Err[i] == nil {
			t += d
		}
	}
	return t
}

// Measured says whether any source could be read.
func (c CPUCost) Measured() bool {
	for _, err := range c.Err {
		if err == nil {
			return true
		}
	}
	return false
}

// MeasureCPU reads every source, runs f, reads them again and divides
// each difference by the number of requests f reports. A difference of
// too few clock ticks gives no figure: its source's error says the run
// was too short to measure (cpuclock.Check).
func MeasureCPU(ctx context.Context, sources []CPUSource, f func() int) CPUCost {
	before := make([]time.Duration, len(sources))
	errs := make([]error, len(sources))
	for i, s := range sources {
		before[i], errs[i] = s.Read(ctx)
	}
	n := f()
	cost := CPUCost{Names: make([]string, len(sources)), Per: make([]time.Duration, len(sources)), Err: errs}
	for i, s := range sources {
		cost.Names[i] = s.Name
		if errs[i] != nil {
			continue
		}
		after, err := s.Read(ctx)
		switch {
		case err != nil:
			cost.Err[i] = err
		case n < 1:
			cost.Err[i] = errors.New("no request answered")
		default:
			if err := cpuclock.Check(after - before[i]); err != nil {
				cost.Err[i] = err
				continue
			}
			cost.Per[i] = (after - before[i]) / time.Duration(n)
		}
	}
	return cost
}

// Print writes one line: µs of CPU per request for each source and in total.
func (c CPUCost) Print(w io.Writer) {
	if len(c.Names) == 0 {
		return
	}
	var parts []string
	for i, name := range c.Names {
		if c.Err[i] != nil {
			parts = append(parts, fmt.Sprintf("%s n/a (%v)", name, c.Err[i]))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", name, us(c.Per[i])))
	}
	if len(c.Names) > 1 && c.Measured() {
		parts = append(parts, fmt.Sprintf("total %.1f", us(c.Total())))
	}
	fmt.Fprintf(w, "CPU per request (µs): %s\n", strings.Join(parts, ", "))
	if q := c.Queue; q != nil {
		fmt.Fprintf(w, "queue requests per million requests: %.0f billed, %.0f sent, %.0f of them empty receives (every process's own count)\n", q.Billed, q.Requests, q.EmptyReceives)
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ParseCPUMetrics reads --cpu-metrics: name=URL pairs, comma-separated.
func ParseCPUMetrics(s string) (map[string]string, []string, error) {
	urls := map[string]string{}
	var order []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, url, ok := strings.Cut(part, "=")
		if !ok || name == "" || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) {
			return nil, nil, fmt.Errorf("--cpu-metrics %q: want name=http://host:port, comma-separated", part)
		}
		if _, dup := urls[name]; dup {
			return nil, nil, fmt.Errorf("--cpu-metrics: %s named twice", name)
		}
		urls[name] = url
		order = append(order, name)
	}
	return urls, order, nil
}
