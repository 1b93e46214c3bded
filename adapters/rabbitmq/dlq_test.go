package rabbitmq_test

import (
	"context"
	"errors"
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
	conn, err := amqp.Dial(amqptest.URL())
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

func dlqHolds(t *testing.T, ctx context.Context, b *rabbitmq.Broker, n int) []rabbitmq.DeadLetter {
	t.Helper()
	var dls []rabbitmq.DeadLetter
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
