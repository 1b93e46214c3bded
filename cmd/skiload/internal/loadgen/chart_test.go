package loadgen

import (
	"bytes"
	"testing"
	"time"

	"github.com/skidata/skidata/test/charttest"
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
	for _, span := range []time.Duration{2 * time.Second, 150 * time.Millisecond, 5 * time.Millisecond} {
		t.Run(span.String(), func(t *testing.T) {
			var svg bytes.Buffer
			if err := WriteChart(&svg, "short run", ChartSeries(shortRun(400, span, 2*time.Millisecond))); err != nil {
				t.Fatal(err)
			}
			img := charttest.Render(t, &svg)
			for _, c := range []string{ThroughputColor, LatencyColor} {
				cols := charttest.Columns(t, img, c)
				// The panels are 800 px wide; a line across them
				// colours most columns, a point or nothing a handful.
				if cols < 600 {
					t.Errorf("colour %s in %d pixel columns of %d; want a line across the panel", c, cols, img.Bounds().Dx())
				}
			}
		})
	}
}
