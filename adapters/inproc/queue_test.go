package inproc_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/inproc"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/queuetest"
)

func TestQueueContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, capacity int) queuetest.Queue {
		q := inproc.New(capacity)
		t.Cleanup(func() { _ = q.Close() })
		return queuetest.Queue{Pub: q, Sub: q, Stats: q}
	})
}

// publishAsync publishes from a goroutine and returns where its result goes.
func publishAsync(ctx context.Context, q *inproc.Queue, r domain.LiftRide) <-chan error {
	res := make(chan error, 1)
	go func() { res <- q.Publish(ctx, []domain.LiftRide{r}) }()
	return res
}

func nextDelivery(t *testing.T, ch <-chan ports.Delivery) ports.Delivery {
	t.Helper()
	return receive(t, ch, "no delivery within the deadline")
}

func result(t *testing.T, res <-chan error) error {
	t.Helper()
	return receive(t, res, "Publish did not return within the deadline")
}

// receive is the next value on ch; the test fails, saying what is missing,
// when none comes within queuetest.Deadline.
func receive[T any](t *testing.T, ch <-chan T, missing string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(queuetest.Deadline):
		t.Fatal(missing)
	}
	var zero T
	return zero
}

// waitForAckQueue is a WaitForAck queue and its deliveries.
func waitForAckQueue(t *testing.T) (*inproc.Queue, <-chan ports.Delivery) {
	t.Helper()
	q := inproc.New(10, inproc.WaitForAck())
	ch, err := q.Deliveries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return q, ch
}

// TestWaitForAckPublishReturnsOnceAcked: with WaitForAck a ride's Publish
// returns only after the persister acked it (stored it); a nack keeps it
// waiting for the redelivery's outcome.
func TestWaitForAckPublishReturnsOnceAcked(t *testing.T) {
	ctx := context.Background()
	q, ch := waitForAckQueue(t)
	ride := queuetest.Rides(1, 1)[0]
	res := publishAsync(ctx, q, ride)
	d := nextDelivery(t, ch)
	if err := q.Nack(ctx, []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	d = nextDelivery(t, ch)
	select {
	case err := <-res:
		t.Fatalf("Publish returned %v before its ride was acked", err)
	default:
	}
	if err := q.Ack(ctx, []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	if err := result(t, res); err != nil {
		t.Fatalf("Publish after the ack = %v; want nil", err)
	}
}

// TestWaitForAckRejectedRideFailsItsPublish: a ride the store refuses is
// reported to its publisher as invalid.
func TestWaitForAckRejectedRideFailsItsPublish(t *testing.T) {
	ctx := context.Background()
	q, ch := waitForAckQueue(t)
	res := publishAsync(ctx, q, queuetest.Rides(1, 1)[0])
	d := nextDelivery(t, ch)
	if err := q.Reject(ctx, d, d.Rides); err != nil {
		t.Fatal(err)
	}
	if err := result(t, res); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Publish of a rejected ride = %v; want ErrInvalid", err)
	}
}

// TestWaitForAckCallerGivingUpLeavesTheRideQueued: a publisher whose
// context ends gets ErrUnavailable, and its ride is still delivered.
func TestWaitForAckCallerGivingUpLeavesTheRideQueued(t *testing.T) {
	q := inproc.New(10, inproc.WaitForAck())
	ctx, cancel := context.WithCancel(context.Background())
	ride := queuetest.Rides(1, 1)[0]
	res := publishAsync(ctx, q, ride)
	cancel()
	if err := result(t, res); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish whose context ended = %v; want ErrUnavailable", err)
	}
	ch, err := q.Deliveries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := nextDelivery(t, ch); len(d.Rides) != 1 || d.Rides[0] != ride {
		t.Fatalf("delivered %v; want the ride whose publisher gave up, %v", d.Rides, ride)
	}
}

// TestMessagesAreDeliveredInTheOrderPublished: whether a message is handed
// straight to the delivery channel (it has room and nothing is ahead) or
// queued behind others (the channel is full), deliveries keep the order of
// publishing.
func TestMessagesAreDeliveredInTheOrderPublished(t *testing.T) {
	q := inproc.New(1000)
	ch, err := q.Deliveries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rides := queuetest.Rides(400, 1)
	var got []domain.LiftRide
	receive := func() {
		d := nextDelivery(t, ch)
		got = append(got, d.Rides...)
		if err := q.Ack(context.Background(), []ports.Delivery{d}); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range rides {
		if err := q.Publish(context.Background(), []domain.LiftRide{r}); err != nil {
			t.Fatal(err)
		}
		if i >= 200 { // the first 200 fill the channel and queue behind it; then one in, one out
			receive()
		}
	}
	for len(got) < len(rides) {
		receive()
	}
	for i := range rides {
		if got[i] != rides[i] {
			t.Fatalf("delivery %d was %s; want %s (publish order)", i, got[i].Key(), rides[i].Key())
		}
	}
}

// TestDeliveriesStoppingWhilePublishingLosesNothing: when the deliveries'
// context ends while publishers publish, the channel closes (no publish
// sends to it after that, which would panic), and every ride published is
// still counted by the queue: delivered and unsettled, or ready.
func TestDeliveriesStoppingWhilePublishingLosesNothing(t *testing.T) {
	q := inproc.New(100_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // cancelled by the first publisher half-way; this for an early t.Fatal
	ch, err := q.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const publishers, each = 4, 2000
	var published atomic.Int64
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i, r := range queuetest.Rides(each, domain.SkierID(1+p*each)) {
				if i == each/2 && p == 0 {
					cancel()
				}
				if err := q.Publish(context.Background(), []domain.LiftRide{r}); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				published.Add(1)
			}
		})
	}
	delivered := map[domain.LiftRide]bool{}
	deadline := time.After(queuetest.Deadline)
	for open := true; open; {
		select {
		case d, ok := <-ch: // closes once the loop has stopped
			open = ok
			for _, r := range d.Rides {
				if delivered[r] {
					t.Fatalf("ride %s delivered twice", r.Key())
				}
				delivered[r] = true
			}
		case <-deadline:
			t.Fatal("the deliveries channel did not close after its context ended")
		}
	}
	wg.Wait()
	depth, err := q.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if depth.Rides != published.Load() || depth.Rides != publishers*each {
		t.Fatalf("the queue counts %d rides; %d were published, %d of them delivered, none settled", depth.Rides, published.Load(), len(delivered))
	}
}

// TestAPublishAfterDeliveriesStoppedIsKept: once an idle queue's
// deliveries have stopped, a publish is kept for the next consumer rather
// than sent to the closed channel.
func TestAPublishAfterDeliveriesStoppedIsKept(t *testing.T) {
	q := inproc.New(10)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := q.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rides := queuetest.Rides(2, 1)
	if err := q.Publish(context.Background(), rides[:1]); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(context.Background(), []ports.Delivery{nextDelivery(t, ch)}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if open := receive(t, closedOrNot(ch), "the deliveries channel did not close after its context ended"); open {
		t.Fatal("a delivery after the context ended; want the channel closed")
	}
	if err := q.Publish(context.Background(), rides[1:]); err != nil {
		t.Fatal(err)
	}
	if d, err := q.Depth(context.Background()); err != nil || d.Rides != 1 {
		t.Fatalf("depth after a publish with no consumer: %+v, %v; want the ride kept", d, err)
	}
}

// closedOrNot reports the next receive on ch: whether it held a value.
func closedOrNot(ch <-chan ports.Delivery) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		_, ok := <-ch
		out <- ok
	}()
	return out
}
