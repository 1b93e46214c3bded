package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/httpapi"
	"github.com/skidata/skidata/adapters/redis"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/redistest"
)

// metricSum adds up every sample of a series in a /metrics body whose labels
// contain all of the given label pairs.
func metricSum(body, name string, labels ...string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += f
		}
	}
	return sum
}

func TestMetricsEndpointExposesTheNamedSeries(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Cache = "memory"
	base := apitest.Start(t, cfg)
	sendRide(t, base, 1, 4, 77)
	waitDrained(t, base)
	dayVertical(t, base, 1, 4, 77)
	dayVertical(t, base, 1, 4, 77)
	r := apitest.Call(t, "GET", base+"/metrics", "")
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	body := string(r.Body)
	for _, want := range []string{
		`skidata_http_requests_total{method="POST",route="/skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}",status="201"} 1`,
		`skidata_http_request_duration_seconds_bucket{method="GET",route="/skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}",status="200",le=`,
		"skidata_queue_depth ",
		"skidata_persist_batch_rides_count 1",
		"skidata_publish_message_rides_sum 1",
		"skidata_persist_write_seconds_count 1",
		`skidata_cache_lookups_total{query="skier_day_vertical",result="hit"} 1`,
		`skidata_cache_lookups_total{query="skier_day_vertical",result="miss"} 1`,
		"skidata_publish_breaker_state",
		"skidata_publish_failures_total 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestStatisticsAndMetricsCountTheSameRequests(t *testing.T) {
	base := apitest.Start(t, compose.DefaultConfig())
	for i := range 7 {
		sendRide(t, base, 1, 1, i+1)
	}
	sendRide(t, base, 99, 1, 1) // 404: unknown resort
	for range 3 {
		apitest.Send(t, apitest.Req(httpapi.NewGetResortsRequest(httpapi.ServerURL(base))))
	}
	apitest.Call(t, "GET", base+"/no/such/route", "") // in neither
	// /statistics has no count, so compare through the shared recorder: every
	// route /statistics lists must appear in /metrics with the count it saw.
	stats := apitest.Send(t, apitest.Req(httpapi.NewGetPerformanceStatsRequest(httpapi.ServerURL(base))))
	var s struct {
		EndpointStats []struct{ URL, Operation string }
	}
	if err := json.Unmarshal(stats.Body, &s); err != nil {
		t.Fatal(err)
	}
	body := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	want := map[string]float64{
		"POST /skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}": 8,
		"GET /resorts": 3,
	}
	for _, e := range s.EndpointStats {
		got := metricSum(body, "skidata_http_requests_total", `route="`+e.URL+`"`, `method="`+e.Operation+`"`)
		if w, ok := want[e.Operation+" "+e.URL]; ok && got != w {
			t.Errorf("%s %s: /metrics counts %g; want %g, as /statistics saw", e.Operation, e.URL, got, w)
		}
		if got == 0 {
			t.Errorf("%s %s is in /statistics but not in /metrics", e.Operation, e.URL)
		}
		delete(want, e.Operation+" "+e.URL)
	}
	for k := range want {
		t.Errorf("%s missing from /statistics", k)
	}
	if n := metricSum(body, "skidata_http_requests_total", `route="/no/such/route"`); n != 0 {
		t.Errorf("an unmatched path is counted in /metrics (%g) but not in /statistics", n)
	}
	if metricSum(body, "skidata_http_requests_total", `status="404"`) != 1 {
		t.Error("the 404 POST is not counted under status 404")
	}
}

func TestPprofIsOffByDefault(t *testing.T) {
	run := apitest.Serve(t, compose.DefaultConfig())
	svc, base := run.Service, run.Base
	apitest.Eventually(t, "the API answering", func() string {
		if apitest.Send(t, apitest.Req(httpapi.NewGetHealthzRequest(httpapi.ServerURL(base)))).Status != 200 {
			return "not yet"
		}
		return ""
	})
	if a := svc.PprofAddr(); a != "" {
		t.Errorf("pprof listens on %s without --pprof-listen", a)
	}
	if r := apitest.Call(t, "GET", base+"/debug/pprof/", ""); r.Status != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the API listener: %d; want 404", r.Status)
	}
}

