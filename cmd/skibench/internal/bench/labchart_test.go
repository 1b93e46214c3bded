package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skidata/skidata/test/charttest"
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
	img := charttest.Render(t, &svg)
	colours := map[string]string{
		"skierTable": TableColors[0], "skierTable/resort-index": TableColors[1], "skierDayMarkerTable": TableColors[2],
		"hot share": HotShareColor, "ceiling by hot key": CeilingHotColor, "ceiling by quota": CeilingQuotaColor, "ceiling by CPU": CeilingCPUColor,
		"on demand": OnDemandColor, "provisioned": ProvisionedColor, "RDS": RDSColor,
	}
	for i, k := range Kinds {
		colours[k] = KindColors[i]
	}
	for what, c := range colours {
		if cols := charttest.Columns(t, img, c); cols < 40 {
			t.Errorf("%s (%s): %d pixel columns; want a bar (a legend square is 11)", what, c, cols)
		}
	}
}
