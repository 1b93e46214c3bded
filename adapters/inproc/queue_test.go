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
	forEachShape(t, testDeliveredInTheOrderPublished)
}

// forEachShape runs a test against a queue whose messages are each one
// publish, and one that gathers them.
func forEachShape(t *testing.T, test func(t *testing.T, opts ...inproc.Option)) {
	t.Run("a message a publish", func(t *testing.T) { test(t) })
	t.Run("gathered", func(t *testing.T) { test(t, inproc.Gather(50, time.Millisecond)) })
}

func testDeliveredInTheOrderPublished(t *testing.T, opts ...inproc.Option) {
	q := inproc.New(1000, opts...)
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
	forEachShape(t, testStoppingWhilePublishing)
}

func testStoppingWhilePublishing(t *testing.T, opts ...inproc.Option) {
	q := inproc.New(100_000, opts...)
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

// gatheringQueue is a queue that gathers rides into messages of at most
// maxRides over linger, and its deliveries.
func gatheringQueue(t *testing.T, maxRides int, linger time.Duration, opts ...inproc.Option) (*inproc.Queue, <-chan ports.Delivery) {
	t.Helper()
	q := inproc.New(1000, append(opts, inproc.Gather(maxRides, linger))...)
	ch, err := q.Deliveries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return q, ch
}

func publishEach(t *testing.T, q *inproc.Queue, rides []domain.LiftRide) {
	t.Helper()
	for i := range rides {
		if err := q.Publish(context.Background(), rides[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
}

// noDelivery fails the test if a delivery is waiting on ch.
func noDelivery(t *testing.T, ch <-chan ports.Delivery, why string) {
	t.Helper()
	select {
	case d := <-ch:
		t.Fatalf("a delivery of %d rides while %s", len(d.Rides), why)
	default:
	}
}

func sameRides(t *testing.T, got, want []domain.LiftRide) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("a delivery of %d rides; want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ride %d of the delivery is %s; want %s", i, got[i].Key(), want[i].Key())
		}
	}
}

// TestGatheredRidesGoAsOneMessageOnceFull: with Gather, rides of separate
// publishes become one message, in order, sent as soon as it holds
// maxRides; the callers' slices are copied, not appended to.
func TestGatheredRidesGoAsOneMessageOnceFull(t *testing.T) {
	q, ch := gatheringQueue(t, 3, time.Hour)
	rides := queuetest.Rides(4, 1)
	first := append(make([]domain.LiftRide, 0, 3), rides[0]) // room behind its ride
	if err := q.Publish(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	publishEach(t, q, rides[1:3])
	d := nextDelivery(t, ch)
	sameRides(t, d.Rides, rides[:3])
	if behind := first[1:3]; behind[0] != (domain.LiftRide{}) || behind[1] != (domain.LiftRide{}) {
		t.Fatal("gathering appended to a publisher's slice")
	}
	if err := q.Publish(context.Background(), rides[3:]); err != nil {
		t.Fatal(err)
	}
	noDelivery(t, ch, "a message of one ride of three is open for an hour")
	if err := q.Ack(context.Background(), []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	if depth, err := q.Depth(context.Background()); err != nil || depth != (ports.QueueDepth{Messages: 1, Rides: 1}) {
		t.Fatalf("depth after acking the gathered message: %+v, %v; want the open one (1 message, 1 ride)", depth, err)
	}
}

// TestAGatheredMessageGoesWhenItsWindowEnds: an open message is sent once
// linger has passed since its first ride, without another publish.
func TestAGatheredMessageGoesWhenItsWindowEnds(t *testing.T) {
	q, ch := gatheringQueue(t, 100, 10*time.Millisecond)
	rides := queuetest.Rides(1, 1)
	publishEach(t, q, rides)
	sameRides(t, nextDelivery(t, ch).Rides, rides)
}

// TestCloseSendsTheOpenMessage: Close does not wait for the window, and a
// publish too big for the open message sends it and opens the next (a
// publish of maxRides or more goes at once, alone).
func TestCloseSendsTheOpenMessage(t *testing.T) {
	q, ch := gatheringQueue(t, 3, time.Hour)
	rides := queuetest.Rides(7, 1)
	if err := q.Publish(context.Background(), rides[:2]); err != nil {
		t.Fatal(err)
	}
	if err := q.Publish(context.Background(), rides[2:4]); err != nil {
		t.Fatal(err)
	}
	sameRides(t, nextDelivery(t, ch).Rides, rides[:2])
	if err := q.Publish(context.Background(), rides[4:7]); err != nil {
		t.Fatal(err)
	}
	sameRides(t, nextDelivery(t, ch).Rides, rides[2:4])
	sameRides(t, nextDelivery(t, ch).Rides, rides[4:7])
	if err := q.Publish(context.Background(), rides[:1]); err != nil {
		t.Fatal(err)
	}
	noDelivery(t, ch, "a message of one ride of three is open for an hour")
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	sameRides(t, nextDelivery(t, ch).Rides, rides[:1])
}

// TestAGatheredMessageNackedIsRedeliveredWhole: a nack hands every ride of
// the gathered message back, delivered again before newer rides.
func TestAGatheredMessageNackedIsRedeliveredWhole(t *testing.T) {
	q, ch := gatheringQueue(t, 2, time.Hour)
	rides := queuetest.Rides(4, 1)
	publishEach(t, q, rides[:2])
	d := nextDelivery(t, ch)
	publishEach(t, q, rides[2:])
	next := nextDelivery(t, ch)
	if err := q.Nack(context.Background(), []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(context.Background(), []ports.Delivery{next}); err != nil {
		t.Fatal(err)
	}
	sameRides(t, nextDelivery(t, ch).Rides, rides[:2])
}

// TestGatherHasNoEffectWithWaitForAck: a publisher that waits for the store
// has its ride delivered at once, alone.
func TestGatherHasNoEffectWithWaitForAck(t *testing.T) {
	q, ch := gatheringQueue(t, 10, time.Hour, inproc.WaitForAck())
	ride := queuetest.Rides(1, 1)[0]
	res := publishAsync(context.Background(), q, ride)
	d := nextDelivery(t, ch)
	sameRides(t, d.Rides, []domain.LiftRide{ride})
	if err := q.Ack(context.Background(), []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	if err := result(t, res); err != nil {
		t.Fatal(err)
	}
}
