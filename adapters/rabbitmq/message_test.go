package rabbitmq_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/amqptest"
	"github.com/skidata/skidata/test/queuetest"
)

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

// deliveredMessage publishes rides as one message on a fresh broker and
// takes its delivery.
func deliveredMessage(t *testing.T, cfg rabbitmq.Config, rides []domain.LiftRide) (*rabbitmq.Broker, context.Context, <-chan ports.Delivery, ports.Delivery) {
	t.Helper()
	b := openBroker(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ch := publishThenConsume(t, ctx, b, rides...)
	return b, ctx, ch, take(t, ctx, ch, 1)[0]
}

func waitEmpty(t *testing.T, ctx context.Context, b *rabbitmq.Broker) {
	t.Helper()
	waitFor(t, 10*time.Second, "the ride queue is empty", func() bool {
		d, err := b.Depth(ctx)
		return err == nil && d.Messages == 0 && d.Rides == 0 // dead letters are counted apart
	})
}

// TestRefusedRidesOfAMessageAreDeadLetteredNamed: the store refuses one
// ride of a message of three. That ride, and only it, reaches the
// dead-letter queue, in a message naming the message it came from, which
// replay moves back; the message leaves the ride queue.
func TestRefusedRidesOfAMessageAreDeadLetteredNamed(t *testing.T) {
	b, ctx, ch, d := deliveredMessage(t, rabbitmq.Config{}, queuetest.Rides(3, 40))
	if err := b.Reject(ctx, d, d.Rides[1:2]); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	waitEmpty(t, ctx, b)
	dls := dlqHolds(t, ctx, b, 1)
	if dls[0].Ride != d.Rides[1] || dls[0].Reason != "rejected" || dls[0].Queue != b.Config().ShardQueue(0) || !strings.HasSuffix(dls[0].MessageID, ".refused") {
		t.Errorf("dead letter = %+v; want ride %s, reason rejected, from %s, named after its message", dls[0], d.Rides[1].Key(), b.Config().ShardQueue(0))
	}
	replayExpecting(t, ctx, b, 1)
	if again := take(t, ctx, ch, 1)[0]; !slices.Equal(again.Rides, d.Rides[1:2]) {
		t.Fatalf("after replay delivered %v; want the refused ride %s", again.Rides, d.Rides[1].Key())
	} else if err := b.Ack(ctx, []ports.Delivery{again}); err != nil {
		t.Fatal(err)
	}
}

// TestMessageWhoseRidesAreAllRefusedIsDeadLetteredByTheBroker: a message
// refused whole goes to the dead-letter queue as it is, with the broker's
// own x-death record.
func TestMessageWhoseRidesAreAllRefusedIsDeadLetteredByTheBroker(t *testing.T) {
	b, ctx, _, d := deliveredMessage(t, rabbitmq.Config{}, queuetest.Rides(2, 50))
	if err := b.Reject(ctx, d, d.Rides); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	waitEmpty(t, ctx, b)
	dls := dlqHolds(t, ctx, b, 2)
	for i, dl := range dls {
		if dl.Ride != d.Rides[i] || dl.Reason != "rejected" || dl.Count != 1 {
			t.Errorf("dead letter %d = %+v; want ride %s, reason rejected (the broker's x-death), count 1", i, dl, d.Rides[i].Key())
		}
	}
}

// adminChannel is a channel of a connection of the test's own, for
// changing the topology behind the adapter's back.
func adminChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(amqptest.URL())
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
	if err := b.Publish(ctx, queuetest.Rides(1, 1)); err != nil {
		t.Fatalf("Publish before the queue is deleted: %v", err)
	}
	if _, err := adminChannel(t).QueueDelete(b.Config().ShardQueue(0), false, false, false); err != nil {
		t.Fatalf("delete %s: %v", b.Config().ShardQueue(0), err)
	}
	err := b.Publish(ctx, queuetest.Rides(1, 2))
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

// TestMessageAtTheDeliveryLimitIsListedAndReplayedRideByRide: a message
// the broker dead-letters whole (its rides kept failing until the delivery
// limit) shows in DLQList as one letter per ride, and DLQReplay moves every
// ride back.
func TestMessageAtTheDeliveryLimitIsListedAndReplayedRideByRide(t *testing.T) {
	const limit = 2
	rides := queuetest.Rides(3, 80)
	b, ctx, ch, d := deliveredMessage(t, rabbitmq.Config{DeliveryLimit: limit}, rides)
	for i := range limit {
		if i > 0 {
			d = take(t, ctx, ch, 1)[0]
		}
		if err := b.Nack(ctx, []ports.Delivery{d}); err != nil {
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
			t.Errorf("ride %s of the dead-lettered message is not listed", r.Key())
		}
	}
	replayExpecting(t, ctx, b, len(rides))
	again := take(t, ctx, ch, 1)[0]
	if !slices.Equal(again.Rides, rides) {
		t.Errorf("after replay delivered %v; want the message's rides %v", again.Rides, rides)
	}
	if err := b.Ack(ctx, []ports.Delivery{again}); err != nil {
		t.Fatal(err)
	}
}
