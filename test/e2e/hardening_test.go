package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/apitest"
)

// The cases of issue 14 ("Hardening the edge") that need the whole handler
// stack in memory mode.

func TestRideOutsideTheBoundsIsRefusedAndTotalsStayIntact(t *testing.T) {
	base := apitest.Start(t, compose.DefaultConfig())
	url := rideAt(base, 1, 3, 4242)
	for _, body := range []string{`{"time":217,"liftID":2147483647}`, `{"time":2147483647,"liftID":2}`, `{"time":1440,"liftID":2}`, `{"time":217,"liftID":1001}`} {
		r := apitest.Call(t, "POST", url, body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "must be between") {
			t.Errorf("POST %s = %d %s; want 400 naming the bound", body, r.Status, r.Body)
		}
	}
	if r := apitest.Call(t, "POST", url, `{"time":1439,"liftID":1000}`); r.Status != http.StatusCreated {
		t.Fatalf("a ride at the bounds: %d %s; want 201", r.Status, r.Body)
	}
	waitDrained(t, base)
	if r := apitest.Call(t, "GET", url, ""); strings.TrimSpace(string(r.Body)) != "10000" {
		t.Errorf("day vertical = %d %s; want 10000 (the refused rides left no trace)", r.Status, r.Body)
	}
}

// largeTotalsHandler serves the API over a memory store holding enough
// legal rides of one skier-day that the vertical passes what int32 holds.
func largeTotalsHandler(t *testing.T) (http.Handler, int64) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	store := memory.NewRideStore()
	var want int64
	var batch []domain.LiftRide
	for tm := int32(domain.MinTime); tm <= domain.MaxTime && want <= 1<<31; tm++ {
		for lift := int32(domain.MaxLiftID); lift > domain.MaxLiftID-200; lift-- {
			r := domain.MustLiftRide(1, "2024", 5, 77, tm, lift)
			batch = append(batch, r)
			want += int64(r.Vertical())
		}
	}
	if err := store.AddRides(ctx, batch); err != nil {
		t.Fatal(err)
	}
	catalog, err := app.NewCatalog(ctx, memory.NewResortStore(), app.CatalogConfig{SeedDemo: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	q := app.NewQuery(catalog, store, nil, app.QueryConfig{}, ports.NopMetrics{}, log)
	q10 := inproc.New(10)
	in, stop := app.NewIngest(ctx, catalog, q10, q10, app.AdmissionConfig{}, app.PublishConfig{}, ports.NopMetrics{}, log)
	t.Cleanup(stop)
	h := &httpapi.Handlers{Ingest: in, Queries: q, Resorts: catalog, Stats: app.NewEndpointStats(ports.NopMetrics{})}
	return httpapi.NewHandler(h, log), want
}

func TestLargeLegalTotalsDoNotWrap(t *testing.T) {
	h, want := largeTotalsHandler(t)
	if want <= 1<<31-1 {
		t.Fatalf("fixture total %d fits in int32; the test needs more", want)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, c := range []struct{ path, want string }{
		{"/skiers/1/seasons/2024/days/5/skiers/77", fmt.Sprint(want)},
		{"/skiers/77/vertical?resort=1", fmt.Sprintf(`{"resorts":[{"seasonID":"2024","totalVert":%d}]}`, want)},
		{"/skiers/seasons/2024/days/5/skiers/77", fmt.Sprintf(`"totalVert":%d}`, want)},
	} {
		r := apitest.Call(t, "GET", srv.URL+c.path, "")
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), c.want) {
			body := string(r.Body)
			if len(body) > 300 {
				body = body[:150] + "..." + body[len(body)-150:]
			}
			t.Errorf("GET %s = %d %s; want 200 with %s", c.path, r.Status, body, c.want)
		}
	}
}

func TestUnknownResortRideIsCountedAsRejected(t *testing.T) {
	base := apitest.Start(t, compose.DefaultConfig())
	if r := apitest.Call(t, "POST", rideAt(base, 999, 1, 5), `{"time":10,"liftID":3}`); r.Status != http.StatusNotFound {
		t.Fatalf("ride at an unknown resort: %d %s; want 404", r.Status, r.Body)
	}
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if !strings.Contains(metrics, `skidata_rides_rejected_total{reason="not_found"} 1`) {
		t.Errorf("/metrics does not count the ride refused for its unknown resort")
	}
}

// rideAt is the writeNewLiftRide URL of a skier's ride in season 2024.
func rideAt(base string, resort, day, skier int) string {
	return fmt.Sprintf("%s/skiers/%d/seasons/2024/days/%d/skiers/%d", base, resort, day, skier)
}

// TestEdgeRefusesWithClearMessages: the bounds, the strict bodies and the
// limits of getSkierResortTotals, each a 4xx whose JSON message says what
// to fix.
func TestEdgeRefusesWithClearMessages(t *testing.T) {
	base := apitest.Start(t, compose.DefaultConfig())
	ride := rideAt(base, 1, 1, 31337)
	var over strings.Builder
	for i := range 21 {
		fmt.Fprintf(&over, "&resort=%d", i+1)
	}
	cases := []struct {
		name, method, url, body string
		status                  int
		want                    string
	}{
		{"time past the day", "POST", ride, `{"time":1440,"liftID":5}`, 400, "time must be between 0 and 1439"},
		{"lift past the bound", "POST", ride, `{"time":217,"liftID":2147483647}`, 400, "liftID must be between 1 and 1000"},
		{"two rides in one body", "POST", ride, `{"time":1,"liftID":2}{"time":5,"liftID":9}`, 400, "exactly one JSON object"},
		{"names in another case", "POST", ride, `{"TIME":3,"LIFTID":4}`, 400, `field "TIME" is not in the spec`},
		{"unknown field", "POST", ride, `{"time":3,"liftID":4,"speed":9}`, 400, `field "speed" is not in the spec`},
		{"season field in another case", "POST", base + "/resorts/1/seasons", `{"Year":"2027"}`, 400, `field "Year" is not in the spec`},
		{"two seasons in one body", "POST", base + "/resorts/1/seasons", `{"year":"2027"} {"year":"2028"}`, 400, "exactly one JSON object"},
		{"unknown resort in totals", "GET", base + "/skiers/31337/vertical?resort=1&resort=99999", "", 404, "resort 99999 does not exist"},
		{"21 distinct resorts", "GET", base + "/skiers/31337/vertical?" + over.String()[1:], "", 400, "at most 20 distinct resort values"},
		{"one season repeated 500 times", "GET", base + "/skiers/31337/vertical?resort=1" + strings.Repeat("&season=2024", 500), "", 404, "no rides"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := apitest.Call(t, c.method, c.url, c.body)
			var m struct{ Message string }
			if r.Status != c.status || json.Unmarshal(r.Body, &m) != nil || !strings.Contains(m.Message, c.want) || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s = %d %s; want %d with a JSON message saying %q", c.name, r.Status, r.Body, c.status, c.want)
			}
		})
	}
	// None of the refused rides reached the store.
	if r := apitest.Call(t, "GET", base+"/skiers/seasons/2024/skiers/31337", ""); r.Status != http.StatusNotFound {
		t.Errorf("after only refused rides: %d %s; want 404", r.Status, r.Body)
	}
}
