package e2e

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

// TestShutdownDrainsEveryAcceptedRide posts rides while the persister holds
// them in an unfinished batch (long linger, huge batch), then stops the
// service as SIGTERM would: every ride answered 201 must be written before
// Serve returns.
func TestShutdownDrainsEveryAcceptedRide(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Persister.BatchSize = compose.MaxBatchSize
	cfg.Persister.Linger = time.Hour
	run := apitest.Serve(t, cfg)
	svc, base := run.Service, run.Base

	var accepted atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				req, err := newRide(base, 1, "2024", 1, int32(w*1000+i+1), 1, 2)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if svc.Stored() != 0 {
		t.Fatalf("persister wrote %d rides before shutdown; the test needs them held in the batch", svc.Stored())
	}
	if err := run.Stop(cfg.ShutdownTimeout); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if got, want := svc.Stored(), accepted.Load(); got != want || want != 2000 {
		t.Errorf("after shutdown %d rides stored, %d accepted (of 2000 posted); want all accepted rides stored", got, want)
	}
}
