// Package queuetest is the contract suite for the queue ports
// (ports.Publisher, ports.Subscriber, ports.QueueStats). Every queue adapter's
// tests call Run with a factory; a queue is done when the suite passes.
//
// Each case gets its own queue from the factory and runs in parallel with the
// others, so the factory must isolate them (a unique queue name per call).
package queuetest

import (
	"context"
	"errors"
	"fmt"
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

// NewQueue returns a fresh, empty queue that holds at most capacity rides
// (0: the adapter's default). It registers its own cleanup with t.Cleanup.
type NewQueue func(t *testing.T, capacity int) Queue

// Deadline bounds every wait in the suite.
const Deadline = 30 * time.Second

// Run runs every case against queues made by newQueue.
func Run(t *testing.T, newQueue NewQueue) {
	cases := []struct {
		name     string
		capacity int
		fn       func(*testing.T, Queue)
	}{
		{"DeliversEveryPublishedRide", 0, testDeliversAll},
		{"ConcurrentPublishesAreEachDeliveredOnce", 0, testConcurrentPublishes},
		{"NackRedelivers", 0, testNackRedelivers},
		{"RejectedIsNotRedelivered", 0, testReject},
		{"UnackedIsNotLostOnClose", 0, testUnackedNotAckedUntilAck},
		{"DepthCountsUntilAcked", 0, testDepth},
		{"PublishBeyondCapacityIsUnavailable", 5, testCapacity},
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

func publish(t *testing.T, q Queue, rides []domain.LiftRide) {
	t.Helper()
	c := ctx(t)
	for _, r := range rides {
		if err := q.Pub.Publish(c, r); err != nil {
			t.Fatalf("Publish(%v): %v", r, err)
		}
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

func testDeliversAll(t *testing.T, q Queue) {
	rides := Rides(300, 1)
	publish(t, q, rides)
	ch := deliveries(t, q)
	seen := map[domain.LiftRide]int{}
	for len(seen) < len(rides) {
		d := next(t, ch)
		seen[d.Ride]++
		if err := q.Sub.Ack(ctx(t), []ports.Delivery{d}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	for _, r := range rides {
		if seen[r] == 0 {
			t.Errorf("ride %v was published but never delivered", r)
		}
	}
}

// testConcurrentPublishes: rides published at the same time (which a
// queue may carry together, e.g. in one broker message) are each delivered
// as its own ride, once, and acking them all empties the queue.
func testConcurrentPublishes(t *testing.T, q Queue) {
	rides := Rides(200, 700)
	var wg sync.WaitGroup
	errs := make(chan error, len(rides))
	for _, r := range rides {
		wg.Go(func() { errs <- q.Pub.Publish(ctx(t), r) })
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
		seen[d.Ride]++
		if err := q.Sub.Ack(ctx(t), []ports.Delivery{d}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	for _, r := range rides {
		if seen[r] != 1 {
			t.Errorf("ride %v delivered %d times; want once", r, seen[r])
		}
	}
	waitDepth(t, q, 0, "every concurrent ride acked")
}

func testNackRedelivers(t *testing.T, q Queue) {
	rides := Rides(3, 100)
	publish(t, q, rides)
	ch := deliveries(t, q)
	first := []ports.Delivery{next(t, ch), next(t, ch), next(t, ch)}
	if err := q.Sub.Nack(ctx(t), first); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	again := map[domain.LiftRide]bool{}
	for len(again) < len(rides) {
		d := next(t, ch)
		again[d.Ride] = true
		if err := q.Sub.Ack(ctx(t), []ports.Delivery{d}); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	for _, r := range rides {
		if !again[r] {
			t.Errorf("ride %v was nacked but not delivered again", r)
		}
	}
}

// testReject: a rejected ride leaves the queue (depth drops to zero with the
// other ride acked), and the next ride published is the next one delivered.
func testReject(t *testing.T, q Queue) {
	rides := Rides(2, 150)
	publish(t, q, rides)
	ch := deliveries(t, q)
	a, b := next(t, ch), next(t, ch)
	if err := q.Sub.Reject(ctx(t), []ports.Delivery{a}); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	if err := q.Sub.Ack(ctx(t), []ports.Delivery{b}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	waitDepth(t, q, 0, "one ride rejected and one acked")
	marker := Rides(1, 160)[0]
	publish(t, q, []domain.LiftRide{marker})
	if d := next(t, ch); d.Ride != marker {
		t.Errorf("after Reject the next delivery is %v; want the ride published next, %v (the rejected ride came back)", d.Ride, marker)
	} else if err := q.Sub.Ack(ctx(t), []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
}

// testUnackedNotAckedUntilAck: a delivered ride keeps counting in the depth
// until it is acknowledged, and an ack of a batch removes exactly that batch.
func testUnackedNotAckedUntilAck(t *testing.T, q Queue) {
	rides := Rides(4, 200)
	publish(t, q, rides)
	ch := deliveries(t, q)
	a, b := next(t, ch), next(t, ch)
	if err := q.Sub.Ack(ctx(t), []ports.Delivery{a, b}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	waitDepth(t, q, 2, "two of four rides acked")
	c, d := next(t, ch), next(t, ch)
	if err := q.Sub.Ack(ctx(t), []ports.Delivery{c, d}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	waitDepth(t, q, 0, "all four rides acked")
	got := map[domain.LiftRide]bool{a.Ride: true, b.Ride: true, c.Ride: true, d.Ride: true}
	if len(got) != 4 {
		t.Errorf("four acks covered %d distinct rides; want 4", len(got))
	}
}

// waitDepth polls Depth until it equals want or the deadline passes.
func waitDepth(t *testing.T, q Queue, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	var got int64
	var err error
	for time.Now().Before(deadline) {
		got, err = q.Stats.Depth(ctx(t))
		if err == nil && got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("Depth after %s = %d, %v; want %d", what, got, err, want)
}

func testDepth(t *testing.T, q Queue) {
	waitDepth(t, q, 0, "nothing published")
	publish(t, q, Rides(7, 300))
	waitDepth(t, q, 7, "seven published")
	ch := deliveries(t, q)
	for range 7 {
		if err := q.Sub.Ack(ctx(t), []ports.Delivery{next(t, ch)}); err != nil {
			t.Fatal(err)
		}
	}
	waitDepth(t, q, 0, "seven acked")
}

func testCapacity(t *testing.T, q Queue) {
	publish(t, q, Rides(5, 400))
	err := q.Pub.Publish(ctx(t), Rides(1, 500)[0])
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish into a full queue = %v; want ErrUnavailable", err)
	}
	// Room comes back once rides are acknowledged.
	ch := deliveries(t, q)
	if err := q.Sub.Ack(ctx(t), []ports.Delivery{next(t, ch)}); err != nil {
		t.Fatal(err)
	}
	waitDepth(t, q, 4, "one of five acked")
	if err := q.Pub.Publish(ctx(t), Rides(1, 501)[0]); err != nil {
		t.Fatalf("Publish after room was made: %v", err)
	}
}

func testClose(t *testing.T, q Queue) {
	rides := Rides(10, 600)
	publish(t, q, rides)
	ch := deliveries(t, q)
	first := next(t, ch)
	if err := q.Sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := q.Sub.Ack(ctx(t), []ports.Delivery{first}); err != nil {
		t.Fatalf("Ack after Close: %v", err)
	}
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
