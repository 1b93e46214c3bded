package inproc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// DefaultCapacity is used when the capacity given is not positive.
const DefaultCapacity = 100_000

// Queue is a bounded FIFO of messages, each the rides of one Publish call.
// Capacity counts rides ready and rides delivered but not yet settled, so
// memory stays bounded however slow the store is.
type Queue struct {
	capacity int
	wait     bool // Publish returns once the message is settled (WaitForAck)

	mu      sync.Mutex
	ready   []message // FIFO: ready[0] is delivered next
	rides   int       // rides in ready and unacked
	unacked map[uint64]message
	nextTag uint64
	closed  bool
	wake    chan struct{} // signalled when ready or unacked changes
	started bool
	// out is the delivery channel while the delivery loop runs, and
	// handing says the loop holds a message it took and has not sent yet.
	out     chan<- ports.Delivery
	handing bool
}

var (
	_ ports.Publisher  = (*Queue)(nil)
	_ ports.Subscriber = (*Queue)(nil)
	_ ports.QueueStats = (*Queue)(nil)
)

// message is one Publish call's rides and, when its publisher waits for
// them to be stored, where to tell it the outcome.
type message struct {
	rides []domain.LiftRide
	done  chan error // nil: nobody waits; else buffered, told once
}

func (m message) tell(err error) {
	if m.done != nil {
		m.done <- err
	}
}

// Option changes how a Queue behaves.
type Option func(*Queue)

// WaitForAck makes Publish return only once the persister has settled the
// message, that is once the store has committed the batch that holds it.
// With a durable store a 201 then means the ride survives a crash. A ride
// the store refuses makes Publish fail with domain.ErrInvalid.
func WaitForAck() Option { return func(q *Queue) { q.wait = true } }

// New returns an empty queue holding at most capacity rides.
func New(capacity int, opts ...Option) *Queue {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	q := &Queue{
		capacity: capacity,
		unacked:  map[uint64]message{},
		wake:     make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(q)
	}
	return q
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Publish appends the rides as one message, or fails with ErrUnavailable
// when they do not fit or the queue is closed. With WaitForAck it then
// waits until they are stored.
func (q *Queue) Publish(ctx context.Context, rides []domain.LiftRide) error {
	if len(rides) == 0 {
		return nil
	}
	m := message{rides: rides}
	if q.wait {
		m.done = make(chan error, 1)
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return domain.Unavailable("the service is shutting down; retry against another instance")
	}
	if waiting := q.rides; waiting+len(rides) > q.capacity {
		q.mu.Unlock()
		return fmt.Errorf("%w: %w: %d rides waiting, capacity %d; retry shortly", domain.ErrUnavailable, ports.ErrQueueFull, waiting, q.capacity)
	}
	q.rides += len(rides)
	if q.handOver(m) {
		q.mu.Unlock()
	} else {
		q.ready = append(q.ready, m)
		q.mu.Unlock()
		q.signal()
	}
	if m.done == nil {
		return nil
	}
	select {
	case err := <-m.done:
		return err
	case <-ctx.Done():
		// The rides stay queued and will be stored; the caller just stops
		// waiting. Sending them again is safe: the stores are idempotent.
		return domain.Unavailable("%d rides not stored before the request ended (they may still be stored; sending them again is safe): %v", len(rides), ctx.Err())
	}
}

// handOver delivers m at once, from the publisher's goroutine, when no
// message is ahead of it (none ready, none in the delivery loop's hands) and
// the delivery channel has room: the persister then gets the ride without a
// hop through the loop's goroutine. Order is kept: anything ahead of m goes
// through the loop, and so does m. Called with mu held.
func (q *Queue) handOver(m message) bool {
	if q.out == nil || len(q.ready) > 0 || q.handing {
		return false
	}
	tag := q.nextTag + 1
	select {
	case q.out <- ports.Delivery{Rides: m.rides, Receipt: tag}:
		q.nextTag = tag
		q.unacked[tag] = m // before mu is released: no Ack can come first
		return true
	default:
		return false
	}
}

// Deliveries starts handing out messages. It may be called once.
func (q *Queue) Deliveries(ctx context.Context) (<-chan ports.Delivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return nil, errors.New("inproc queue: Deliveries called twice")
	}
	q.started = true
	out := make(chan ports.Delivery, 64)
	q.out = out
	go q.deliver(ctx, out)
	return out, nil
}

