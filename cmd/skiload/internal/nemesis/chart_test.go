package nemesis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/skidata/skidata/test/charttest"
)

// chartHistory is 30 s of POSTs, 50 a second: 201s, but 503s while a
// partition lasts (10 s to 15 s), and no answer at all while the API is
// killed (20 s to 21 s).
func chartHistory() History {
	h := History{Faults: []Fault{
		{Kind: Partition, Target: "api→rabbit1", Start: 10 * time.Second, End: 15 * time.Second},
		{Kind: Kill, Target: "api", Start: 20 * time.Second, End: 21 * time.Second},
	}}
	for i := range 1500 {
		at := time.Duration(i) * 20 * time.Millisecond
		o := Op{Kind: OpPost, N: i, Ride: testLoad.ride(i), Start: at, Sent: at, End: at + 3*time.Millisecond, Status: 201}
		switch {
		case at >= 10*time.Second && at < 15*time.Second:
			o.Status, o.End = 503, at+time.Second
		case at >= 20*time.Second && at < 21*time.Second:
			o.Status, o.Err = 0, "connection refused"
		}
		h.Ops = append(h.Ops, o)
	}
	return h
}

// TestChartDrawsTheRatesTheLatencyAndTheFaultWindows renders the chart
// with rsvg-convert and checks on the pixels that the 201 and p99 lines
// run across the panels, that the 503s and errors show, and that each
// fault's window is shaded about as wide as it lasted.
func TestChartDrawsTheRatesTheLatencyAndTheFaultWindows(t *testing.T) {
	var svg bytes.Buffer
	if err := WriteChart(&svg, "test run", chartHistory()); err != nil {
		t.Fatal(err)
	}
	img := charttest.Render(t, &svg)
	const plot = 900 // the panels' width in pixels, 30 s across
	for _, c := range []struct {
		what      string
		color     string
		lo, hi    int
		tolerance int
	}{
		{"the 201 line", CreatedColor, plot * 3 / 4, plot + 100, 24},
		{"the p99 line", P99Color, plot * 3 / 4, plot + 100, 24},
		{"the 503s", UnavailableColor, 5, plot + 100, 24},
		{"the errors", ErrorColor, 5, plot + 100, 24},
		// 5 s and 1 s of 30 s, give or take the legend's swatch; a
		// flat fill matches closely, unlike a line's blended edge.
		{"the partition's window", FaultColors[Partition], plot*5/30 - 10, plot*5/30 + 30, 3},
		{"the kill's window", FaultColors[Kill], plot/30 - 5, plot/30 + 30, 3},
	} {
		if n := charttest.ColumnsWithin(t, img, c.color, c.tolerance); n < c.lo || n > c.hi {
			t.Errorf("%s (%s) in %d pixel columns; want %d to %d", c.what, c.color, n, c.lo, c.hi)
		}
	}
}

// TestHistoryIsOneJSONObjectALine: every request, fault and exit is a
// line of its own, with its kind and times in seconds, a request's with
// its latency.
func TestHistoryIsOneJSONObjectALine(t *testing.T) {
	h := chartHistory()
	h.Ops = append(h.Ops, Op{Kind: OpDay, Ride: testLoad.ride(0), Start: time.Second, Sent: time.Second, End: 1500 * time.Millisecond, Status: 200, Value: 340})
	h.Exits = []Exit{{Process: "api", At: 20 * time.Second, Incarnation: 1, Status: "signal: killed", Planned: true}}
	var b bytes.Buffer
	if err := WriteHistory(&b, h); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		var line struct {
			Op              string
			T, End, Latency float64
			Value           *int64
			Ride            *struct{ SkierID int32 }
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		kinds[line.Op]++
		switch line.Op {
		case OpDay:
			if line.Value == nil || *line.Value != 340 || line.T != 1 || line.End != 1.5 || line.Latency != 0.5 {
				t.Errorf("the day read's line %s; want t 1, end 1.5, latency 0.5 and the value read", sc.Text())
			}
		case OpPost:
			if line.Ride == nil || line.Ride.SkierID == 0 {
				t.Errorf("a POST's line without its ride: %s", sc.Text())
			}
		case "fault":
			if line.End-line.T < 1 {
				t.Errorf("fault line %s; want its window in seconds", sc.Text())
			}
		}
	}
	if kinds[OpPost] != 1500 || kinds[OpDay] != 1 || kinds["fault"] != 2 || kinds["exit"] != 1 {
		t.Errorf("lines by op %v; want 1500 posts, 1 day, 2 faults, 1 exit", kinds)
	}
}
