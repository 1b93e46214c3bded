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
	wait     bool // Publish returns once the ride is acked (WaitForAck)

	mu      sync.Mutex
	ready   []entry // ring buffer of length capacity
	head    int     // index of the oldest ready ride
	nready  int
	unacked map[uint64]entry
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

// entry is a ride in the queue and, when its publisher waits for it to be
// stored, where to tell it the outcome.
type entry struct {
	ride domain.LiftRide
	done chan error // nil: nobody waits; else buffered, told once
}

func (e entry) tell(err error) {
	if e.done != nil {
		e.done <- err
	}
}

// Option changes how a Queue behaves.
type Option func(*Queue)

// WaitForAck makes Publish return only once the persister has acknowledged
// the ride, that is once the store has committed the batch that holds it.
// With a durable store a 201 then means the ride survives a crash; and
// since the persister writes whatever is queued as one batch, concurrent
// requests share one store write (group commit). A ride the store refuses
// makes Publish fail with domain.ErrInvalid.
func WaitForAck() Option { return func(q *Queue) { q.wait = true } }

// New returns an empty queue holding at most capacity rides.
func New(capacity int, opts ...Option) *Queue {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	q := &Queue{
		capacity: capacity,
		ready:    make([]entry, capacity),
		unacked:  map[uint64]entry{},
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

// Publish appends the ride, or fails with ErrUnavailable when the queue is
// full or closed. With WaitForAck it then waits until the ride is stored.
func (q *Queue) Publish(ctx context.Context, ride domain.LiftRide) error {
	e := entry{ride: ride}
	if q.wait {
		e.done = make(chan error, 1)
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return domain.Unavailable("the service is shutting down; retry against another instance")
	}
	if q.nready+len(q.unacked) >= q.capacity {
		q.mu.Unlock()
		return domain.Unavailable("the ride queue is full (%d rides waiting); retry shortly", q.capacity)
	}
	q.ready[(q.head+q.nready)%q.capacity] = e
	q.nready++
	q.mu.Unlock()
	q.signal()
	if e.done == nil {
		return nil
	}
	select {
	case err := <-e.done:
		return err
	case <-ctx.Done():
		// The ride stays queued and will be stored; the caller just stops
		// waiting. Sending it again is safe: the stores are idempotent.
		return domain.Unavailable("ride %s not stored before the request ended (it may still be stored; sending it again is safe): %v", ride.Key(), ctx.Err())
	}
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
	e := q.ready[q.head]
	q.ready[q.head] = entry{}
	q.head = (q.head + 1) % q.capacity
	q.nready--
	q.nextTag++
	q.unacked[q.nextTag] = e
	return ports.Delivery{Ride: e.ride, Receipt: q.nextTag}, true, false
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

// Ack forgets the delivered rides (and tells their waiting publishers).
func (q *Queue) Ack(_ context.Context, batch []ports.Delivery) error {
	q.mu.Lock()
	for _, d := range batch {
		if e, ok := q.unacked[tagOf(d)]; ok {
			delete(q.unacked, tagOf(d))
			e.tell(nil)
		}
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
		if e, ok := q.unacked[tagOf(d)]; ok {
			delete(q.unacked, tagOf(d))
			q.dropped++
			e.tell(domain.Invalid("the store refused ride %s", e.ride.Key()))
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
		e, ok := q.unacked[tagOf(batch[i])]
		if !ok {
			continue
		}
		delete(q.unacked, tagOf(batch[i]))
		// Room is guaranteed: the ride was counted against capacity. A
		// waiting publisher keeps waiting: the ride will be stored later.
		q.head = (q.head - 1 + q.capacity) % q.capacity
		q.ready[q.head] = e
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
