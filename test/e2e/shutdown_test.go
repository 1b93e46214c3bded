package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/app/compose"
)

// TestShutdownDrainsEveryAcceptedRide posts rides while the persister holds
// them in an unfinished batch (long linger, huge batch), then stops the
// service as SIGTERM would: every ride answered 201 must be written before
// Serve returns.
func TestShutdownDrainsEveryAcceptedRide(t *testing.T) {
	cfg := compose.DefaultConfig()
	cfg.Persister.BatchSize = 1_000_000
	cfg.Persister.Linger = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, cleanup, err := compose.Build(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	var accepted atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				url := fmt.Sprintf("%s/skiers/1/seasons/2024/days/1/skiers/%d", base, w*1000+i+1)
				resp, err := http.Post(url, "application/json", strings.NewReader(`{"time":1,"liftID":2}`))
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
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(cfg.ShutdownTimeout):
		t.Fatal("service did not stop")
	}
	if got, want := svc.Stored(), accepted.Load(); got != want || want != 2000 {
		t.Errorf("after shutdown %d rides stored, %d accepted (of 2000 posted); want all accepted rides stored", got, want)
	}
}
