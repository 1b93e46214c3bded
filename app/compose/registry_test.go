package compose

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/app"
	"github.com/skidata/skidata/domain"
)

// TestAPOSTWaitsForTheStoreOnlyWhereTheQueueWouldLoseWhatTheStoreKeeps:
// behind the in-process queue, which dies with the process, a publish in
// front of a durable store returns only once the store holds the ride (here
// nobody consumes, so it gives up when its request ends), and the
// persister then does not linger; in front of the memory store, which dies
// with the process too, a publish returns at once and the persister
// lingers for --batch-linger. Behind RabbitMQ or SQS, which keep what they
// confirmed, the persister lingers whatever the store.
func TestAPOSTWaitsForTheStoreOnlyWhereTheQueueWouldLoseWhatTheStoreKeeps(t *testing.T) {
	for _, c := range []struct {
		store, queue string
		waits        bool
	}{
		{"memory", "inproc", false},
		{"postgres", "inproc", true},
		{"dynamo-sharded", "inproc", true},
		{"memory", "rabbitmq", false},
		{"postgres", "rabbitmq", false},
		{"dynamo-counters", "rabbitmq", false},
		{"postgres", "sqs", false},
		{"memory", "sqs", false},
	} {
		cfg := DefaultConfig()
		cfg.Store, cfg.Queue = c.store, c.queue
		linger := persisterConfig(cfg).Linger
		if c.waits && linger != 0 || !c.waits && linger != cfg.Persister.Linger {
			t.Errorf("store %s, queue %s: the persister lingers %v; want %v", c.store, c.queue, linger, map[bool]time.Duration{true: 0, false: cfg.Persister.Linger}[c.waits])
		}
		if c.queue != "inproc" {
			continue // a shared queue is opened and published to by its own tests
		}
		q, closeQueue, err := OpenQueue(context.Background(), Deps{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err = q.Queue.Publish(ctx, []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)})
		cancel()
		closeQueue()
		if waited := errors.Is(err, domain.ErrUnavailable); waited != c.waits || (!c.waits && err != nil) {
			t.Errorf("store %s, queue %s: a publish nobody consumes returned %v; want it to wait for the store: %v", c.store, c.queue, err, c.waits)
		}
	}
}

// TestTheGroupCommitIsWhatTheQueueAsksFor: RabbitMQ's messages are
// gathered by --publish-batch, --publish-linger and --publish-linger-gap,
// with one message in flight per confirm-mode channel; SQS's fill to what
// one billed request carries, lingering at least sqs.MinPublishLinger;
// the in-process queue asks for none, so each ride goes at once, alone.
func TestTheGroupCommitIsWhatTheQueueAsksFor(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Publish = app.PublishConfig{MaxRides: 100, Linger: 7 * time.Millisecond, LingerGap: 2 * time.Millisecond}
	cfg.AMQP.PublishChannels = 3
	cfg.Queue = "rabbitmq"
	want := app.PublishConfig{InFlight: 3, MaxRides: 100, Linger: 7 * time.Millisecond, LingerGap: 2 * time.Millisecond}
	if got := groupCommitOf(cfg); got != want {
		t.Errorf("rabbitmq's group commit = %+v; want %+v", got, want)
	}
	cfg.Queue = "sqs"
	want = app.PublishConfig{InFlight: sqs.PublishInFlight, MaxRides: sqs.MaxRidesPerMessage, Linger: sqs.MinPublishLinger, LingerGap: 2 * time.Millisecond}
	if got := groupCommitOf(cfg); got != want {
		t.Errorf("sqs's group commit with --publish-linger 7ms = %+v; want %+v", got, want)
	}
	cfg.Publish.Linger = time.Second
	want.Linger = time.Second
	if got := groupCommitOf(cfg); got != want {
		t.Errorf("sqs's group commit with --publish-linger 1s = %+v; want %+v", got, want)
	}
	cfg.Queue = "inproc"
	if got := groupCommitOf(cfg); got != (app.PublishConfig{}) {
		t.Errorf("inproc's group commit = %+v; want none (each ride at once, alone)", got)
	}
}
