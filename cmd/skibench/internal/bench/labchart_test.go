package bench

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// labReports are two workloads' reports with a hot-key-bound model, a
// quota-bound one and PostgreSQL.
func labReports() []Report {
	sharded := Result{Store: "dynamo-sharded", Dynamo: true, Rides: 1000, WriteCUPerRide: 1.99, HotUnitsPerRide: 0.0008, HotShare: 0.0004, HotKey: "skierDayMarkerTable 9#2024#008#15",
		WriteUnitsBy:    map[string]float64{"skierTable": 1, "skierDayMarkerTable": 0.99},
		ReadUnitsByKind: map[string]float64{KindUniqueSkiers: 8, KindDayVertical: 0.5, KindSeasonVertical: 1, KindSkierDays: 1, KindDayRides: 0.5}}
	pg := Result{Store: "postgres", Rides: 1000, ServerCPUPerRideUS: 27, ServerCPUPerQueryUS: 150}
	var out []Report
	for _, wl := range []string{WorkloadSparse, WorkloadDense} {
		ds := DefaultDataSet()
		ds.Workload = wl
		out = append(out, Report{DataSet: ds, Shape: Shape{Rides: 1000, Resorts: 10, Days: 10, SkierDays: 990, RidesPerSkier: 1.01, SkiersPerResort: 9.9},
			Results: []Result{{Store: "memory", Rides: 1000}, adoptedLike, sharded, pg}})
	}
	return out
}

// TestLabChartDrawsEveryPanel renders the lab chart with rsvg-convert and
// checks, on the decoded PNG, that the bars of every panel are drawn: each
// colour of the write-unit stacks, the five query kinds, the hot-key
// share, the ceiling of each kind of limit, and the three costs cover far
// more pixel columns than their 11-pixel legend squares.
func TestLabChartDrawsEveryPanel(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Fatal("rsvg-convert is needed to render the chart: apt-get install librsvg2-bin")
	}
	var svg bytes.Buffer
	WriteLabSVG(&svg, labReports(), handTraffic)
	for _, want := range []string{"dynamo-adopted · sparse", "dynamo-sharded · dense", "postgres · dense", "1.0 rides a skier-day", "latencies are not shown", "db.t4g.medium"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(svg.String(), "memory ·") {
		t.Error("chart draws the memory store")
	}
	cmd := exec.Command(rsvg, "--format", "png")
	cmd.Stdin = &svg
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("rsvg-convert: %v: %s", err, stderr.String())
	}
	img, err := png.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[string]string{
		"skierTable": TableColors[0], "skierTable/resort-index": TableColors[1], "skierDayMarkerTable": TableColors[2],
		"hot share": HotShareColor, "ceiling by hot key": CeilingHotColor, "ceiling by quota": CeilingQuotaColor, "ceiling by CPU": CeilingCPUColor,
		"on demand": OnDemandColor, "provisioned": ProvisionedColor, "RDS": RDSColor,
	}
	for i, k := range Kinds {
		colours[k] = KindColors[i]
	}
	for what, c := range colours {
		if cols := columnsWithColour(img, hexColour(t, c)); cols < 40 {
			t.Errorf("%s (%s): %d pixel columns; want a bar (a legend square is 11)", what, c, cols)
		}
	}
}

func hexColour(t *testing.T, h string) color.RGBA {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(h, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// columnsWithColour counts the x columns holding a pixel close to c.
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

func near(a uint32, b uint8) bool { d := int(a) - int(b); return d > -16 && d < 16 }
