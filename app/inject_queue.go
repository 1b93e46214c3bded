package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/breaker"
	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// queueSet provides the queue named by --queue.
var queueSet = wire.NewSet(provideQueue, publisherOf, subscriberOf, queueStatsOf, queueProbe)

func provideQueue(ctx context.Context, cfg Config) (queueAdapter, func(), error) {
	switch cfg.Queue {
	case "inproc":
		q := inproc.New(cfg.QueueCapacity)
		return q, func() { _ = q.Close() }, nil
	case "rabbitmq":
		b, err := rabbitmq.Open(ctx, rabbitmqConfig(cfg))
		if err != nil {
			return nil, nil, err
		}
		// Close lets the persister's last acks through; Disconnect then
		// closes the connections.
		return b, func() { _ = b.Close(); _ = b.Disconnect() }, nil
	default:
		return nil, nil, fmt.Errorf("queue %q is not built into this binary", cfg.Queue)
	}
}

// rabbitmqConfig maps app's flags onto the adapter's configuration. The
// service and the dlq commands must agree on it: RabbitMQ refuses to
// redeclare a queue with other arguments.
func rabbitmqConfig(cfg Config) rabbitmq.Config {
	a := cfg.AMQP
	return rabbitmq.Config{
		URL: a.URL, Prefix: a.Prefix, Shards: a.Shards, QueueType: a.QueueType,
		Prefetch: a.Prefetch, MaxLength: cfg.QueueCapacity, DeliveryLimit: a.DeliveryLimit,
		PublishChannels: a.PublishChannels, PublishTimeout: a.PublishTimeout,
	}
}

// queueProbe: an in-process queue has nothing to reach; a broker is probed
// by asking it for the queue depth.
func queueProbe(cfg Config, q queueAdapter) QueueProbe {
	if cfg.Queue == "inproc" {
		return QueueProbe{}
	}
	return QueueProbe{Name: cfg.Queue, Check: func(ctx context.Context) error {
		_, err := q.Depth(ctx)
		return err
	}}
}

// DeadLetter is a ride RabbitMQ gave up delivering (`skiapi dlq list`).
type DeadLetter struct {
	MessageID string
	// Ride is zero when the body could not be decoded; BodyErr says why.
	Ride    domain.LiftRide
	BodyErr string
	// Reason (rejected, delivery_limit, ...), the queue it died in, and how
	// many times it died there, from the broker's x-death header.
	Reason string
	Queue  string
	Count  int64
}

// ListDeadLetters returns up to limit rides from the dead-letter queue
// without removing them.
func ListDeadLetters(ctx context.Context, cfg Config, limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := withBroker(ctx, cfg, func(b *rabbitmq.Broker) error {
		dls, err := b.DLQList(ctx, limit)
		for _, d := range dls {
			out = append(out, DeadLetter{MessageID: d.MessageID, Ride: d.Ride, BodyErr: d.BodyErr, Reason: d.Reason, Queue: d.Queue, Count: d.Count})
		}
		return err
	})
	return out, err
}

// ReplayDeadLetters moves every readable dead letter back to its ride queue
// and returns how many it moved; unreadable ones stay.
func ReplayDeadLetters(ctx context.Context, cfg Config) (int, error) {
	var n int
	err := withBroker(ctx, cfg, func(b *rabbitmq.Broker) error {
		var err error
		n, err = b.DLQReplay(ctx)
		return err
	})
	return n, err
}

// withBroker connects for a one-shot dlq command; there is a dead-letter
// queue only with --queue rabbitmq.
func withBroker(ctx context.Context, cfg Config, do func(*rabbitmq.Broker) error) error {
	if err := cfg.Validate(); err != nil {
		return usage(err)
	}
	if cfg.Queue != "rabbitmq" {
		return usage(fmt.Errorf("--queue %s has no dead-letter queue; use --queue rabbitmq with the service's --amqp-* flags", cfg.Queue))
	}
	if cfg.AMQP.URL == "" {
		return usage(fmt.Errorf("--queue rabbitmq needs --amqp-url (or %s)", EnvName("amqp-url")))
	}
	b, err := rabbitmq.Open(ctx, rabbitmqConfig(cfg))
	if err != nil {
		return err
	}
	defer func() { _ = b.Disconnect() }()
	return do(b)
}

// publisherOf is the queue's publisher as the ingest service sees it: every
// refusal counted and logged, and behind a circuit breaker (--breaker-*) so
// a queue that keeps refusing is not hammered and the API answers 503 at
// once while it recovers.
func publisherOf(q queueAdapter, cfg Config, m ports.Metrics, log *slog.Logger) ports.Publisher {
	return breaker.New(instrumentedPublisher{next: q, metrics: m, log: log}, breaker.Config{
		Failures: uint32(cfg.Breaker.Failures),
		OpenFor:  cfg.Breaker.OpenFor,
		OnStateChange: func(from, to string) {
			m.BreakerState(to)
			log.Warn("publish circuit breaker changed state", "from", from, "to", to)
		},
		OnReject: func() { m.Rejected("breaker_open") },
	})
}
