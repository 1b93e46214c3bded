package compose

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/test/poll"
)

// The service's own CPU per request, memory mode, without the network:
// `go test -run x -bench Handler -benchmem ./app/compose/` (allocations
// are steady on a busy machine; the time is not). The request and
// recorder each benchmark makes are part of the figure.
func benchService(b *testing.B) (*Service, http.Handler) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.LogLevel = "error"
	// POSTs in-process outrun the one persister on two cores: the queue
	// holds them all (the default would answer 503 once 100,000 wait),
	// and the POST benchmark waits for the store before it stops.
	cfg.QueueCapacity = math.MaxInt32
	ctx, cancel := context.WithCancel(context.Background())
	svc, cleanup, err := Build(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		cleanup()
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }() // runs the persister too
	b.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			b.Errorf("serve: %v", err)
		}
		cleanup()
	})
	return svc, svc.servedHandler()
}

// BenchmarkHandlerPostRide times POSTs until their rides are stored.
func BenchmarkHandlerPostRide(b *testing.B) {
	svc, h := benchService(b)
	var skier atomic.Int64
	stored := svc.Stored()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			url := fmt.Sprintf("/skiers/1/seasons/2024/days/1/skiers/%d", skier.Add(1)%100_000+1)
			r := httptest.NewRequest(http.MethodPost, url, strings.NewReader(`{"time":217,"liftID":21}`))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("POST %s = %d %s", url, w.Code, w.Body)
			}
		}
	})
	poll.Until(b, time.Minute, "every ride POSTed reaching the store", func() string {
		if n := svc.Stored() - stored; n < int64(b.N) {
			return fmt.Sprintf("%d of %d stored", n, b.N)
		}
		return ""
	})
}

func BenchmarkHandlerGetSeasonTotals(b *testing.B) {
	_, h := benchService(b)
	post := httptest.NewRequest(http.MethodPost, "/skiers/1/seasons/2024/days/1/skiers/7", strings.NewReader(`{"time":217,"liftID":21}`))
	post.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	if h.ServeHTTP(w, post); w.Code != http.StatusCreated {
		b.Fatalf("POST the skier's ride = %d %s", w.Code, w.Body)
	}
	poll.Until(b, 10*time.Second, "the skier's ride reaching the store", func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/skiers/7/vertical?resort=1&season=2024", nil))
		if w.Code != http.StatusOK {
			return fmt.Sprintf("GET answering %d", w.Code)
		}
		return ""
	})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, "/skiers/7/vertical?resort=1&season=2024", nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("GET = %d %s", w.Code, w.Body)
			}
		}
	})
}
