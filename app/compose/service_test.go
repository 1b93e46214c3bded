package compose

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// stuckStore takes no rides: AddRides waits until its context ends.
type stuckStore struct{ ports.RideStore }

func (stuckStore) AddRides(ctx context.Context, _ []domain.LiftRide) error {
	<-ctx.Done()
	return ctx.Err()
}

type droppedMetrics struct {
	ports.NopMetrics
	dropped atomic.Int64
}

func (m *droppedMetrics) RidesDropped(reason string, n int) {
	if reason == "shutdown" {
		m.dropped.Add(int64(n))
	}
}

// TestRidesLeftAtTheDrainDeadlineAreCountedAsDropped: when the store takes
// nothing and the drain budget runs out, the rides still queued are lost
// with this process, and /metrics must say how many.
func TestRidesLeftAtTheDrainDeadlineAreCountedAsDropped(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ShutdownTimeout = 200 * time.Millisecond
	cfg.Persister = app.PersisterConfig{BatchSize: 100, Linger: time.Millisecond, RetryFor: time.Hour}
	q := inproc.New(100)
	m := &droppedMetrics{}
	log := slog.New(slog.DiscardHandler)
	mem := memory.NewRideStore()
	p := app.NewPersister(q, stuckStore{mem}, cfg.Persister, nil, m, log)
	svc := &Service{cfg: cfg, log: log, handler: http.NotFoundHandler(), persister: p, sub: q, stats: q, metrics: m}
	for i := range 7 {
		if err := q.Publish(context.Background(), []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, domain.SkierID(i+1), 1, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // SIGTERM at once: the persister has the rides, the store takes none
	if err := svc.Serve(ctx, ln); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if got := m.dropped.Load(); got != 7 {
		t.Errorf("dropped = %d; want the 7 rides left in the queue", got)
	}
}

// TestEveryRequestGetsADeadline: whatever the store, queue and cache,
// every request carries --http-handler-timeout.
func TestEveryRequestGetsADeadline(t *testing.T) {
	for _, c := range []struct{ store, queue, cache string }{
		{"memory", "inproc", "none"},
		{"memory", "inproc", "memory"},
		{"memory", "inproc", "redis"},
		{"postgres", "inproc", "none"},
		{"memory", "rabbitmq", "none"},
		{"dynamo-sharded", "rabbitmq", "none"},
	} {
		cfg := DefaultConfig()
		cfg.Store, cfg.Queue, cfg.Cache = c.store, c.queue, c.cache
		var left time.Duration
		s := &Service{cfg: cfg, handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if d, ok := r.Context().Deadline(); ok {
				left = time.Until(d)
			}
		})}
		s.servedHandler().ServeHTTP(nil, &http.Request{})
		if left <= 0 || left > cfg.HTTP.HandlerTimeout {
			t.Errorf("store %s, queue %s, cache %s: the request's deadline is %v away; want at most --http-handler-timeout (%v)", c.store, c.queue, c.cache, left, cfg.HTTP.HandlerTimeout)
		}
	}
}
