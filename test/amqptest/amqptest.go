// Package amqptest gives tests a RabbitMQ to talk to: the machine's broker
// (make test starts it when it is stopped) or the one
// SKIDATA_TEST_AMQP_URL names, and queues no other test or run uses,
// deleted when the test ends.
package amqptest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
)

// EnvURL names a broker to use instead of the machine's own.
const EnvURL = "SKIDATA_TEST_AMQP_URL"

// URL is the broker the tests run against.
func URL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

var seq atomic.Int64

// Prefix is a queue-name prefix no other test in any run uses.
func Prefix(t testing.TB) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return fmt.Sprintf("skitest.%s.%d.%d", name, time.Now().UnixNano(), seq.Add(1))
}

// Open opens a broker on cfg (the test broker's URL and a fresh prefix
// when they are empty), which declares its queues, and deletes them when
// the test ends. An unreachable broker fails the test, naming it and how
// to start it.
func Open(t testing.TB, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = URL()
	}
	if cfg.Prefix == "" {
		cfg.Prefix = Prefix(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbitmq.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test (start it with `rabbitmq-server -detached`, or set %s): %v", EnvURL, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.DeleteTopology(ctx); err != nil {
			t.Errorf("delete test queues %s.*: %v", cfg.Prefix, err)
		}
		_ = b.Disconnect()
	})
	return b
}
