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

// TestTheBreakerGuardsEveryQueueThatCanFail: publishes to a queue that
// keeps failing open the breaker (the queue is no longer called) for
// RabbitMQ and for an in-process queue that waits for a durable store;
// an in-process queue in front of the memory store, which can only be
// full or stopping, is called every time, with no breaker in between.
func TestTheBreakerGuardsEveryQueueThatCanFail(t *testing.T) {
	ride := []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)}
	for _, c := range []struct {
		queue, store string
		breaker      bool
	}{
		{"rabbitmq", "postgres", true},
		{"rabbitmq", "memory", true},
		{"inproc", "postgres", true},
		{"inproc", "dynamo-counters", true},
		{"inproc", "memory", false},
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
		if c.breaker && (q.calls != int(cfg.Breaker.Failures) || paused != 3) {
			t.Errorf("%s with %s: the queue was called %d times of %d and %d publishes were paused; want the breaker to open after %d", c.queue, c.store, q.calls, publishes, paused, cfg.Breaker.Failures)
		}
		if !c.breaker && (q.calls != publishes || paused != 0) {
			t.Errorf("%s with %s: the queue was called %d times of %d and %d publishes were paused; want no breaker", c.queue, c.store, q.calls, publishes, paused)
		}
	}
}
