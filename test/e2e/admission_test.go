package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/skidata/skidata/adapters/breaker"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
	"github.com/skidata/skidata/test/proxytest"
)

// expectShed checks a deliberate refusal: the status, Retry-After, and a
// JSON message saying what happened.
func expectShed(t *testing.T, r apitest.Response, status int, says string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d (%s); want %d", r.Status, r.Body, status)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("a %d without Retry-After", status)
	}
	var m struct{ Message string }
	if err := json.Unmarshal(r.Body, &m); err != nil || !strings.Contains(m.Message, says) {
		t.Errorf("body %s: want a JSON message saying %q", r.Body, says)
	}
}

func TestPostOverTheIngestRateAnswers429(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Admission = app.AdmissionConfig{Rate: 1.0 / 60, Burst: 2}
	base := apitest.Start(t, cfg)
	for i := range 2 {
		if r := sendRide(t, base, 1, 1, i+1); r.Status != http.StatusCreated {
			t.Fatalf("ride %d within the burst: %d %s", i+1, r.Status, r.Body)
		}
	}
	expectShed(t, sendRide(t, base, 1, 1, 3), http.StatusTooManyRequests, "rides per second")
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if !strings.Contains(metrics, `skidata_rides_rejected_total{reason="rate"} 1`) {
		t.Error("/metrics does not count the refused ride in skidata_rides_rejected_total")
	}
}

