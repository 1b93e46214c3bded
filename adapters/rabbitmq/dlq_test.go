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

// publishGarbage puts a body no adapter wrote into shard 0's queue.
func publishGarbage(t *testing.T, b *rabbitmq.Broker) {
	t.Helper()
	conn, err := amqp.Dial(amqptest.URL(t))
	if err != nil {
		t.Fatalf("RabbitMQ is needed for this test: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	dc, err := ch.PublishWithDeferredConfirm("", b.Config().ShardQueue(0), false, false, amqp.Publishing{Body: []byte(`{"not":"a ride"}`), MessageId: "garbage"})
	if err != nil || !dc.Wait() {
		t.Fatalf("publish garbage: %v", err)
	}
}

func dlqHolds(t *testing.T, ctx context.Context, b *rabbitmq.Broker, n int) []ports.DeadLetter {
	t.Helper()
	var dls []ports.DeadLetter
	waitFor(t, 20*time.Second, "the dead-letter queue holds the poison", func() bool {
		var err error
		dls, err = b.DLQList(ctx, 10)
		return err == nil && len(dls) == n
	})
	return dls
}

func TestUndecodableBodyIsDeadLetteredAtOnce(t *testing.T) {
	b := openBroker(t, rabbitmq.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publishGarbage(t, b)
	good := queuetest.Rides(1, 7)[0]
	ch := publishThenConsume(t, ctx, b, good)
	// The garbage must never be handed out.
	ackExpecting(t, ctx, b, ch, good, "the good ride behind the garbage")
	dls := dlqHolds(t, ctx, b, 1)
	if dls[0].BodyErr == "" || dls[0].MessageID != "garbage" || dls[0].Queue != b.Config().ShardQueue(0) {
		t.Errorf("dead letter = %+v; want the garbage from %s with its decode error", dls[0], b.Config().ShardQueue(0))
	}
	// Replaying leaves unreadable letters where they are.
	if n, err := b.DLQReplay(ctx); err != nil || n != 0 {
		t.Errorf("DLQReplay = %d, %v; want 0 rides moved", n, err)
	}
	dlqHolds(t, ctx, b, 1)
}

// ackExpecting takes the next delivery, which must begin with want, and
// acks it; what names want in a failure.
func ackExpecting(t *testing.T, ctx context.Context, b *rabbitmq.Broker, ch <-chan ports.Delivery, want domain.LiftRide, what string) {
	t.Helper()
	select {
	case d := <-ch:
		if len(d.Rides) == 0 || d.Rides[0] != want {
			t.Fatalf("delivered %v; want %s, %v", d.Rides, what, want)
		}
		if err := b.Ack(ctx, []ports.Delivery{d}); err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatalf("%s was not delivered", what)
	}
}

// replayExpecting replays the dead-letter queue, which holds one message,
// and fails unless it moved want rides. The letter DLQList just looked at
// returns to the queue asynchronously, so it replays until something moved.
func replayExpecting(t *testing.T, ctx context.Context, b *rabbitmq.Broker, want int) {
	t.Helper()
	moved := 0
	waitFor(t, 10*time.Second, "DLQReplay has moved the dead letter", func() bool {
		n, err := b.DLQReplay(ctx)
		if err != nil {
			t.Fatalf("DLQReplay: %v", err)
		}
		moved += n
		return moved > 0
	})
	if moved != want {
		t.Fatalf("DLQReplay moved %d rides; want %d", moved, want)
	}
}

// testDeliveryLimit nacks one ride until it is dead-lettered, then replays it.
func testDeliveryLimit(t *testing.T, queueType string) {
	const limit = 3
	b := openBroker(t, rabbitmq.Config{QueueType: queueType, DeliveryLimit: limit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ride := queuetest.Rides(1, 9)[0]
	ch := publishThenConsume(t, ctx, b, ride)
	deliveries := 0
	for deliveries < limit {
		select {
		case d := <-ch:
			deliveries++
			if err := b.Nack(ctx, []ports.Delivery{d}); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("ride delivered %d times; want %d before it is dead-lettered", deliveries, limit)
		}
	}
	dls := dlqHolds(t, ctx, b, 1)
	if dls[0].Ride != ride {
		t.Errorf("dead letter holds %v; want %v", dls[0].Ride, ride)
	}
	// The broker made this dead letter itself, past the delivery limit; the
	// depth reports it all the same, for the alert on a non-empty queue.
	// (polled: reading the dead-letter queue holds its messages unacked
	// for a moment, and the broker counts only the ready ones.)
	waitFor(t, 10*time.Second, "Depth counts the dead letter", func() bool {
		d, err := b.Depth(ctx)
		return err == nil && d.DeadLetters == 1
	})
	select {
	case d := <-ch:
		t.Fatalf("ride %v delivered again after %d deliveries; want it dead-lettered", d.Rides, limit)
	default:
	}

	replayExpecting(t, ctx, b, 1)
	ackExpecting(t, ctx, b, ch, ride, "the replayed ride")
	dlqHolds(t, ctx, b, 0)
	waitFor(t, 10*time.Second, "Depth counts no dead letter after the replay", func() bool {
		d, err := b.Depth(ctx)
		return err == nil && d.DeadLetters == 0
	})
}

func TestRideNackedDeliveryLimitTimesIsDeadLetteredQuorum(t *testing.T) {
	testDeliveryLimit(t, rabbitmq.QueueTypeQuorum)
}

func TestRideNackedDeliveryLimitTimesIsDeadLetteredClassic(t *testing.T) {
	testDeliveryLimit(t, rabbitmq.QueueTypeClassic)
}

func TestOpenUnreachableBrokerNamesURLWithoutPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	_, err := rabbitmq.Open(ctx, rabbitmq.Config{URL: "amqp://skier:s3cret@127.0.0.1:1/"})
	if err == nil {
		t.Fatal("Open of an unreachable broker succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") || strings.Contains(msg, "s3cret") || !strings.Contains(msg, "unreachable") {
		t.Errorf("error %q; want it to name 127.0.0.1:1, say unreachable, and hide the password", msg)
	}
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("error %v does not wrap ErrUnavailable", err)
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
	conn, err := amqp.Dial(amqptest.URL(t))
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
