package compose

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// downQueue refuses every publish as unavailable, as a broker that is down
// does.
type downQueue struct {
	Queue // the rest: not reached
	calls int
}

func (q *downQueue) Publish(context.Context, []domain.LiftRide) error {
	q.calls++
	return domain.Unavailable("the queue is down")
}

// TestTheBreakerGuardsEveryQueue: publishes to a queue that keeps failing
// open the breaker (the queue is no longer called), whatever the queue and
// the store behind it.
func TestTheBreakerGuardsEveryQueue(t *testing.T) {
	ride := []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)}
	for _, c := range []struct{ queue, store string }{
		{"rabbitmq", "postgres"},
		{"rabbitmq", "memory"},
		{"sqs", "postgres"},
		{"inproc", "postgres"},
		{"inproc", "dynamo-counters"},
		{"inproc", "memory"},
	} {
		cfg := DefaultConfig()
		cfg.Queue, cfg.Store = c.queue, c.store
		q := &downQueue{}
		pub := publisherOf(q, cfg, ports.NopMetrics{}, slog.New(slog.DiscardHandler))
		publishes := int(cfg.Breaker.Failures) + 3
		paused := 0
		for range publishes {
			if err := pub.Publish(context.Background(), ride); errors.Is(err, ports.ErrPublishPaused) {
				paused++
			}
		}
		if q.calls != int(cfg.Breaker.Failures) || paused != 3 {
			t.Errorf("%s with %s: the queue was called %d times of %d and %d publishes were paused; want the breaker to open after %d", c.queue, c.store, q.calls, publishes, paused, cfg.Breaker.Failures)
		}
	}
}