// TestOneClientOverItsRateGets429sWhileAnotherGetsIn: behind a load
// balancer (--trust-forwarded-for), each X-Forwarded-For address has its
// own bucket: one client spending its own gets 429s, another still gets
// in, and /metrics counts the refusals as client_rate.
func TestOneClientOverItsRateGets429sWhileAnotherGetsIn(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Admission = app.AdmissionConfig{ClientRate: 1.0 / 60, ClientBurst: 3}
	cfg.TrustForwardedFor = true
	base := apitest.Start(t, cfg)
	post := func(client string, time int) apitest.Response {
		req, err := http.NewRequest(http.MethodPost, base+"/skiers/1/seasons/2024/days/1/skiers/7", strings.NewReader(fmt.Sprintf(`{"time":%d,"liftID":3}`, time)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		return apitest.Send(t, apitest.Req(req, nil))
	}
	for i := range 3 {
		if r := post("198.51.100.1", i+1); r.Status != http.StatusCreated {
			t.Fatalf("ride %d within the client's burst: %d %s", i+1, r.Status, r.Body)
		}
	}
	for i := range 2 {
		expectShed(t, post("198.51.100.1", 10+i), http.StatusTooManyRequests, "this client may send at most")
	}
	if r := post("198.51.100.2", 20); r.Status != http.StatusCreated {
		t.Errorf("another client: %d %s; want 201", r.Status, r.Body)
	}
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if !strings.Contains(metrics, `skidata_rides_rejected_total{reason="client_rate"} 2`) {
		t.Error("/metrics does not count the two refused rides as client_rate")
	}
}

// heldConfig keeps every accepted ride in the persister's unfinished batch,
// so the queue depth only grows while the test posts.
func heldConfig() compose.Config {
	cfg := compose.DefaultConfig()
	cfg.Persister.BatchSize = compose.MaxBatchSize
	cfg.Persister.Linger = time.Hour
	return cfg
}

func TestPostPastTheQueueHardLimitAnswers503(t *testing.T) {
	cfg := heldConfig()
	cfg.Admission.HardLimit = 20
	base := apitest.Start(t, cfg)
	for i := range 20 { // below the ceiling every ride is taken
		if r := sendRide(t, base, 1, 1, i+1); r.Status != http.StatusCreated {
			t.Fatalf("ride %d below the ceiling: %d %s", i+1, r.Status, r.Body)
		}
	}
	// The depth is sampled every 100 ms, so the refusal follows within one
	// sample; later rides may be the ones refused.
	skier := 100
	apitest.Eventually(t, "a POST refused at queue depth 20", func() string {
		skier++
		r := sendRide(t, base, 1, 1, skier)
		if r.Status != http.StatusServiceUnavailable {
			return fmt.Sprintf("status %d", r.Status)
		}
		expectShed(t, r, http.StatusServiceUnavailable, "the ride queue cannot take the ride now; retry after")
		return ""
	})
}

// TestAFullQueueIsBackpressure: refusals of a full in-process queue are
// answered 503 and counted as queue_full, and once the persister has made
// room the next POST is taken. (That a full queue does not open the
// publish circuit breaker is TestBreakerIgnoresAFullQueue's: the memory
// store's in-process queue has no breaker in front of it.)
func TestAFullQueueIsBackpressure(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.QueueCapacity = 5
	cfg.Persister.BatchSize = compose.MaxBatchSize
	cfg.Persister.Linger = 2 * time.Second // the queue stays full for a while, then drains
	base := apitest.Start(t, cfg)
	for i := range 5 {
		if r := sendRide(t, base, 1, 1, i+1); r.Status != http.StatusCreated {
			t.Fatalf("ride %d of the queue's 5: %d %s", i+1, r.Status, r.Body)
		}
	}
	full := 0
	for i := range 3 { // the queue is full: three refusals
		switch r := sendRide(t, base, 1, 1, 10+i); r.Status {
		case http.StatusServiceUnavailable:
			full++
			expectShed(t, r, http.StatusServiceUnavailable, "the ride queue cannot take the ride now; retry after")
		case http.StatusCreated: // the linger ended already and made room
		default:
			t.Fatalf("ride into a full queue: %d %s; want 503", r.Status, r.Body)
		}
	}
	if full == 0 {
		t.Fatal("no ride was refused by the full queue; the linger ended before the test could fill it")
	}
	apitest.Eventually(t, "a ride taken once the persister has made room", func() string {
		switch r := sendRide(t, base, 1, 1, 20); r.Status {
		case http.StatusCreated:
			return ""
		case http.StatusServiceUnavailable:
			full++ // still full: refused like the others
		}
		return "still refused"
	})
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	for _, want := range []string{
		fmt.Sprintf(`skidata_rides_rejected_total{reason="queue_full"} %d`, full),
		`skidata_rides_rejected_total{reason="unavailable"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestBreakerOpensWhenTheQueueKeepsFailing: with the broker cut off,
// publishes fail; after --breaker-failures of them the breaker opens and
// the next POST is refused at once, counted as breaker_open.
func TestBreakerOpensWhenTheQueueKeepsFailing(t *testing.T) {
	cfg := rabbitConfig(t, "breaker")
	proxy := proxytest.Start(t, hostOf(t, cfg.AMQP.URL))
	cfg.AMQP.URL = viaProxy(t, cfg.AMQP.URL, proxy.Addr())
	cfg.AMQP.PublishTimeout = 500 * time.Millisecond
	cfg.Breaker = breaker.Config{Failures: 3, OpenFor: time.Hour}
	base := apitest.Start(t, cfg)
	if r := sendRide(t, base, 1, 1, 1); r.Status != http.StatusCreated {
		t.Fatalf("ride before the outage: %d %s", r.Status, r.Body)
	}
	// Once the ride is stored the persister is consuming: the broker is
	// cut off from a running service, not from one still starting.
	apitest.Eventually(t, "the first ride stored", func() string {
		if r := dayVertical(t, base, 1, 1, 1); r.Status != http.StatusOK {
			return fmt.Sprintf("status %d", r.Status)
		}
		return ""
	})
	proxy.Cut()
	for i := range 3 {
		if r := sendRide(t, base, 1, 1, 10+i); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("ride %d with the broker cut off: %d %s; want 503", i+1, r.Status, r.Body)
		}
	}
	expectShed(t, sendRide(t, base, 1, 1, 20), http.StatusServiceUnavailable, "the ride queue cannot take the ride now; retry after")
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	for _, want := range []string{
		"skidata_publish_breaker_state 2",
		`skidata_rides_rejected_total{reason="breaker_open"} 1`,
		`skidata_rides_rejected_total{reason="unavailable"} 3`,
		"skidata_publish_failures_total 3",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// errRetry is a refusal worth retrying.
var errRetry = errors.New("retryable refusal")

// postWithRetry posts one ride until it is accepted: on 429 or 503 it waits
// what Retry-After says, on anything else it backs off exponentially.
func postWithRetry(ctx context.Context, base string, resort, day, skier int32) error {
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		req, err := newRide(base, resort, "2024", day, skier, 10, 3)
		if err != nil {
			return struct{}{}, backoff.Permanent(err)
		}
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return struct{}{}, err
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusCreated:
			return struct{}{}, nil
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				return struct{}{}, backoff.RetryAfter(s)
			}
			return struct{}{}, errRetry
		default:
			return struct{}{}, backoff.Permanent(fmt.Errorf("POST %s: status %d", req.URL, resp.StatusCode))
		}
	}, backoff.WithMaxElapsedTime(apitest.Deadline))
	return err
}

func TestRetryingClientGetsEveryRideStoredThroughATightLimit(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Admission = app.AdmissionConfig{Rate: 20, Burst: 10}
	base := apitest.Start(t, cfg)
	const workers, perWorker = 4, 10
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if err := postWithRetry(ctx, base, 2, 3, int32(1000+w*perWorker+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitDrained(t, base)
	for s := range workers * perWorker {
		if r := dayVertical(t, base, 2, 3, 1000+s); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "30" {
			t.Errorf("skier %d: %d %s; want 200 and vertical 30", 1000+s, r.Status, r.Body)
		}
	}
	metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
	if strings.Contains(metrics, `skidata_rides_rejected_total{reason="rate"} 0`) {
		t.Error("no POST was refused with 429; the limit is not tight enough to test retrying")
	}
	skiers := resortSkiers(t, base, 2, 2024, 3)
	if !strings.Contains(string(skiers.Body), fmt.Sprintf(`"numSkiers":%d`, workers*perWorker)) {
		t.Errorf("unique skiers: %s; want %d", skiers.Body, workers*perWorker)
	}
}

// waitDrained polls /readyz until the queue depth is 0.
func waitDrained(t *testing.T, base string) {
	t.Helper()
	apitest.Eventually(t, "the queue drained (/readyz queueDepth 0)", func() string {
		var r struct{ QueueDepth int64 }
		if err := json.Unmarshal(readyz(t, base).Body, &r); err != nil {
			return err.Error()
		}
		if r.QueueDepth != 0 {
			return fmt.Sprintf("depth %d", r.QueueDepth)
		}
		return ""
	})
}

// TestAClientThatLeavesWhileItsRideWaitsIsCounted499: a ride waiting for
// its token (--ingest-max-wait) whose client hangs up was counted in
// skidata_http_requests_total as a 500; it is a 499 (client closed
// request), apart from the server's errors.
func TestAClientThatLeavesWhileItsRideWaitsIsCounted499(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Admission = app.AdmissionConfig{Rate: 1.0 / 60, Burst: 1, MaxWait: time.Hour}
	base := apitest.Start(t, cfg)
	if r := sendRide(t, base, 1, 1, 1); r.Status != http.StatusCreated {
		t.Fatalf("the ride within the burst: %d %s", r.Status, r.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := newRide(base, 1, "2024", 1, 2, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req.WithContext(ctx)); err == nil {
		resp.Body.Close()
		t.Fatalf("the ride waiting for its token was answered %d; want it still waiting when its client leaves", resp.StatusCode)
	}
	route := `route="/skiers/{resortID}/seasons/{seasonID}/days/{dayID}/skiers/{skierID}"`
	apitest.Eventually(t, "the ride whose client left", func() string {
		metrics := string(apitest.Call(t, "GET", base+"/metrics", "").Body)
		if n := metricSum(metrics, "skidata_http_requests_total", route, `status="5`); n != 0 {
			t.Fatalf("%v rides counted as a server error (5xx)", n)
		}
		if n := metricSum(metrics, "skidata_http_requests_total", route, `status="499"`); n != 1 {
			return fmt.Sprintf("%v rides counted with status 499", n)
		}
		return ""
	})
}
