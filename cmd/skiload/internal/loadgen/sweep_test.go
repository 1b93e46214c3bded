package loadgen

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/skidata/skidata/test/charttest"
)

func TestSweepPointsAreEveryCombinationFirstFlagSlowest(t *testing.T) {
	var v variations
	for _, s := range []string{"batch-size=100,500", "--batch-linger=5ms,20ms,50ms"} {
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	points := SweepConfig{Vary: v}.Points()
	if len(points) != 6 {
		t.Fatalf("%d points; want 2 × 3", len(points))
	}
	want := [][]Setting{{{"batch-size", "100"}, {"batch-linger", "5ms"}}, {{"batch-size", "100"}, {"batch-linger", "20ms"}}}
	if !reflect.DeepEqual(points[:2], want) || points[5][0].Value != "500" || points[5][1].Value != "50ms" {
		t.Errorf("points %v", points)
	}
	for _, bad := range []string{"batch-size", "=1,2", "batch-size="} {
		if err := v.Set(bad); err == nil {
			t.Errorf("--vary %q accepted", bad)
		}
	}
}

func TestSweepRefusesFlagsItSetsItself(t *testing.T) {
	c := DefaultSweepConfig()
	c.Vary = []Variation{{"batch-size", []string{"1"}}}
	c.Flags = []string{"--store", "memory", "--listen=:1"}
	if err := c.Validate(); err == nil {
		t.Error("--service-flags with --listen accepted")
	}
}

// TestSweepChartDrawsEveryProcessAndPanel renders a sweep's chart with
// rsvg-convert: each process's CPU colour, the p99 colour and the store
// writes colour must cover bars in the PNG.
func TestSweepChartDrawsEveryProcessAndPanel(t *testing.T) {
	var points []SweepPoint
	for i, linger := range []string{"0s", "5ms", "20ms"} {
		points = append(points, SweepPoint{
			Settings: []Setting{{"batch-size", "500"}, {"amqp-publish-linger", linger}},
			P99Ms:    10 + float64(i), StoreWritesPerRide: 0.01 * float64(i+1),
			CPU: map[string]float64{"api": 60, "consumer": 7, "beam.smp": 70 - 20*float64(i), "total": 137 - 20*float64(i)},
		})
	}
	var svg bytes.Buffer
	if err := WriteSweepChart(&svg, "sweep", points); err != nil {
		t.Fatal(err)
	}
	img := charttest.Render(t, &svg)
	colours := map[string]string{"api": SweepColors[0], "consumer": SweepColors[1], "beam.smp": SweepColors[2], "p99": SweepP99Color, "writes": SweepWritesColor}
	for what, c := range colours {
		// Three bars 42 px wide each, and a 12 px legend square for the processes.
		if cols := charttest.Columns(t, img, c); cols < 3*40 {
			t.Errorf("%s (%s) in %d pixel columns; want three bars", what, c, cols)
		}
	}
}