func TestPprofServesOnItsOwnListenerWithTheFlag(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.PprofListen = "127.0.0.1:0"
	run := apitest.Serve(t, cfg)
	svc, base := run.Service, run.Base
	apitest.Eventually(t, "pprof listening", func() string {
		if svc.PprofAddr() == "" {
			return "no address yet"
		}
		return ""
	})
	r := apitest.Call(t, "GET", "http://"+svc.PprofAddr()+"/debug/pprof/goroutine?debug=1", "")
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "goroutine profile") {
		t.Errorf("pprof goroutine profile: %d %.100s", r.Status, r.Body)
	}
	if r := apitest.Call(t, "GET", base+"/debug/pprof/", ""); r.Status != http.StatusNotFound {
		t.Errorf("/debug/pprof/ on the API listener: %d; want 404 (pprof has its own)", r.Status)
	}
}

// cachedGetAfterDrain posts a ride, reads the three cached answers (filling
// the cache), posts more rides, waits for the queue to drain, and expects the
// new answers.
func cachedGetAfterDrain(t *testing.T, cfg compose.Config) {
	base := apitest.Start(t, cfg)
	const skier = 4242
	dayVert := func() string {
		return strings.TrimSpace(string(dayVertical(t, base, 3, 9, skier).Body))
	}
	totals := func() string {
		return string(apitest.Send(t, apitest.Req(httpapi.NewGetSkierResortTotalsRequest(httpapi.ServerURL(base), skier,
			&httpapi.GetSkierResortTotalsParams{Resort: []string{"3"}}))).Body)
	}
	uniques := func() string {
		return string(resortSkiers(t, base, 3, 2024, 9).Body)
	}
	sendRideAt(t, base, 3, 9, skier, 1, 5)
	waitDrained(t, base)
	for range 2 { // the second read is served from the cache
		if v, tot, u := dayVert(), totals(), uniques(); v != "50" || !strings.Contains(tot, `"totalVert":50`) || !strings.Contains(u, `"numSkiers":1`) {
			t.Fatalf("before: day %s, totals %s, uniques %s", v, tot, u)
		}
	}
	sendRideAt(t, base, 3, 9, skier, 2, 7)
	sendRideAt(t, base, 3, 9, skier+1, 2, 7)
	waitDrained(t, base)
	if v := dayVert(); v != "120" {
		t.Errorf("day vertical after the queue drained = %s; want 120 (a stale cached 50?)", v)
	}
	if tot := totals(); !strings.Contains(tot, `"totalVert":120`) {
		t.Errorf("season totals after the queue drained = %s; want 120", tot)
	}
	if u := uniques(); !strings.Contains(u, `"numSkiers":2`) {
		t.Errorf("unique skiers after the queue drained = %s; want 2", u)
	}
	body := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if metricSum(body, "skidata_cache_lookups_total", `result="hit"`) < 3 {
		t.Error("the cache served no hits: the test did not exercise it")
	}
}

func TestCachedGetAfterDrainIsFreshWithMemoryCache(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Cache = "memory"
	cfg.Query.CacheTTL = time.Hour // only invalidation can make the answer fresh
	cachedGetAfterDrain(t, cfg)
}

var redisPrefixSeq int

func TestCachedGetAfterDrainIsFreshWithRedisCache(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Cache = "redis"
	cfg.Redis.URL = redistest.URL(t)
	cfg.Query.CacheTTL = time.Hour
	redisPrefixSeq++
	cfg.Redis.Prefix = fmt.Sprintf("skitest-e2e:%d:%d:", time.Now().UnixNano(), redisPrefixSeq)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cleaner, err := redis.New(ctx, cfg.Redis)
	if err != nil {
		t.Fatalf("Redis at %s is needed for this test (start it with `make services`): %v", cfg.Redis.URL, err)
	}
	t.Cleanup(func() {
		if err := cleaner.DeletePrefix(context.Background()); err != nil {
			t.Errorf("deleting %s*: %v", cfg.Redis.Prefix, err)
		}
		_ = cleaner.Close()
	})
	cachedGetAfterDrain(t, cfg)
}
