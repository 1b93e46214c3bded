package sqs_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

func TestMain(m *testing.M) { os.Exit(sqstest.Main(m)) }

// testConfig fills what every test's queue needs: a fresh name, the test
// server, and timeouts short enough for a test: a 1 s long poll (a
// receive canceled by Close can still take a message in the stand-in
// until it ends, as in SQS) and a 2 s visibility timeout.
func testConfig(t *testing.T, cfg sqs.Config) sqs.Config {
	t.Helper()
	if cfg.Queue == "" {
		cfg.Queue = sqstest.QueueName(t)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = sqstest.Endpoint(t)
	}
	cfg.Region = sqstest.Region
	if cfg.WaitTime == 0 {
		cfg.WaitTime = time.Second
	}
	if cfg.VisibilityTimeout == 0 {
		cfg.VisibilityTimeout = 2 * time.Second
	}
	if cfg.DepthInterval == 0 {
		cfg.DepthInterval = 100 * time.Millisecond
	}
	return cfg
}

// createQueues makes cfg's queues and deletes them when the test ends.
func createQueues(t *testing.T, cfg sqs.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sqs.CreateQueues(ctx, cfg); err != nil {
		t.Fatalf("CreateQueues: %v", err)
	}
	sqstest.DeleteQueuesAtEnd(t, sqstest.Endpoint(t), cfg.Queue, cfg.Queue+sqs.DeadLetterSuffix)
}

// openQueue opens a queue on cfg's queues, which must exist, and
// disconnects it when the test ends.
func openQueue(t *testing.T, cfg sqs.Config) *sqs.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := sqs.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		_ = q.Close()
		_ = q.Disconnect()
	})
	return q
}

// newQueue makes fresh queues and opens a Queue on them.
func newQueue(t *testing.T, cfg sqs.Config) (*sqs.Queue, sqs.Config) {
	t.Helper()
	cfg = testConfig(t, cfg)
	createQueues(t, cfg)
	return openQueue(t, cfg), cfg
}

func TestQueueContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, capacity int) queuetest.Queue {
		q, _ := newQueue(t, sqs.Config{MaxMessages: capacity})
		return queuetest.Queue{Pub: q, Sub: q, Stats: q}
	})
}

// take waits for n deliveries, failing the test after the deadline.
func take(t *testing.T, ch <-chan ports.Delivery, n int) []ports.Delivery {
	t.Helper()
	var out []ports.Delivery
	deadline := time.After(queuetest.Deadline)
	for len(out) < n {
		select {
		case d, ok := <-ch:
			if !ok {
				t.Fatalf("deliveries channel closed after %d of %d deliveries", len(out), n)
			}
			out = append(out, d)
		case <-deadline:
			t.Fatalf("got %d deliveries within %v; want %d", len(out), queuetest.Deadline, n)
		}
	}
	return out
}

// nothingFor fails the test if a delivery comes on ch or other (nil:
// none) within d: the way to show that a message stays away (for as long
// as the test can wait).
func nothingFor(t *testing.T, ch, other <-chan ports.Delivery, d time.Duration, why string) {
	t.Helper()
	timeout := time.After(d)
	for {
		var got ports.Delivery
		var ok bool
		select {
		case got, ok = <-ch:
			if !ok {
				ch = nil
				continue
			}
		case got, ok = <-other:
			if !ok {
				other = nil
				continue
			}
		case <-timeout:
			return
		}
		t.Fatalf("delivered %v within %v; want nothing: %s", got.Rides, d, why)
	}
}

func deliveries(t *testing.T, q *sqs.Queue) <-chan ports.Delivery {
	t.Helper()
	ch, err := q.Deliveries(sqstest.Context(t))
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	return ch
}

func publish(t *testing.T, q *sqs.Queue, rides []domain.LiftRide) {
	t.Helper()
	if err := q.Publish(sqstest.Context(t), rides); err != nil {
		t.Fatalf("Publish(%d rides): %v", len(rides), err)
	}
}

// publishEach publishes every ride as a message of its own.
func publishEach(t *testing.T, q *sqs.Queue, rides []domain.LiftRide) {
	t.Helper()
	for _, r := range rides {
		publish(t, q, []domain.LiftRide{r})
	}
}

func ack(t *testing.T, q *sqs.Queue, ds ...ports.Delivery) {
	t.Helper()
	if err := q.Ack(sqstest.Context(t), ds); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

// waitDepth polls Depth until check says nothing, failing after the
// deadline with what it last said.
func waitDepth(t *testing.T, q *sqs.Queue, what string, check func(ports.QueueDepth) string) {
	t.Helper()
	poll.Until(t, queuetest.Deadline, what, func() string {
		d, err := q.Depth(sqstest.Context(t))
		if err != nil {
			return err.Error()
		}
		if why := check(d); why != "" {
			return fmt.Sprintf("%s (depth %+v)", why, d)
		}
		return ""
	})
}

func emptyQueue(d ports.QueueDepth) string {
	if d.Messages != 0 || d.Rides != 0 {
		return "messages waiting"
	}
	return ""
}
