// Package queuetest is the contract suite for the queue ports
// (ports.Publisher, ports.Subscriber, ports.QueueStats). Every queue adapter's
// tests call Run with a factory; a queue is done when the suite passes.
//
// The contract it checks: one Publish call is one message, delivered whole
// (the same rides in the same order, one receipt) until it is settled; Ack
// and Nack settle deliveries whole; Reject settles a delivery naming the
// rides the store refused, which are never delivered again; Depth counts
// messages, and the rides in them, until they are settled; a full queue
// refuses with ErrUnavailable and ports.ErrQueueFull; Close lets what was
// handed out be settled, then closes the deliveries channel.
//
// Each case gets its own queue from the factory and runs in parallel with the
// others, so the factory must isolate them (a unique queue name per call).
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Queue is one isolated queue seen through its three ports.
type Queue struct {
	Pub   ports.Publisher
	Sub   ports.Subscriber
	Stats ports.QueueStats
}

// NewQueue returns a fresh, empty queue that holds at most capacity rides,
// or messages for a queue that counts messages (0: the adapter's default).
// It registers its own cleanup with t.Cleanup.
type NewQueue func(t *testing.T, capacity int) Queue

// capacity is the capacity the full-queue case asks for: a multiple of 1,
// 2 and 3, since a broker may split it evenly over its shard queues.
const capacity = 6

// Deadline bounds every wait in the suite.
const Deadline = 30 * time.Second

// Run runs every case against queues made by newQueue.
func Run(t *testing.T, newQueue NewQueue) {
	cases := []struct {
		name     string
		capacity int
		fn       func(*testing.T, Queue)
	}{
		{"DeliversEachMessageWhole", 0, testDeliversWhole},
		{"ConcurrentPublishesAreEachDeliveredOnce", 0, testConcurrentPublishes},
		{"NackRedeliversTheMessageWhole", 0, testNackRedelivers},
		{"RejectedIsNotRedelivered", 0, testReject},
		{"UnackedIsNotLostOnClose", 0, testUnackedNotAckedUntilAck},
		{"DepthCountsMessagesAndRidesUntilAcked", 0, testDepth},
		{"PublishBeyondCapacityIsQueueFull", capacity, testCapacity},
		{"CloseEndsDeliveries", 0, testClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newQueue(t, c.capacity))
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), Deadline)
	t.Cleanup(cancel)
	return c
}

// Rides returns n distinct rides, skier ids from first on.
func Rides(n int, first domain.SkierID) []domain.LiftRide {
	out := make([]domain.LiftRide, n)
	for i := range out {
		out[i] = domain.MustLiftRide(1, "2024", 1, first+domain.SkierID(i), int32(i%360), 1+int32(i%40))
	}
	return out
}

// publishEach publishes every ride as a message of its own.
func publishEach(t *testing.T, q Queue, rides []domain.LiftRide) {
	t.Helper()
	for _, r := range rides {
		publish(t, q, []domain.LiftRide{r})
	}
}

func publish(t *testing.T, q Queue, rides []domain.LiftRide) {
	t.Helper()
	if err := q.Pub.Publish(ctx(t), rides); err != nil {
		t.Fatalf("Publish(%d rides): %v", len(rides), err)
	}
}

// next waits for one delivery, failing the test after the deadline.
func next(t *testing.T, ch <-chan ports.Delivery) ports.Delivery {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("deliveries channel closed early")
		}
		return d
	case <-time.After(Deadline):
		t.Fatal("no delivery within the deadline")
	}
	return ports.Delivery{}
}

func deliveries(t *testing.T, q Queue) <-chan ports.Delivery {
	t.Helper()
	ch, err := q.Sub.Deliveries(ctx(t))
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	return ch
}

