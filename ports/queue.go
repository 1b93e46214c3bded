package ports

import (
	"context"
	"errors"

	"github.com/skidata/skidata/domain"
)

// Publisher hands accepted rides to the queue.
//
// Publish puts the rides in the queue as ONE message (a broker message, an
// in-process queue entry) and returns nil only once the queue has taken
// responsibility for all of them (for a broker: after its publisher
// confirm; for an in-process queue in front of a durable store: after the
// store committed them). From then on the rides must reach the store even
// if this process dies. When the queue cannot take the message (full,
// unreachable) Publish returns an error wrapping domain.ErrUnavailable and
// nothing was accepted; a full queue wraps ErrQueueFull as well, so that
// backpressure is told apart from a broken queue.
type Publisher interface {
	Publish(ctx context.Context, rides []domain.LiftRide) error
}

// ErrQueueFull marks a Publish refused because the queue holds as much as
// it may: the queue works, it is only behind. An adapter wraps it together
// with domain.ErrUnavailable (the caller should retry later), e.g.
// fmt.Errorf("%w: %w: ...", domain.ErrUnavailable, ports.ErrQueueFull), so
// that backpressure is told apart from a broken queue.
var ErrQueueFull = errors.New("the ride queue is full")

// ErrPublishPaused marks a Publish refused without trying, because the
// queue failed repeatedly and publishing is paused for a while (a circuit
// breaker in front of the queue). It comes wrapped with
// domain.ErrUnavailable.
var ErrPublishPaused = errors.New("publishing is paused after repeated queue failures")

// Delivery is one message taken off the queue, not yet settled: the rides
// of one Publish call, whole, and the queue's handle on it.
type Delivery struct {
	Rides   []domain.LiftRide
	Receipt Receipt
}

// Receipt is the queue's own handle on one delivery (a broker's delivery
// tag and channel, say). It is opaque to the core, which only hands it back
// to the Subscriber that issued it.
type Receipt any

// Subscriber gives the persister the messages on the queue, at least once.
//
// Contract (test/queuetest checks every adapter against it):
//   - A published message is delivered whole: the same rides, in the same
//     order, under one receipt; it is delivered until it is settled.
//   - Ack is called only after every ride of the deliveries is stored; Nack
//     hands the deliveries back, whole, to be delivered again (to this or
//     another consumer).
//   - Reject settles a delivery of which the store refused some rides as
//     invalid and stored the others: the refused rides are moved to the
//     dead-letter queue (a broker) or dropped (a queue in this process),
//     and the delivery is never delivered again.
//   - Close stops new deliveries; the channel from Deliveries is closed once
//     everything already handed out has been settled, and, for a queue that
//     lives in this process, once it is empty.
type Subscriber interface {
	Deliveries(ctx context.Context) (<-chan Delivery, error)
	Ack(ctx context.Context, ds []Delivery) error
	Nack(ctx context.Context, ds []Delivery) error
	Reject(ctx context.Context, d Delivery, refused []domain.LiftRide) error
	Close() error
}

// QueueDepth is how much work is waiting: published but not yet
// acknowledged (ready plus in flight).
type QueueDepth struct {
	// Messages is the number of messages, as the queue counts them.
	Messages int64
	// Rides is the number of rides in them: exact for a queue that can
	// count them, else an estimate the adapter documents.
	Rides int64
	// DeadLetters is the number of messages in the dead-letter queue,
	// however they got there (the persister's own, or the broker's after
	// the delivery limit); 0 for a queue without one.
	DeadLetters int64
}

// QueueStats reports how much work is waiting, for readiness, admission
// control and the load client's "drained" check.
type QueueStats interface {
	Depth(ctx context.Context) (QueueDepth, error)
}

// DeadLetter is one ride in a queue's dead-letter queue, as an operator
// sees it (`skiapi dlq list`), whatever the queue: a dead-lettered message
// of several rides shows as one letter per ride.
type DeadLetter struct {
	// MessageID is the dead-letter message's id, as the queue names it.
	MessageID string
	// Ride is the decoded ride; zero when the body is unreadable (BodyErr).
	Ride    domain.LiftRide
	BodyErr string
	// Body is the message's body (a broker's unreadable record: that
	// record) as the queue holds it.
	Body []byte
	// Reason is why it is there, in the queue's own words (rejected by the
	// store, unreadable, a delivery or receive limit reached); Queue the
	// ride queue it came from.
	Reason string
	Queue  string
	// Count is how many times the queue counts it dead-lettered or
	// delivered, as the queue reports it.
	Count int64
}
