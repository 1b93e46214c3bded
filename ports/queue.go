package ports

import (
	"context"

	"github.com/skidata/skidata/domain"
)

// Publisher hands an accepted ride to the queue.
//
// Publish returns nil only once the queue has taken responsibility for the
// ride (for a broker: after its publisher confirm); from then on the ride
// must reach the store even if this process dies. When the queue cannot take
// it (full, unreachable) Publish returns an error wrapping
// domain.ErrUnavailable and nothing was accepted.
type Publisher interface {
	Publish(ctx context.Context, ride domain.LiftRide) error
}

// Delivery is one ride taken off the queue, not yet acknowledged.
type Delivery struct {
	Ride    domain.LiftRide
	Receipt Receipt
}

// Receipt is the queue's own handle on one delivery (a broker's delivery
// tag and channel, say). It is opaque to the core, which only hands it back
// to the Subscriber that issued it in Ack, Nack or Reject.
type Receipt any

// Subscriber gives the persister the rides on the queue, at least once.
//
// Contract (test/queuetest checks every adapter against it):
//   - Every published ride is delivered until it is acknowledged.
//   - Ack is called only after the rides are stored; Nack hands them back
//     to be delivered again (to this or another consumer).
//   - Reject is for rides that can never be stored (the store refused them
//     as invalid): a broker moves them to its dead-letter queue, a queue in
//     this process drops them; either way they are not delivered again.
//   - Close stops new deliveries; the channel from Deliveries is closed once
//     everything already handed out has been acknowledged or handed back,
//     and, for a queue that lives in this process, once it is empty.
type Subscriber interface {
	Deliveries(ctx context.Context) (<-chan Delivery, error)
	Ack(ctx context.Context, batch []Delivery) error
	Nack(ctx context.Context, batch []Delivery) error
	Reject(ctx context.Context, batch []Delivery) error
	Close() error
}

// QueueStats reports how much work is waiting, for readiness, admission
// control and the load client's "drained" check.
type QueueStats interface {
	// Depth is the number of rides published but not yet acknowledged
	// (ready plus in flight), as far as the queue can tell.
	Depth(ctx context.Context) (int64, error)
}
