package app

import (
	"context"
	"fmt"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/adapters/rabbitmq"
)

// queueSet provides the queue named by --queue.
var queueSet = wire.NewSet(provideQueue, publisherOf, subscriberOf, queueStatsOf, queueProbe)

func provideQueue(ctx context.Context, cfg Config) (queueAdapter, func(), error) {
	switch cfg.Queue {
	case "inproc":
		q := inproc.New(cfg.QueueCapacity)
		return q, func() { _ = q.Close() }, nil
	case "rabbitmq":
		a := cfg.AMQP
		b, err := rabbitmq.Open(ctx, rabbitmq.Config{
			URL: a.URL, Prefix: a.Prefix, Shards: a.Shards, QueueType: a.QueueType,
			Prefetch: a.Prefetch, MaxLength: cfg.QueueCapacity, DeliveryLimit: a.DeliveryLimit,
			PublishChannels: a.PublishChannels, PublishTimeout: a.PublishTimeout,
		})
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
