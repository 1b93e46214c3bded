package loadgen

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"time"
)

// WriteChart writes an SVG with two panels sharing the time axis:
// successful requests per second on top, p99 latency below, one value per
// bucket of the series. Each bucket is drawn as a horizontal step across its
// width, so even a run that fits in one bucket shows a line. Hand-written:
// two polylines and their axes need no plotting library.
func WriteChart(w io.Writer, title string, s Series) error {
	const (
		width, panelH = 900, 240
		left, right   = 80, 20
		top, gap      = 40, 70
		height        = top + 2*panelH + gap + 50
	)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	tp := make([]float64, len(s.Buckets))
	p99 := make([]float64, len(s.Buckets))
	for i, b := range s.Buckets {
		tp[i] = s.Rate(i)
		p99[i] = float64(b.P99) / float64(time.Millisecond)
	}
	panel(bw, tp, s.Width, left, top, width-left-right, panelH, "successful requests / s", ThroughputColor)
	panel(bw, p99, s.Width, left, top+panelH+gap, width-left-right, panelH, "p99 latency (ms)", LatencyColor)
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">seconds since start</text>`+"\n", left+(width-left-right)/2, height-10)
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// The colours of the two lines (the chart test looks for them).
const (
	ThroughputColor = "#1f77b4"
	LatencyColor    = "#d62728"
)

// panel draws one axis box with y ticks at 0, ½ and the maximum, about ten
// x ticks in seconds, and the series as a step polyline, bucket i spanning
// [i, i+1) of the x axis.
func panel(w io.Writer, ys []float64, width time.Duration, x0, y0, pw, ph int, label, color string) {
	peak := 0.0
	for _, y := range ys {
		peak = max(peak, y)
	}
	if peak == 0 {
		peak = 1
	}
	n := max(len(ys), 1)
	px := func(i int) float64 { return float64(x0) + float64(i)*float64(pw)/float64(n) }
	py := func(v float64) float64 { return float64(y0+ph) - v/peak*float64(ph) }
	AxisBox(w, x0, y0, pw, ph, label, peak, decimals(peak))
	step := max(1, (n+9)/10)
	for i := 0; i <= n; i += step {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(i), y0+ph+16,
			strconv.FormatFloat((time.Duration(i)*width).Seconds(), 'f', -1, 64))
	}
	fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
	for i, y := range ys {
		fmt.Fprintf(w, "%.1f,%.1f %.1f,%.1f ", px(i), py(y), px(i+1), py(y))
	}
	fmt.Fprintln(w, `"/>`)
}

// AxisBox draws a panel's label, frame and y ticks at 0, ½ and peak.
func AxisBox(w io.Writer, x0, y0, pw, ph int, label string, peak float64, decimals int) {
	py := func(v float64) float64 { return float64(y0+ph) - v/peak*float64(ph) }
	fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0-8, html.EscapeString(label))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
	for _, f := range []float64{0, 0.5, 1} {
		v := peak * f
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, x0+pw, py(v), py(v))
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, py(v)+4, strconv.FormatFloat(v, 'f', decimals, 64))
	}
}

// decimals is how many a y tick needs: none above 10, one below (the
// middle tick of a peak of 1 is 0.5, not "0").
func decimals(peak float64) int {
	if peak >= 10 {
		return 0
	}
	return 1
}
