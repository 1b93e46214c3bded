package rabbitmq_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/test/queuetest"
)

// testURL is the broker the tests run against; make test starts RabbitMQ on
// this machine, SKIDATA_TEST_AMQP_URL points elsewhere.
func testURL() string {
	if u := os.Getenv("SKIDATA_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

var seq atomic.Int64

// uniquePrefix isolates one test's queues from every other test and run.
func uniquePrefix(t *testing.T) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("skitest.%s.%d.%d", name, time.Now().UnixNano(), seq.Add(1))
}

// openBroker opens a broker on fresh queues and deletes them afterwards. An
// unreachable broker fails the test, naming it.
func openBroker(t *testing.T, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	cfg.URL = testURL()
	if cfg.Prefix == "" {
		cfg.Prefix = uniquePrefix(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test (start it with `rabbitmq-server -detached`, or set SKIDATA_TEST_AMQP_URL): %v", err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.DeleteTopology(ctx); err != nil {
			t.Logf("delete test queues %s.*: %v", cfg.Prefix, err)
		}
		_ = b.Disconnect()
	})
	return b
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
