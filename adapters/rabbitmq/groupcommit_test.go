package rabbitmq_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/queuetest"
)

// batchingConfig makes rides published together share a message for sure:
// one in-flight slot and a linger far longer than starting the goroutines
// takes, so the test does not depend on the machine's speed.
func batchingConfig() rabbitmq.Config {
	return rabbitmq.Config{PublishChannels: 1, PublishLinger: time.Second, PublishBatch: 1000}
}

// publishTogether publishes the rides from one goroutine each and fails the
// test if any is not confirmed.
func publishTogether(t *testing.T, ctx context.Context, b *rabbitmq.Broker, rides []domain.LiftRide) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(rides))
	for _, r := range rides {
		wg.Go(func() { errs <- b.Publish(ctx, r) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
}

func take(t *testing.T, ctx context.Context, ch <-chan ports.Delivery, n int) []ports.Delivery {
	t.Helper()
	var out []ports.Delivery
	for len(out) < n {
		select {
		case d := <-ch:
			out = append(out, d)
		case <-ctx.Done():
			t.Fatalf("got %d deliveries; want %d", len(out), n)
		}
	}
	return out
}

// deliveredBatch publishes rides together on a fresh broker and takes their
// deliveries.
func deliveredBatch(t *testing.T, rides []domain.LiftRide) (*rabbitmq.Broker, context.Context, <-chan ports.Delivery, []ports.Delivery) {
	t.Helper()
	b := openBroker(t, batchingConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	publishTogether(t, ctx, b, rides)
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b, ctx, ch, take(t, ctx, ch, len(rides))
}

// TestConcurrentPublishesShareOneMessage: rides published at once travel
// in fewer broker messages than rides, and each is still delivered as its
// own ride, once.
func TestConcurrentPublishesShareOneMessage(t *testing.T) {
	b := openBroker(t, batchingConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rides := queuetest.Rides(200, 1)
	publishTogether(t, ctx, b, rides)
	// Depth counts the broker's ready messages (nothing is consumed yet).
	if n, err := b.Depth(ctx); err != nil || n >= int64(len(rides)) {
		t.Fatalf("Depth after %d concurrent publishes = %d, %v; want fewer messages than rides", len(rides), n, err)
	}
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[domain.LiftRide]int{}
	for _, d := range take(t, ctx, ch, len(rides)) {
		got[d.Ride]++
	}
	for _, r := range rides {
		if got[r] != 1 {
			t.Errorf("ride %s delivered %d times; want 1", r.Key(), got[r])
		}
	}
}

// TestRejectedRideOfABatchIsDeadLetteredAlone: the store refuses one ride
// of a batch. That ride, and only it, reaches the dead-letter queue (as a
// message of its own that replay moves back); the batch's other rides are
// acked and the batch message leaves the queue.
func TestRejectedRideOfABatchIsDeadLetteredAlone(t *testing.T) {
	b, ctx, ch, ds := deliveredBatch(t, queuetest.Rides(3, 40))
	if err := b.Reject(ctx, ds[1:2]); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	if err := b.Ack(ctx, []ports.Delivery{ds[0], ds[2]}); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	waitFor(t, 10*time.Second, "the ride queue is empty", func() bool {
		n, err := b.Depth(ctx)
		return err == nil && n == 0
	})
	dls := dlqHolds(t, ctx, b, 1)
	if dls[0].Ride != ds[1].Ride || dls[0].Reason != "rejected" || dls[0].Queue != b.Config().ShardQueue(0) {
		t.Errorf("dead letter = %+v; want ride %s, reason rejected, from %s", dls[0], ds[1].Ride.Key(), b.Config().ShardQueue(0))
	}
	replayExpecting(t, ctx, b, 1)
	if d := take(t, ctx, ch, 1)[0]; d.Ride != ds[1].Ride {
		t.Fatalf("after replay delivered %s; want the rejected ride %s", d.Ride.Key(), ds[1].Ride.Key())
	} else if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
		t.Fatal(err)
	}
}

// TestNackedRideOfABatchRedeliversIt: one ride of a batch handed back
// brings the ride back (with its batch mates: a message is redelivered
// whole, which the idempotent stores absorb).
func TestNackedRideOfABatchRedeliversIt(t *testing.T) {
	b, ctx, ch, ds := deliveredBatch(t, queuetest.Rides(3, 60))
	if err := b.Ack(ctx, []ports.Delivery{ds[0], ds[2]}); err != nil {
		t.Fatal(err)
	}
	if err := b.Nack(ctx, ds[1:2]); err != nil {
		t.Fatal(err)
	}
	again := map[domain.LiftRide]bool{}
	for _, d := range take(t, ctx, ch, 3) {
		again[d.Ride] = true
		if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
			t.Fatal(err)
		}
	}
	if !again[ds[1].Ride] {
		t.Errorf("nacked ride %s was not delivered again", ds[1].Ride.Key())
	}
	dlqHolds(t, ctx, b, 0)
}

// adminChannel is a channel of a connection of the test's own, for
// changing the topology behind the adapter's back.
func adminChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(testURL())
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestPublishToADeletedQueueIsUnavailable: publishing is mandatory, so a
// ride whose queue is gone is refused (503 at the API) instead of being
// confirmed by the broker and dropped.
func TestPublishToADeletedQueueIsUnavailable(t *testing.T) {
	b := openBroker(t, rabbitmq.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Publish(ctx, queuetest.Rides(1, 1)[0]); err != nil {
		t.Fatalf("Publish before the queue is deleted: %v", err)
	}
	if _, err := adminChannel(t).QueueDelete(b.Config().ShardQueue(0), false, false, false); err != nil {
		t.Fatalf("delete %s: %v", b.Config().ShardQueue(0), err)
	}
	err := b.Publish(ctx, queuetest.Rides(1, 2)[0])
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish to a deleted queue = %v; want ErrUnavailable", err)
	}
}

// TestQuorumQueuesDeadLetterAtLeastOnce: the ride queues carry
// x-dead-letter-strategy at-least-once (with reject-publish overflow, which
// it needs). RabbitMQ accepts a redeclaration only with the queue's exact
// arguments, so declaring with them proves them, and declaring without
// the strategy must fail.
func TestQuorumQueuesDeadLetterAtLeastOnce(t *testing.T) {
	b := openBroker(t, rabbitmq.Config{})
	q := b.Config().ShardQueue(0)
	args := amqp.Table{
		amqp.QueueTypeArg:        rabbitmq.QueueTypeQuorum,
		"x-dead-letter-exchange": b.Config().DeadLetterExchange(),
		"x-dead-letter-strategy": "at-least-once",
		amqp.QueueOverflowArg:    amqp.QueueOverflowRejectPublish,
		"x-delivery-limit":       int64(b.Config().DeliveryLimit - 1),
	}
	if _, err := adminChannel(t).QueueDeclare(q, true, false, false, false, args); err != nil {
		t.Fatalf("redeclare %s with at-least-once dead-lettering: %v; want it to match the queue", q, err)
	}
	delete(args, "x-dead-letter-strategy")
	if _, err := adminChannel(t).QueueDeclare(q, true, false, false, false, args); err == nil {
		t.Fatalf("redeclare %s without x-dead-letter-strategy succeeded; want PRECONDITION_FAILED (the queue must have it)", q)
	}
}

// TestBatchAtTheDeliveryLimitIsListedAndReplayedRideByRide: a batch
// message the broker dead-letters whole (its rides kept failing until the
// delivery limit) shows in DLQList as one letter per ride, and DLQReplay
// moves every ride back.
func TestBatchAtTheDeliveryLimitIsListedAndReplayedRideByRide(t *testing.T) {
	const limit = 2
	cfg := batchingConfig()
	cfg.DeliveryLimit = limit
	b := openBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rides := queuetest.Rides(3, 80)
	publishTogether(t, ctx, b, rides)
	ch, err := b.Deliveries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range limit {
		if err := b.Nack(ctx, take(t, ctx, ch, len(rides))); err != nil {
			t.Fatal(err)
		}
	}
	dls := dlqHolds(t, ctx, b, len(rides))
	listed := map[domain.LiftRide]bool{}
	for _, dl := range dls {
		listed[dl.Ride] = true
		if dl.Reason != "delivery_limit" || dl.BodyErr != "" {
			t.Errorf("dead letter %+v; want reason delivery_limit and a readable ride", dl)
		}
	}
	for _, r := range rides {
		if !listed[r] {
			t.Errorf("ride %s of the dead-lettered batch is not listed", r.Key())
		}
	}
	replayExpecting(t, ctx, b, len(rides))
	again := map[domain.LiftRide]bool{}
	for _, d := range take(t, ctx, ch, len(rides)) {
		again[d.Ride] = true
		if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
			t.Fatal(err)
		}
	}
	if len(again) != len(rides) {
		t.Errorf("after replay %d distinct rides delivered; want %d", len(again), len(rides))
	}
}
