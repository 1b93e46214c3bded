package rabbitmq_test

import (
	"context"
	"testing"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/queuetest"
)

// openBroker opens a broker on fresh queues and deletes them afterwards.
func openBroker(t *testing.T, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	return amqptest.Open(t, cfg)
}

// publishThenConsume publishes rides as one message and returns the
// broker's deliveries.
func publishThenConsume(t *testing.T, ctx context.Context, b *rabbitmq.Broker, rides ...domain.LiftRide) <-chan ports.Delivery {
	t.Helper()
	if err := b.Publish(ctx, rides); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	return ch
}

func contract(cfg rabbitmq.Config) queuetest.NewQueue {
	return func(t *testing.T, capacity int) queuetest.Queue {
		c := cfg
		c.MaxLength = capacity
		b := openBroker(t, c)
		return queuetest.Queue{Pub: b, Sub: b, Stats: b}
	}
}

func TestQueueContractQuorum(t *testing.T) {
	queuetest.Run(t, contract(rabbitmq.Config{}))
}

func TestQueueContractThreeShards(t *testing.T) {
	queuetest.Run(t, contract(rabbitmq.Config{Shards: 3}))
}

func TestQueueContractClassic(t *testing.T) {
	queuetest.Run(t, contract(rabbitmq.Config{QueueType: rabbitmq.QueueTypeClassic}))
}
