package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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
	for _, own := range []string{"--listen=:1", "--role", "--log-format=text", "--log-level"} {
		c.Flags = []string{"--store", "memory", own, "x"}
		if err := c.Validate(); err == nil {
			t.Errorf("--service-flags with %s accepted", own)
		}
	}
}

// TestSweepChartDrawsEveryProcessAndPanel renders a sweep's chart with
// rsvg-convert: each process's CPU colour, the p99 colour and the store
// writes colour must cover bars in the PNG.
func TestSweepChartDrawsEveryProcessAndPanel(t *testing.T) {
	var points []SweepPoint
	for i, linger := range []string{"0s", "5ms", "20ms"} {
		points = append(points, SweepPoint{
			Settings: []Setting{{"batch-size", "500"}, {"publish-linger", linger}},
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

// TestSweepTalksToThePortTheServiceReports starts a stand-in for skiapi
// (a script) that checks it was asked to pick its own port and logs
// skiapi's serving line naming a server of the test's: the sweep must
// wait for that server's /readyz and use its address, not one it picked.
func TestSweepTalksToThePortTheServiceReports(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	script := filepath.Join(t.TempDir(), "skiapi")
	body := `#!/bin/sh
case " $* " in *" --listen 127.0.0.1:0 "*) ;; *) echo "not asked to listen on a port of its own choosing: $*"; exit 3;; esac
echo '{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"store had no resorts: loaded the demo fixture"}' >&2
echo '{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"` + servingMessage + `","addr":"` + addr + `","role":"all"}' >&2
exec sleep 60
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	sp, err := startService(context.Background(), script, []string{"--store", "memory"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sp.stop()
	if sp.url != srv.URL {
		t.Errorf("the sweep talks to %s; the service said it serves at %s", sp.url, srv.URL)
	}

	// A service that exits without serving is reported with its output.
	_, err = startService(context.Background(), "/bin/false", nil, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited before it was serving") {
		t.Errorf("a service exiting at once: %v", err)
	}
}
