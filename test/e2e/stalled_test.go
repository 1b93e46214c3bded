package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

// TestStalledClientDoesNotCostAcceptedRides is issue 14's case: one client
// stalled mid-body used to hold the HTTP shutdown for the whole
// --shutdown-timeout, after which the persister was stopped with accepted
// rides still queued. HTTP now stops within its own budget (closing the
// straggler), and the queue drains within another: every ride answered 201
// is stored when Serve returns.
func TestStalledClientDoesNotCostAcceptedRides(t *testing.T) {
	cfg := heldInBatch(compose.DefaultConfig())
	cfg.ShutdownTimeout = 2 * time.Second
	cfg.HTTP.ShutdownTimeout = 300 * time.Millisecond
	cfg.HTTP.ReadTimeout = time.Minute // the stall must outlive the HTTP budget
	run := apitest.Serve(t, cfg)
	svc, base := run.Service, run.Base

	var accepted int64
	for i := range 200 {
		resp, err := http.Post(fmt.Sprintf("%s/skiers/1/seasons/2024/days/2/skiers/%d", base, i+1), "application/json", strings.NewReader(`{"time":1,"liftID":2}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			accepted++
		}
	}
	// The straggler: headers and half a body, then nothing. Whether or not
	// its handler has started when the shutdown begins, HTTP shutdown
	// waits for it (an active or a fresh connection is not idle).
	stalled, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := fmt.Fprintf(stalled, "POST /skiers/1/seasons/2024/days/2/skiers/999 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{\"time\":1,"); err != nil {
		t.Fatal(err)
	}
	if svc.Stored() != 0 {
		t.Fatalf("persister wrote %d rides before shutdown; the test needs them held in the batch", svc.Stored())
	}
	if err := run.Stop(time.Minute); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if got := svc.Stored(); got != accepted || accepted != 200 {
		t.Errorf("after shutdown %d rides stored, %d answered 201 (of 200); want every accepted ride stored", got, accepted)
	}
}

// heldInBatch makes the persister hold every ride in one unfinished batch
// (long linger, huge batch) until the shutdown's drain.
func heldInBatch(cfg compose.Config) compose.Config {
	cfg.Persister.BatchSize = compose.MaxBatchSize
	cfg.Persister.Linger = time.Hour
	return cfg
}
