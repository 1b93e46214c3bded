package inproc

import (
	"context"
	"errors"
	"sync"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// DefaultCapacity is used when the capacity given is not positive.
const DefaultCapacity = 100_000

// Queue is a bounded FIFO. Capacity counts rides ready and rides delivered but
// not yet acknowledged, so memory stays bounded however slow the store is.
type Queue struct {
	capacity int

	mu      sync.Mutex
	ready   []domain.LiftRide // ring buffer of length capacity
	head    int               // index of the oldest ready ride
	nready  int
	unacked map[uint64]domain.LiftRide
	nextTag uint64
	closed  bool
	dropped int64
	wake    chan struct{} // signalled when ready or unacked changes
	started bool
}

var (
	_ ports.Publisher  = (*Queue)(nil)
	_ ports.Subscriber = (*Queue)(nil)
	_ ports.QueueStats = (*Queue)(nil)
)

// New returns an empty queue holding at most capacity rides.
func New(capacity int) *Queue {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Queue{
		capacity: capacity,
		ready:    make([]domain.LiftRide, capacity),
		unacked:  map[uint64]domain.LiftRide{},
		wake:     make(chan struct{}, 1),
	}
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Publish appends the ride, or fails with ErrUnavailable when the queue is
// full or closed.
func (q *Queue) Publish(_ context.Context, ride domain.LiftRide) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return domain.Unavailable("the service is shutting down; retry against another instance")
	}
	if q.nready+len(q.unacked) >= q.capacity {
		q.mu.Unlock()
		return domain.Unavailable("the ride queue is full (%d rides waiting); retry shortly", q.capacity)
	}
	q.ready[(q.head+q.nready)%q.capacity] = ride
	q.nready++
	q.mu.Unlock()
	q.signal()
	return nil
}

// Deliveries starts handing out rides. It may be called once.
func (q *Queue) Deliveries(ctx context.Context) (<-chan ports.Delivery, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return nil, errors.New("inproc queue: Deliveries called twice")
	}
	q.started = true
	out := make(chan ports.Delivery, 256)
	go q.deliver(ctx, out)
	return out, nil
}

// take moves the oldest ready ride to unacked. done reports that the queue is
// closed, empty and settled, so the delivery loop should end.
func (q *Queue) take() (d ports.Delivery, ok, done bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.nready == 0 {
		return d, false, q.closed && len(q.unacked) == 0
	}
	ride := q.ready[q.head]
	q.ready[q.head] = domain.LiftRide{}
	q.head = (q.head + 1) % q.capacity
	q.nready--
	q.nextTag++
	q.unacked[q.nextTag] = ride
	return ports.Delivery{Ride: ride, Receipt: q.nextTag}, true, false
}

func (q *Queue) deliver(ctx context.Context, out chan<- ports.Delivery) {
	defer close(out)
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

// Ack forgets the delivered rides.
func (q *Queue) Ack(_ context.Context, batch []ports.Delivery) error {
	q.mu.Lock()
	for _, d := range batch {
		delete(q.unacked, tagOf(d))
	}
	q.mu.Unlock()
	q.signal()
	return nil
}

// Reject drops rides that can never be stored: an in-process queue has no
// dead-letter queue to keep them in (the persister logs each one).
func (q *Queue) Reject(_ context.Context, batch []ports.Delivery) error {
	q.mu.Lock()
	for _, d := range batch {
		if _, ok := q.unacked[tagOf(d)]; ok {
			delete(q.unacked, tagOf(d))
			q.dropped++
		}
	}
	q.mu.Unlock()
	q.signal()
	return nil
}

// Dropped is how many rides Reject has dropped.
func (q *Queue) Dropped() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// Nack puts the delivered rides back at the head of the queue, in order, so
// they are delivered again next.
func (q *Queue) Nack(_ context.Context, batch []ports.Delivery) error {
	q.mu.Lock()
	for i := len(batch) - 1; i >= 0; i-- {
		ride, ok := q.unacked[tagOf(batch[i])]
		if !ok {
			continue
		}
		delete(q.unacked, tagOf(batch[i]))
		// Room is guaranteed: the ride was counted against capacity.
		q.head = (q.head - 1 + q.capacity) % q.capacity
		q.ready[q.head] = ride
		q.nready++
	}
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

// Depth is the number of rides ready or delivered and not yet acknowledged.
func (q *Queue) Depth(context.Context) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.nready + len(q.unacked)), nil
}

// tagOf is the sequence number this queue put in a delivery's receipt.
func tagOf(d ports.Delivery) uint64 {
	tag, _ := d.Receipt.(uint64)
	return tag
}