// take moves the oldest ready message to unacked. done reports that the
// queue is closed, empty and settled, so the delivery loop should end.
func (q *Queue) take() (d ports.Delivery, ok, done bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handing = false // the loop sent (or gave back) what it took before
	if len(q.ready) == 0 {
		return d, false, q.closed && len(q.unacked) == 0
	}
	m := q.ready[0]
	q.ready[0] = message{}
	q.ready = q.ready[1:]
	q.nextTag++
	q.unacked[q.nextTag] = m
	q.handing = true
	return ports.Delivery{Rides: m.rides, Receipt: q.nextTag}, true, false
}

func (q *Queue) deliver(ctx context.Context, out chan<- ports.Delivery) {
	defer func() {
		q.mu.Lock()
		q.out = nil // no publisher sends to it any more
		q.mu.Unlock()
		close(out)
	}()
	for {
		d, ok, done := q.take()
		if done {
			return
		}
		if !ok {
			select {
			case <-q.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- d:
		case <-ctx.Done():
			// Not handed out: give it back so nothing is lost.
			_ = q.Nack(context.Background(), []ports.Delivery{d})
			return
		}
	}
}

// settle removes a delivered message from unacked; ok is false if it is
// not there (settled already, or not this queue's).
func (q *Queue) settle(d ports.Delivery) (m message, ok bool) {
	tag, _ := d.Receipt.(uint64)
	m, ok = q.unacked[tag]
	if ok {
		delete(q.unacked, tag)
		q.rides -= len(m.rides)
	}
	return m, ok
}

// Ack forgets the delivered messages (and tells their waiting publishers).
func (q *Queue) Ack(_ context.Context, ds []ports.Delivery) error {
	q.mu.Lock()
	for _, d := range ds {
		if m, ok := q.settle(d); ok {
			m.tell(nil)
		}
	}
	q.mu.Unlock()
	q.signal()
	return nil
}

// Reject drops the rides the store refused (an in-process queue has no
// dead-letter queue to keep them in; the persister logs each one) and
// forgets the message, whose other rides are stored. A waiting publisher is
// told its ride was refused.
func (q *Queue) Reject(_ context.Context, d ports.Delivery, refused []domain.LiftRide) error {
	q.mu.Lock()
	m, ok := q.settle(d)
	q.mu.Unlock()
	q.signal()
	if ok {
		m.tell(domain.Invalid("the store refused %d of %d rides, among them %s", len(refused), len(m.rides), firstKey(refused)))
	}
	return nil
}

func firstKey(rides []domain.LiftRide) string {
	if len(rides) == 0 {
		return "none"
	}
	return rides[0].Key()
}

// Nack puts the delivered messages back at the head of the queue, in
// order, so they are delivered again next.
func (q *Queue) Nack(_ context.Context, ds []ports.Delivery) error {
	q.mu.Lock()
	back := make([]message, 0, len(ds)+len(q.ready))
	for _, d := range ds {
		if m, ok := q.settle(d); ok {
			// Room is guaranteed: the rides were counted against
			// capacity. A waiting publisher keeps waiting: the rides
			// will be stored later.
			q.rides += len(m.rides)
			back = append(back, m)
		}
	}
	q.ready = append(back, q.ready...) // a copy: Nack is the rare path
	q.mu.Unlock()
	q.signal()
	return nil
}

// Close refuses new rides; deliveries go on until the queue is empty and
// every delivery is settled.
func (q *Queue) Close() error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	return nil
}

// Depth is the number of messages, and of rides, ready or delivered and
// not yet settled: both exact.
func (q *Queue) Depth(context.Context) (ports.QueueDepth, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return ports.QueueDepth{Messages: int64(len(q.ready) + len(q.unacked)), Rides: int64(q.rides)}, nil
}
