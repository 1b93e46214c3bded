package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/app/compose"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/apitest"
)

// TestMemoryRabbitMQEndToEnd runs the API suite with rides going through
// RabbitMQ (127.0.0.1:5672 or SKIDATA_TEST_AMQP_URL) on queues of its own,
// deleted afterwards.
func TestMemoryRabbitMQEndToEnd(t *testing.T) {
	apitest.Run(t, apitest.Start(t, rabbitConfig(t, "e2e")))
}

// rabbitConfig is an in-process service (memory store) whose queue is
// RabbitMQ, on a topology of the test's own.
func rabbitConfig(t *testing.T, kind string) compose.Config {
	url, prefix := rabbitTopology(t, kind)
	cfg := compose.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.Queue = "rabbitmq"
	cfg.AMQP.URL = url
	cfg.AMQP.Prefix = prefix
	return cfg
}

// rabbitTopology returns the test broker's URL and a queue prefix no other
// test uses, with the queues declared as the service with default flags
// declares them (so the arguments match) and deleted when the test ends.
// tweaks change the declaration as the test's flags change the service's.
func rabbitTopology(t *testing.T, kind string, tweaks ...func(*rabbitmq.Config)) (url, prefix string) {
	t.Helper()
	url = amqptest.URL(t)
	prefix = fmt.Sprintf("skitest.%s.%d", kind, time.Now().UnixNano())
	cfg := rabbitmq.Config{URL: url, Prefix: prefix, MaxLength: compose.DefaultConfig().QueueCapacity}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	amqptest.Open(t, cfg)
	return url, prefix
}
