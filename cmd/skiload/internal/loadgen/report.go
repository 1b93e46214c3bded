package loadgen

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Summary is the report of one load run or one GET test case.
type Summary struct {
	Name                     string
	Method                   string
	Succeeded                int // 2xx
	NotFound                 int // 404 where it is a valid answer (get mode); else counted as failed
	Failed                   int
	Retries                  int
	Wall                     time.Duration
	Throughput               float64 // successful (and valid 404) requests per second of wall time
	Mean, P50, P95, P99, Max time.Duration
	Statuses                 map[int]int // 0 is "network error"
}

// Summarize counts results. notFoundOK says whether a 404 is a valid answer.
func Summarize(name, method string, results []Result, wall time.Duration, notFoundOK bool) Summary {
	s := Summary{Name: name, Method: method, Wall: wall, Statuses: map[int]int{}}
	lat := make([]time.Duration, 0, len(results))
	var sum time.Duration
	for _, r := range results {
		s.Statuses[r.Status]++
		s.Retries += r.Retries
		switch {
		case r.Err == nil:
			s.Succeeded++
		case notFoundOK && r.Status == http.StatusNotFound:
			s.NotFound++
		default:
			s.Failed++
		}
		lat = append(lat, r.Latency)
		sum += r.Latency
	}
	if wall > 0 {
		s.Throughput = float64(s.Succeeded+s.NotFound) / wall.Seconds()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.Mean = sum / time.Duration(len(lat))
		s.P50, s.P95, s.P99 = Percentile(lat, 50), Percentile(lat, 95), Percentile(lat, 99)
		s.Max = lat[len(lat)-1]
	}
	return s
}

// Percentile is the nearest-rank p-th percentile of sorted: the smallest
// value with at least p% of the values at or below it.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted)) + 0.999999999) // ceil, without float noise turning 95.0 into 96
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}

// Print writes the summary as the report's text block.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "== %s ==\n", s.Name)
	fmt.Fprintf(w, "requests:    %d ok, %d failed", s.Succeeded, s.Failed)
	if s.NotFound > 0 {
		fmt.Fprintf(w, ", %d not found (valid: no rides)", s.NotFound)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "wall time:   %s\n", s.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput:  %.0f req/s\n", s.Throughput)
	fmt.Fprintf(w, "latency ms:  mean %s  p50 %s  p95 %s  p99 %s  max %s\n", ms(s.Mean), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max))
	fmt.Fprintf(w, "retries:     %d\n", s.Retries)
	fmt.Fprint(w, "statuses:   ")
	for _, code := range slices.Sorted(maps.Keys(s.Statuses)) {
		label := strconv.Itoa(code)
		if code == 0 {
			label = "network-error"
		}
		fmt.Fprintf(w, " %s×%d", label, s.Statuses[code])
	}
	fmt.Fprintln(w)
}

// WriteCSV writes one line per request: start time, method, latency in ms,
// status (0 for a network error).
func WriteCSV(w io.Writer, method string, results []Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "start,method,latency_ms,status")
	sorted := slices.SortedFunc(slices.Values(results), func(a, b Result) int { return a.Start.Compare(b.Start) })
	for _, r := range sorted {
		fmt.Fprintf(bw, "%s,%s,%.3f,%d\n", r.Start.Format(time.RFC3339Nano), method, float64(r.Latency)/float64(time.Millisecond), r.Status)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// Second is one second of a run, by completion time.
type Second struct {
	Completed int           // successful requests that finished in this second
	P99       time.Duration // of every request that finished in this second
}

// PerSecond buckets results by the second of the run in which they finished.
func PerSecond(results []Result) []Second {
	if len(results) == 0 {
		return nil
	}
	t0 := results[0].Start
	for _, r := range results {
		if r.Start.Before(t0) {
			t0 = r.Start
		}
	}
	var lats [][]time.Duration
	var out []Second
	for _, r := range results {
		i := int(r.Start.Add(r.Latency).Sub(t0) / time.Second)
		for len(out) <= i {
			out = append(out, Second{})
			lats = append(lats, nil)
		}
		if r.Err == nil {
			out[i].Completed++
		}
		lats[i] = append(lats[i], r.Latency)
	}
	for i := range out {
		slices.Sort(lats[i])
		out[i].P99 = Percentile(lats[i], 99)
	}
	return out
}
