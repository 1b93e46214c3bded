package inproc_test

import (
	"context"
	"errors"
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
