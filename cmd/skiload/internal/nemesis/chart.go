package nemesis

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// The colours of the chart's lines (the chart test looks for them).
const (
	CreatedColor     = "#2ca02c" // 201s a second
	UnavailableColor = "#ff7f0e" // 503s a second
	ErrorColor       = "#d62728" // other answers and no answer, a second
	P99Color         = "#1f77b4" // p99 of the POSTs answered in the second
)

// FaultColors shade each kind's windows, light enough for the lines to
// show over them.
var FaultColors = map[string]string{
	Kill: "#f6cfcf", Term: "#fbe0c4", Pause: "#fbf1b0",
	Partition: "#ddd3f1", Cut: "#c9def2", Latency: "#d3ecd1",
	DBRestart: "#e6d3c1", BrokerRestart: "#d8d8d8",
	Throttle: "#f3d1ea", Duplicate: "#cdeeee",
}

// chartSecond is what the POSTs answered in one second of the run did.
type chartSecond struct {
	created, unavailable, errors int
	latencies                    []time.Duration
}

// WriteChart writes the run's chart as SVG: two panels sharing the time
// axis, by the second each POST was answered in: 201s, 503s and errors
// (any other answer, or none) a second on top, the p99 latency below;
// every fault's window shaded behind both, coloured by kind, with a
// legend. Hand-written, as skiload's charts are.
func WriteChart(w io.Writer, title string, h History) error {
	const (
		width, left, right = 1000, 80, 20
		top, panelH, gap   = 56, 240, 60
	)
	var span time.Duration
	for _, o := range h.Ops {
		span = max(span, o.End)
	}
	for _, f := range h.Faults {
		span = max(span, f.End)
	}
	n := max(1, int((span+time.Second-1)/time.Second))
	secs := make([]chartSecond, n)
	for _, o := range h.Ops {
		if o.Kind != OpPost {
			continue
		}
		s := &secs[min(n-1, int(o.End/time.Second))]
		switch {
		case o.Status == 201:
			s.created++
		case o.Status == 503:
			s.unavailable++
		default:
			s.errors++
		}
		if o.Answered() {
			s.latencies = append(s.latencies, o.End-o.Start)
		}
	}
	created, unavailable, errs, p99 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, s := range secs {
		created[i], unavailable[i], errs[i] = float64(s.created), float64(s.unavailable), float64(s.errors)
		if len(s.latencies) > 0 {
			slices.Sort(s.latencies)
			p99[i] = float64(loadgen.Percentile(s.latencies, 99)) / float64(time.Millisecond)
		}
	}
	pw := width - left - right
	legendY := top + 2*panelH + gap + 40
	height := legendY + 50
	px := func(t float64) float64 { return float64(left) + t/float64(n)*float64(pw) }
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// The longest windows first, so that a short fault inside a long one
	// shows.
	windows := slices.SortedStableFunc(slices.Values(h.Faults), func(a, b Fault) int { return cmp.Compare(b.End-b.Start, a.End-a.Start) })
	for _, y0 := range []int{top, top + panelH + gap} {
		for _, f := range windows {
			x0, x1 := px(f.Start.Seconds()), px(f.End.Seconds())
			fmt.Fprintf(bw, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y0, max(x1-x0, 1), panelH, faultColor(f.Kind))
		}
	}
	peak := max(slices.Max(created), slices.Max(unavailable), slices.Max(errs), 1)
	loadgen.AxisBox(bw, left, top, pw, panelH, "POSTs answered a second: 201, 503, errors (other answers or none)", peak, 0)
	for _, s := range []struct {
		ys    []float64
		color string
	}{{errs, ErrorColor}, {unavailable, UnavailableColor}, {created, CreatedColor}} {
		steps(bw, s.ys, px, top, panelH, peak, s.color)
	}
	y2 := top + panelH + gap
	peak = max(slices.Max(p99), 1)
	loadgen.AxisBox(bw, left, y2, pw, panelH, "p99 latency of the POSTs answered in the second (ms)", peak, 0)
	steps(bw, p99, px, y2, panelH, peak, P99Color)
	step := max(1, (n+9)/10)
	for i := 0; i <= n; i += step {
		for _, y0 := range []int{top, y2} {
			fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(float64(i)), y0+panelH+16, i)
		}
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">seconds since the run's processes started</text>`+"\n", left+pw/2, y2+panelH+34)
	x := left
	for _, l := range []struct{ label, color string }{{"201", CreatedColor}, {"503", UnavailableColor}, {"errors", ErrorColor}, {"p99", P99Color}} {
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n", x, x+18, legendY-4, legendY-4, l.color, x+22, legendY, l.label)
		x += 80
	}
	x = left
	for _, k := range faultKindsIn(h.Faults) {
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="14" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", x, legendY+10, faultColor(k), x+18, legendY+20, html.EscapeString(k))
		x += 30 + 8*len(k)
	}
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// steps draws ys as a step line, value i across [i, i+1).
func steps(w io.Writer, ys []float64, px func(float64) float64, y0, ph int, peak float64, color string) {
	py := func(v float64) float64 { return float64(y0+ph) - v/peak*float64(ph) }
	fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
	for i, y := range ys {
		fmt.Fprintf(w, "%s,%s %s,%s ", f1(px(float64(i))), f1(py(y)), f1(px(float64(i+1))), f1(py(y)))
	}
	fmt.Fprintln(w, `"/>`)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func faultColor(kind string) string {
	if c, ok := FaultColors[kind]; ok {
		return c
	}
	return "#eeeeee"
}

// faultKindsIn is the kinds of faults, in the order they first came.
func faultKindsIn(faults []Fault) []string {
	var kinds []string
	for _, f := range faults {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	return kinds
}
