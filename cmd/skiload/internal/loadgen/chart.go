package loadgen

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// WriteChart writes an SVG with two panels sharing the time axis:
// successful requests per second on top, p99 latency per second below.
// Hand-written: two polylines and their axes need no plotting library.
func WriteChart(w io.Writer, title string, secs []Second) error {
	const (
		width, panelH = 900, 240
		left, right   = 80, 20
		top, gap      = 40, 70
		height        = top + 2*panelH + gap + 50
	)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", left, escape(title))
	tp := make([]float64, len(secs))
	p99 := make([]float64, len(secs))
	for i, s := range secs {
		tp[i] = float64(s.Completed)
		p99[i] = float64(s.P99) / float64(time.Millisecond)
	}
	panel(bw, tp, left, top, width-left-right, panelH, "successful requests / s", "#1f77b4")
	panel(bw, p99, left, top+panelH+gap, width-left-right, panelH, "p99 latency (ms)", "#d62728")
	fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">seconds since start</text>`+"\n", left+(width-left-right)/2, height-10)
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// panel draws one axis box with y ticks at 0, ½ and the maximum, x ticks
// every few seconds, and the series as a polyline.
func panel(w io.Writer, ys []float64, x0, y0, pw, ph int, label, color string) {
	peak := 0.0
	for _, y := range ys {
		peak = max(peak, y)
	}
	if peak == 0 {
		peak = 1
	}
	n := max(len(ys), 2)
	px := func(i int) float64 { return float64(x0) + float64(i)*float64(pw)/float64(n-1) }
	py := func(v float64) float64 { return float64(y0+ph) - v/peak*float64(ph) }
	fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0-8, escape(label))
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
	for _, f := range []float64{0, 0.5, 1} {
		v := peak * f
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, x0+pw, py(v), py(v))
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", x0-6, py(v)+4, v)
	}
	step := max(1, (n+9)/10)
	for i := 0; i < n; i += step {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px(i), y0+ph+16, i)
	}
	fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
	for i, y := range ys {
		fmt.Fprintf(w, "%.1f,%.1f ", px(i), py(y))
	}
	fmt.Fprintln(w, `"/>`)
}

func escape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			out = append(out, "&lt;"...)
		case '>':
			out = append(out, "&gt;"...)
		case '&':
			out = append(out, "&amp;"...)
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