func ack(t *testing.T, q Queue, ds ...ports.Delivery) {
	t.Helper()
	if err := q.Sub.Ack(ctx(t), ds); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

// key names a message by its first ride, which the cases keep distinct.
func key(rides []domain.LiftRide) domain.LiftRide { return rides[0] }

// testDeliversWhole: every message is delivered once, as it was published:
// the same rides, in the same order, in one delivery.
func testDeliversWhole(t *testing.T, q Queue) {
	rides := Rides(1+3+7+50+1, 1)
	var msgs [][]domain.LiftRide
	for _, n := range []int{1, 3, 7, 50, 1} {
		msgs, rides = append(msgs, rides[:n]), rides[n:]
	}
	for _, m := range msgs {
		publish(t, q, m)
	}
	ch := deliveries(t, q)
	got := map[domain.LiftRide][]domain.LiftRide{}
	for range msgs {
		d := next(t, ch)
		if _, dup := got[key(d.Rides)]; dup {
			t.Errorf("message of %s delivered twice", key(d.Rides).Key())
		}
		got[key(d.Rides)] = d.Rides
		ack(t, q, d)
	}
	for _, m := range msgs {
		if !slices.Equal(got[key(m)], m) {
			t.Errorf("message of %d rides from %s delivered as %d rides; want it whole, in order", len(m), key(m).Key(), len(got[key(m)]))
		}
	}
	waitDepth(t, q, ports.QueueDepth{}, "every message acked")
}

// testConcurrentPublishes: messages published at the same time are each
// delivered once, and acking them all empties the queue.
func testConcurrentPublishes(t *testing.T, q Queue) {
	rides := Rides(200, 700)
	var wg sync.WaitGroup
	errs := make(chan error, len(rides))
	for _, r := range rides {
		wg.Go(func() { errs <- q.Pub.Publish(ctx(t), []domain.LiftRide{r}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	ch := deliveries(t, q)
	seen := map[domain.LiftRide]int{}
	for range rides {
		d := next(t, ch)
		for _, r := range d.Rides {
			seen[r]++
		}
		ack(t, q, d)
	}
	for _, r := range rides {
		if seen[r] != 1 {
			t.Errorf("ride %v delivered %d times; want once", r, seen[r])
		}
	}
	waitDepth(t, q, ports.QueueDepth{}, "every concurrent message acked")
}

// testNackRedelivers: nacked messages come back whole.
func testNackRedelivers(t *testing.T, q Queue) {
	rides := Rides(6, 100)
	msgs := [][]domain.LiftRide{rides[:1], rides[1:3], rides[3:]}
	for _, m := range msgs {
		publish(t, q, m)
	}
	ch := deliveries(t, q)
	first := []ports.Delivery{next(t, ch), next(t, ch), next(t, ch)}
	if err := q.Sub.Nack(ctx(t), first); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	again := map[domain.LiftRide][]domain.LiftRide{}
	for len(again) < len(msgs) {
		d := next(t, ch)
		again[key(d.Rides)] = d.Rides
		ack(t, q, d)
	}
	for _, m := range msgs {
		if !slices.Equal(again[key(m)], m) {
			t.Errorf("message from %s nacked and delivered again as %v; want it whole", key(m).Key(), again[key(m)])
		}
	}
}

// testReject: a message rejected with some rides named refused leaves the
// queue (depth drops to zero with the other message acked) and is not
// delivered again: the next message published is the next one delivered.
func testReject(t *testing.T, q Queue) {
	rides := Rides(4, 150)
	publish(t, q, rides[:3])
	publish(t, q, rides[3:])
	ch := deliveries(t, q)
	a, b := next(t, ch), next(t, ch)
	if len(a.Rides) != 3 {
		a, b = b, a
	}
	if err := q.Sub.Reject(ctx(t), a, a.Rides[1:2]); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	ack(t, q, b)
	waitDepth(t, q, ports.QueueDepth{}, "one message rejected and one acked")
	marker := Rides(1, 160)
	publish(t, q, marker)
	if d := next(t, ch); !slices.Equal(d.Rides, marker) {
		t.Errorf("after Reject the next delivery is %v; want the message published next, %v (the rejected message came back)", d.Rides, marker)
	} else {
		ack(t, q, d)
	}
}

// testUnackedNotAckedUntilAck: a delivered message keeps counting in the
// depth until it is acknowledged, and an ack of several removes exactly
// those.
func testUnackedNotAckedUntilAck(t *testing.T, q Queue) {
	publishEach(t, q, Rides(4, 200))
	ch := deliveries(t, q)
	a, b := next(t, ch), next(t, ch)
	ack(t, q, a, b)
	waitDepth(t, q, ports.QueueDepth{Messages: 2, Rides: 2}, "two of four messages acked")
	c, d := next(t, ch), next(t, ch)
	ack(t, q, c, d)
	waitDepth(t, q, ports.QueueDepth{}, "all four messages acked")
	got := map[domain.LiftRide]bool{key(a.Rides): true, key(b.Rides): true, key(c.Rides): true, key(d.Rides): true}
	if len(got) != 4 {
		t.Errorf("four acks covered %d distinct messages; want 4", len(got))
	}
}

// waitDepth polls Depth until it equals want or the deadline passes.
// The work waiting (messages and rides) is compared; a dead letter is no
// longer waiting work, and the queues that have a dead-letter queue count
// it apart (DeadLetters), which their own tests check.
func waitDepth(t *testing.T, q Queue, want ports.QueueDepth, what string) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	var got ports.QueueDepth
	var err error
	for time.Now().Before(deadline) {
		got, err = q.Stats.Depth(ctx(t))
		if err == nil && got.Messages == want.Messages && got.Rides == want.Rides {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("Depth after %s = %+v, %v; want %+v", what, got, err, want)
}

// testDepth: Depth counts messages and their rides, waiting or handed out,
// until they are acknowledged. (A broker counts messages only and may
// estimate the rides of those not yet handed out from the messages it has
// seen; the messages here are of one size, so the estimate is exact.)
func testDepth(t *testing.T, q Queue) {
	waitDepth(t, q, ports.QueueDepth{}, "nothing published")
	rides := Rides(9, 300)
	for m := range slices.Chunk(rides, 3) {
		publish(t, q, m)
	}
	waitDepth(t, q, ports.QueueDepth{Messages: 3, Rides: 9}, "three messages of three rides published")
	ch := deliveries(t, q)
	a := next(t, ch)
	waitDepth(t, q, ports.QueueDepth{Messages: 3, Rides: 9}, "one of three handed out")
	ack(t, q, a)
	waitDepth(t, q, ports.QueueDepth{Messages: 2, Rides: 6}, "one of three acked")
	ack(t, q, next(t, ch), next(t, ch))
	waitDepth(t, q, ports.QueueDepth{}, "three acked")
}

// testCapacity: a full queue refuses with ErrUnavailable and ErrQueueFull
// (backpressure, not a broken queue), and takes rides again once some are
// acknowledged.
func testCapacity(t *testing.T, q Queue) {
	publishEach(t, q, Rides(capacity, 400))
	err := q.Pub.Publish(ctx(t), Rides(1, 500))
	if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, ports.ErrQueueFull) {
		t.Fatalf("Publish into a full queue = %v; want ErrUnavailable and ports.ErrQueueFull", err)
	}
	ch := deliveries(t, q)
	ack(t, q, next(t, ch))
	waitDepth(t, q, ports.QueueDepth{Messages: capacity - 1, Rides: capacity - 1}, "one acked")
	if err := q.Pub.Publish(ctx(t), Rides(1, 501)); err != nil {
		t.Fatalf("Publish after room was made: %v", err)
	}
}

func testClose(t *testing.T, q Queue) {
	publishEach(t, q, Rides(10, 600))
	ch := deliveries(t, q)
	first := next(t, ch)
	if err := q.Sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ack(t, q, first)
	// Whatever is still handed out after Close must be acked; then the
	// channel must close.
	deadline := time.After(Deadline)
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				return
			}
			if err := q.Sub.Ack(ctx(t), []ports.Delivery{d}); err != nil {
				t.Fatal(fmt.Errorf("Ack while draining: %w", err))
			}
		case <-deadline:
			t.Fatal("deliveries channel still open after Close and the deadline")
		}
	}
}
