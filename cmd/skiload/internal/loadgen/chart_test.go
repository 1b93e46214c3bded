package loadgen

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shortRun is n successful requests spread evenly over span, each taking lat.
func shortRun(n int, span, lat time.Duration) []Result {
	t0 := time.Unix(1_700_000_000, 0)
	res := make([]Result, n)
	for i := range res {
		res[i] = Result{Start: t0.Add(time.Duration(i) * span / time.Duration(n)), Latency: lat, Status: 201}
	}
	return res
}

func TestChartSeriesSamplesShortRunsFiner(t *testing.T) {
	for _, tc := range []struct {
		span time.Duration
		want time.Duration
	}{
		{time.Minute, time.Second},
		{5 * time.Second, 100 * time.Millisecond},
		{300 * time.Millisecond, 10 * time.Millisecond},
	} {
		s := ChartSeries(shortRun(1000, tc.span, time.Millisecond))
		if s.Width != tc.want || len(s.Buckets) < 2 {
			t.Errorf("a %s run: %d buckets of %s; want several of %s", tc.span, len(s.Buckets), s.Width, tc.want)
		}
	}
	if s := Buckets(shortRun(10, time.Second, 0), 100*time.Millisecond); s.Rate(0) != 10 {
		t.Errorf("one request per 100 ms bucket = %v req/s; want 10", s.Rate(0))
	}
}

// TestChartOfAShortRunDrawsLines renders the SVG of short runs (including
// one that fits in a single bucket) with rsvg-convert and checks, on the
// decoded PNG, that each panel's colour covers a line across most of the
// panel's width, not a point or nothing.
func TestChartOfAShortRunDrawsLines(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Fatal("rsvg-convert is needed to render the chart: apt-get install librsvg2-bin")
	}
	for _, span := range []time.Duration{2 * time.Second, 150 * time.Millisecond, 5 * time.Millisecond} {
		t.Run(span.String(), func(t *testing.T) {
			var svg bytes.Buffer
			if err := WriteChart(&svg, "short run", ChartSeries(shortRun(400, span, 2*time.Millisecond))); err != nil {
				t.Fatal(err)
			}
			img := renderPNG(t, rsvg, &svg)
			for _, c := range []string{ThroughputColor, LatencyColor} {
				cols := columnsWithColour(img, hexColour(t, c))
				// The panels are 800 px wide; a line across them
				// colours most columns, a point or nothing a handful.
				if cols < 600 {
					t.Errorf("colour %s in %d pixel columns of %d; want a line across the panel", c, cols, img.Bounds().Dx())
				}
			}
		})
	}
}

// renderPNG renders svg with rsvg-convert and decodes the PNG.
func renderPNG(t *testing.T, rsvg string, svg io.Reader) image.Image {
	t.Helper()
	cmd := exec.Command(rsvg, "--format", "png")
	cmd.Stdin = svg
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rsvg-convert: %v: %s", err, stderr.String())
	}
	img, err := png.Decode(&out)
	if err != nil {
		t.Fatalf("decode rsvg-convert's PNG: %v", err)
	}
	return img
}

func hexColour(t *testing.T, h string) color.RGBA {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(h, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// columnsWithColour counts the x columns holding a pixel close to c
// (anti-aliasing blends a line's edges, not its middle).
func columnsWithColour(img image.Image, c color.RGBA) int {
	b := img.Bounds()
	n := 0
	for x := b.Min.X; x < b.Max.X; x++ {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c.R) && near(g>>8, c.G) && near(bl>>8, c.B) {
				n++
				break
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { d := int(a) - int(b); return d > -24 && d < 24 }
