package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/apitest"
)

func TestMemoryInprocEndToEnd(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	apitest.Run(t, apitest.Start(t, cfg))
}

// TestMemoryModeWritesRidesInBatchesOfBatchSize: in front of the memory
// store the persister gathers the rides the in-process queue delivers one
// by one: rides POSTed one by one are written as one batch once
// --batch-size of them have come, however long --batch-linger is.
func TestMemoryModeWritesRidesInBatchesOfBatchSize(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Persister.BatchSize, cfg.Persister.Linger = 3, time.Hour
	base := apitest.Start(t, cfg)
	for skier := 1; skier <= 3; skier++ {
		if r := sendRide(t, base, 1, 1, skier); r.Status != http.StatusCreated {
			t.Fatalf("POST of skier %d's ride: %d %s", skier, r.Status, r.Body)
		}
	}
	waitDrained(t, base)
	batches, rides := metricValue(t, base, "skidata_persist_batch_rides_count"), metricValue(t, base, "skidata_persist_batch_rides_sum")
	if batches != "1" || rides != "3" {
		t.Fatalf("the persister wrote %s batches holding %s rides; want 1 batch of 3", batches, rides)
	}
}
