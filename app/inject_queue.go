package app

import (
	"fmt"

	"github.com/google/wire"

	"github.com/skidata/skidata/adapters/inproc"
)

// queueSet provides the queue named by --queue.
var queueSet = wire.NewSet(provideQueue, publisherOf, subscriberOf, queueStatsOf, queueProbe)

func provideQueue(cfg Config) (queueAdapter, func(), error) {
	switch cfg.Queue {
	case "inproc":
		q := inproc.New(cfg.QueueCapacity)
		return q, func() { _ = q.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("queue %q is not built into this binary", cfg.Queue)
	}
}

// queueProbe: an in-process queue has nothing to reach.
func queueProbe(cfg Config) QueueProbe { return QueueProbe{} }
