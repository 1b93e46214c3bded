package rabbitmq_test

import (
	"testing"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/queuetest"
)

// openBroker opens a broker on fresh queues and deletes them afterwards.
func openBroker(t *testing.T, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	return amqptest.Open(t, cfg)
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
