package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	// Errors are the first distinct reasons of failed requests, per status
	// (0: network error): the server's message for a 4xx/5xx, the address
	// and cause for a network error. A status count alone ("404×40") does
	// not say which season was missing or which port refused.
	Errors map[int][]ErrorSample
	// CPU is what the requests cost the server's processes, per request.
	CPU CPUCost
}

// ErrorSample is one distinct failure reason and how many failed requests gave it.
type ErrorSample struct {
	Reason string
	Count  int
}

// maxErrorSamples is how many distinct reasons are listed per status;
// failures for further reasons are in the status count only.
const maxErrorSamples = 3

// maxReasonLen keeps a long HTML error page from flooding the report.
const maxReasonLen = 200

// reason says why a request failed, without what differs from one request
// to the next (the URL's ids), so that identical causes group together.
func reason(r Result) string {
	var se *StatusError
	var ue *url.Error
	var s string
	switch {
	case errors.As(r.Err, &se):
		s = strings.TrimSpace(se.Body)
		if s == "" {
			s = "(empty body)"
		}
	case errors.As(r.Err, &ue):
		// ue.URL names one ride's path; the scheme and host are what
		// matter, and ue.Err is the cause (for a refused connection
		// "dial tcp 127.0.0.1:8080: connect: connection refused").
		host := ue.URL
		if u, err := url.Parse(ue.URL); err == nil {
			host = u.Scheme + "://" + u.Host
		}
		s = fmt.Sprintf("%s %s: %v", ue.Op, host, ue.Err)
	default:
		s = r.Err.Error()
	}
	if len(s) > maxReasonLen {
		s = s[:maxReasonLen] + "…"
	}
	return s
}

func (s *Summary) addError(status int, why string) {
	if s.Errors == nil {
		s.Errors = map[int][]ErrorSample{}
	}
	samples := s.Errors[status]
	for i := range samples {
		if samples[i].Reason == why {
			samples[i].Count++
			return
		}
	}
	if len(samples) < maxErrorSamples {
		s.Errors[status] = append(samples, ErrorSample{Reason: why, Count: 1})
	}
}

// count adds one result to the counts (not the latencies, which the closed
// loop sorts and the open loop keeps in an HDR histogram).
func (s *Summary) count(r Result, notFoundOK bool) {
	if s.Statuses == nil {
		s.Statuses = map[int]int{}
	}
	s.Statuses[r.Status]++
	s.Retries += r.Retries
	switch {
	case r.Err == nil:
		s.Succeeded++
	case notFoundOK && r.Status == http.StatusNotFound:
		s.NotFound++
	default:
		s.Failed++
		s.addError(r.Status, reason(r))
	}
}

// Summarize counts results. notFoundOK says whether a 404 is a valid answer.
func Summarize(name, method string, results []Result, wall time.Duration, notFoundOK bool) Summary {
	s := Summary{Name: name, Method: method, Wall: wall, Statuses: map[int]int{}}
	lat := make([]time.Duration, 0, len(results))
	var sum time.Duration
	for _, r := range results {
		s.count(r, notFoundOK)
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
		fmt.Fprintf(w, ", %d not found", s.NotFound)
	}
	want := wantStatus(s.Method)
	fmt.Fprintf(w, "; %d: %.2f%%\n", want, 100*share(s.Statuses[want], s.Succeeded+s.NotFound+s.Failed))
	fmt.Fprintf(w, "wall time:   %s\n", s.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput:  %.0f req/s\n", s.Throughput)
	fmt.Fprintf(w, "latency ms:  mean %s  p50 %s  p95 %s  p99 %s  max %s\n", ms(s.Mean), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max))
	fmt.Fprintf(w, "retries:     %d\n", s.Retries)
	s.CPU.Print(w)
	s.printStatuses(w)
}

// wantStatus is the answer every request of a case should get.
func wantStatus(method string) int {
	if method == http.MethodPost {
		return http.StatusCreated
	}
	return http.StatusOK
}

// share is n of all, 0 of nothing.
func share(n, all int) float64 {
	if all == 0 {
		return 0
	}
	return float64(n) / float64(all)
}

// printStatuses writes the status counts and the first distinct errors.
func (s Summary) printStatuses(w io.Writer) {
	fmt.Fprint(w, "statuses:   ")
	for _, code := range slices.Sorted(maps.Keys(s.Statuses)) {
		fmt.Fprintf(w, " %s×%d", statusLabel(code), s.Statuses[code])
	}
	fmt.Fprintln(w)
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "errors:      first %d distinct per status\n", maxErrorSamples)
		for _, code := range slices.Sorted(maps.Keys(s.Errors)) {
			for _, e := range s.Errors[code] {
				fmt.Fprintf(w, "  %s×%d: %s\n", statusLabel(code), e.Count, e.Reason)
			}
		}
	}
}

func statusLabel(code int) string {
	if code == 0 {
		return "network-error"
	}
	return strconv.Itoa(code)
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

// Bucket is one slice of a run's time axis, by completion time.
type Bucket struct {
	Completed int           // successful requests that finished in this bucket
	P99       time.Duration // of every request that finished in this bucket
}

// Series is a run cut into equal buckets of Width, the first starting at
// the earliest request's start.
type Series struct {
	Width   time.Duration
	Buckets []Bucket
}

// Rate is the bucket's successful requests per second.
func (s Series) Rate(i int) float64 {
	return float64(s.Buckets[i].Completed) / s.Width.Seconds()
}

// chartPoints is how many buckets a chart wants at least: per-second
// buckets of a two-second run are two points, which is no line.
const chartPoints = 20

// ChartSeries buckets results for a chart: per second when the run is long
// enough to give chartPoints of them, else per 100 ms, else per 10 ms.
func ChartSeries(results []Result) Series {
	span := runSpan(results)
	for _, w := range []time.Duration{time.Second, 100 * time.Millisecond} {
		if span >= chartPoints*w {
			return Buckets(results, w)
		}
	}
	return Buckets(results, 10*time.Millisecond)
}

// runSpan is from the earliest start to the latest completion.
func runSpan(results []Result) time.Duration {
	if len(results) == 0 {
		return 0
	}
	t0, t1 := results[0].Start, results[0].Start
	for _, r := range results {
		if r.Start.Before(t0) {
			t0 = r.Start
		}
		if end := r.Start.Add(r.Latency); end.After(t1) {
			t1 = end
		}
	}
	return t1.Sub(t0)
}

// Buckets cuts results into buckets of width by the time they finished.
func Buckets(results []Result, width time.Duration) Series {
	s := Series{Width: width}
	if len(results) == 0 {
		return s
	}
	t0 := results[0].Start
	for _, r := range results {
		if r.Start.Before(t0) {
			t0 = r.Start
		}
	}
	var lats [][]time.Duration
	for _, r := range results {
		i := int(r.Start.Add(r.Latency).Sub(t0) / width)
		for len(s.Buckets) <= i {
			s.Buckets = append(s.Buckets, Bucket{})
			lats = append(lats, nil)
		}
		if r.Err == nil {
			s.Buckets[i].Completed++
		}
		lats[i] = append(lats[i], r.Latency)
	}
	for i := range s.Buckets {
		slices.Sort(lats[i])
		s.Buckets[i].P99 = Percentile(lats[i], 99)
	}
	return s
}
