package loadgen

import (
	"bufio"
	"fmt"
	"html"
	"io"
)

// SweepColors are the colours of the CPU bars, by process in cpuNames
// order (the chart test looks for them), then of the p99 and the
// store-writes bars.
var SweepColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}

// Colours of the p99 and store-writes panels' bars.
const (
	SweepP99Color    = "#d62728"
	SweepWritesColor = "#17becf"
)

// WriteSweepChart writes an SVG with three panels of bars, one bar per
// point: CPU µs per ride stacked by process, p99 latency of the POST, and
// store writes per ride. Each point is labelled with its settings, one
// per line. Hand-written, as the run chart is.
func WriteSweepChart(w io.Writer, title string, points []SweepPoint) error {
	names := cpuNames(points)
	names = names[:len(names)-1] // "total" is the stack's height
	const (
		right       = 160
		top, panelH = 50, 170
		gap         = 60
	)
	left := 80 // room for the y ticks, and for the flag names under the bars
	for _, set := range firstSettings(points) {
		left = max(left, 7*len(set.Flag)+16)
	}
	slot := 70
	width := left + right + slot*max(len(points), 1)
	labelLines := 0
	if len(points) > 0 {
		labelLines = len(points[0].Settings)
	}
	height := top + 3*panelH + 2*gap + 20 + 14*labelLines + 20
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))

	stacks := make([][]float64, len(points))
	p99 := make([][]float64, len(points))
	writes := make([][]float64, len(points))
	for i, p := range points {
		for _, n := range names {
			stacks[i] = append(stacks[i], p.CPU[n])
		}
		p99[i] = []float64{p.P99Ms}
		writes[i] = []float64{p.StoreWritesPerRide}
	}
	bars(bw, stacks, SweepColors, left, top, slot, panelH, "CPU µs per ride, by process")
	bars(bw, p99, []string{SweepP99Color}, left, top+panelH+gap, slot, panelH, "POST p99 latency (ms)")
	y3 := top + 2*(panelH+gap)
	bars(bw, writes, []string{SweepWritesColor}, left, y3, slot, panelH, "store writes per ride")
	for i, p := range points {
		x := left + i*slot + slot/2
		for j, s := range p.Settings {
			fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", x, y3+panelH+16+14*j, html.EscapeString(s.Value))
		}
	}
	for j, s := range firstSettings(points) {
		fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y3+panelH+16+14*j, html.EscapeString(s.Flag))
	}
	for k, n := range names {
		lx := width - right + 16
		ly := top + 14 + 18*k
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", lx, ly-10, SweepColors[k%len(SweepColors)])
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", lx+18, ly, html.EscapeString(n))
	}
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write sweep chart: %w", err)
	}
	return nil
}

func firstSettings(points []SweepPoint) []Setting {
	if len(points) == 0 {
		return nil
	}
	return points[0].Settings
}

// bars draws one panel: per point a bar stacking its values bottom up,
// with y ticks at 0, ½ and the tallest stack.
func bars(w io.Writer, stacks [][]float64, colors []string, x0, y0, slot, ph int, label string) {
	peak := 0.0
	for _, s := range stacks {
		sum := 0.0
		for _, v := range s {
			sum += v
		}
		peak = max(peak, sum)
	}
	if peak == 0 {
		peak = 1
	}
	pw := slot * max(len(stacks), 1)
	py := func(v float64) float64 { return float64(y0+ph) - v/peak*float64(ph) }
	AxisBox(w, x0, y0, pw, ph, label, peak, sweepDecimals(peak))
	for i, s := range stacks {
		base := 0.0
		x := x0 + i*slot + slot/5
		for k, v := range s {
			if v <= 0 {
				continue
			}
			fmt.Fprintf(w, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", x, py(base+v), slot*3/5, py(base)-py(base+v), colors[k%len(colors)])
			base += v
		}
	}
}

// sweepDecimals is how many a tick needs: store writes per ride are
// hundredths.
func sweepDecimals(peak float64) int {
	switch {
	case peak >= 10:
		return 0
	case peak >= 1:
		return 1
	default:
		return 3
	}
}
