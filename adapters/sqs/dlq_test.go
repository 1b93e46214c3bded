package sqs_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// dlqHolds polls DLQList until it lists n letters and returns them.
func dlqHolds(t *testing.T, q *sqs.Queue, n int) []ports.DeadLetter {
	t.Helper()
	var dls []ports.DeadLetter
	poll.Until(t, queuetest.Deadline, fmt.Sprintf("the dead-letter queue lists %d letters", n), func() string {
		var err error
		if dls, err = q.DLQList(sqstest.Context(t), 100); err != nil {
			return err.Error()
		}
		if len(dls) != n {
			return fmt.Sprintf("%d letters", len(dls))
		}
		return ""
	})
	return dls
}

func deadLetters(n int64) func(ports.QueueDepth) string {
	return func(d ports.QueueDepth) string {
		if d.Messages != 0 || d.DeadLetters != n {
			return fmt.Sprintf("want no message waiting and %d dead letters", n)
		}
		return ""
	}
}

// replay runs DLQReplay and fails unless it moved want rides.
func replay(t *testing.T, q *sqs.Queue, want int) {
	t.Helper()
	if n, err := q.DLQReplay(sqstest.Context(t)); err != nil || n != want {
		t.Fatalf("DLQReplay = %d, %v; want %d rides moved", n, err, want)
	}
}

// TestRejectMovesExactlyTheRefusedRidesToTheDLQWithTheReason: the store
// refused one ride of a message of three. That ride, and only it, is in
// the dead-letter queue, marked rejected and naming the ride queue; the
// message has left the ride queue; replay puts the ride back, and it is
// delivered as a message of its own.
func TestRejectMovesExactlyTheRefusedRidesToTheDLQWithTheReason(t *testing.T) {
	q, cfg := newQueue(t, sqs.Config{})
	publish(t, q, queuetest.Rides(3, 40))
	ch := deliveries(t, q)
	d := take(t, ch, 1)[0]
	if err := q.Reject(sqstest.Context(t), d, d.Rides[1:2]); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	waitDepth(t, q, "the message rejected", deadLetters(1))
	dls := dlqHolds(t, q, 1)
	if dl := dls[0]; dl.Ride != d.Rides[1] || dl.Reason != "rejected" || dl.Queue != cfg.Queue || dl.BodyErr != "" || dl.MessageID == "" {
		t.Errorf("dead letter = %+v; want ride %s, reason rejected, from %s", dl, d.Rides[1].Key(), cfg.Queue)
	}
	replay(t, q, 1)
	if again := take(t, ch, 1)[0]; !slices.Equal(again.Rides, d.Rides[1:2]) {
		t.Fatalf("after replay delivered %v; want the refused ride alone, %v", again.Rides, d.Rides[1:2])
	} else {
		ack(t, q, again)
	}
	waitDepth(t, q, "the replayed ride acked", deadLetters(0))
}

// TestRejectThatCannotReachTheDLQHandsTheMessageBack: the dead-letter
// send fails; Reject says so, and the message is delivered again whole
// rather than losing the refused ride.
func TestRejectThatCannotReachTheDLQHandsTheMessageBack(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	rides := queuetest.Rides(2, 1)
	publish(t, q, rides)
	ch := deliveries(t, q)
	d := take(t, ch, 1)[0]
	px.Refuse("SendMessage", 3, sqssim.InternalError)
	if err := q.Reject(sqstest.Context(t), d, d.Rides[:1]); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Reject with the dead-letter queue unreachable = %v; want ErrUnavailable", err)
	}
	if again := take(t, ch, 1)[0]; !slices.Equal(again.Rides, rides) {
		t.Errorf("delivered %v; want the message back whole, %v", again.Rides, rides)
	} else {
		ack(t, q, again)
	}
	waitDepth(t, q, "the message acked, nothing dead-lettered", deadLetters(0))
}

// TestRedrivePolicyMovesAMessageReceivedMaxReceiveCountTimes: a message
// handed back MaxReceiveCount times is moved to the dead-letter queue by
// SQS at its next receive (the redrive policy CreateQueues set), listed
// ride by ride with the reason, and replayed whole.
func TestRedrivePolicyMovesAMessageReceivedMaxReceiveCountTimes(t *testing.T) {
	const limit = 2
	q, cfg := newQueue(t, sqs.Config{MaxReceiveCount: limit})
	rides := queuetest.Rides(3, 80)
	publish(t, q, rides)
	ch := deliveries(t, q)
	for range limit {
		if err := q.Nack(sqstest.Context(t), take(t, ch, 1)); err != nil {
			t.Fatalf("Nack: %v", err)
		}
	}
	waitDepth(t, q, "the message moved by the redrive policy", deadLetters(1))
	dls := dlqHolds(t, q, len(rides))
	for i, dl := range dls {
		if dl.Ride != rides[i] || dl.Reason != "maxReceiveCount" || dl.Queue != cfg.Queue {
			t.Errorf("dead letter %d = %+v; want ride %s, reason maxReceiveCount, from %s", i, dl, rides[i].Key(), cfg.Queue)
		}
	}
	replay(t, q, len(rides))
	again := take(t, ch, 1)[0]
	if !slices.Equal(again.Rides, rides) {
		t.Errorf("after replay delivered %v; want the message's rides %v", again.Rides, rides)
	}
	ack(t, q, again)
	waitDepth(t, q, "the replayed message acked", deadLetters(0))
}

// TestUnreadableMessageIsDeadLetteredAtOnce: a body no release can read is
// never handed out: it goes to the dead-letter queue on its first receive,
// marked unreadable with why, and replay leaves it there.
func TestUnreadableMessageIsDeadLetteredAtOnce(t *testing.T) {
	q, cfg := newQueue(t, sqs.Config{})
	c := sqssim.Client(sqstest.Endpoint(t))
	url, err := c.GetQueueUrl(sqstest.Context(t), &awssqs.GetQueueUrlInput{QueueName: aws.String(cfg.Queue)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(sqstest.Context(t), &awssqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String(`{"not":"a ride"}`)}); err != nil {
		t.Fatal(err)
	}
	good := queuetest.Rides(1, 7)
	publish(t, q, good)
	if d := take(t, deliveries(t, q), 1)[0]; !slices.Equal(d.Rides, good) {
		t.Fatalf("delivered %v; want only the readable message %v", d.Rides, good)
	} else {
		ack(t, q, d)
	}
	waitDepth(t, q, "the unreadable message dead-lettered", deadLetters(1))
	dl := dlqHolds(t, q, 1)[0]
	if dl.Reason != "unreadable" || dl.BodyErr == "" || string(dl.Body) != `{"not":"a ride"}` {
		t.Errorf("dead letter = %+v; want the body as sent, reason unreadable, with its decoding error", dl)
	}
	replay(t, q, 0)
	dlqHolds(t, q, 1)
}

// TestDLQListLeavesTheLettersWhereTheyAre: listing twice lists the same
// letters, and the depth still counts them.
func TestDLQListLeavesTheLettersWhereTheyAre(t *testing.T) {
	q, _ := newQueue(t, sqs.Config{})
	publish(t, q, queuetest.Rides(2, 1))
	d := take(t, deliveries(t, q), 1)[0]
	if err := q.Reject(sqstest.Context(t), d, d.Rides); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	first := dlqHolds(t, q, 2)
	again, err := q.DLQList(sqstest.Context(t), 100)
	if err != nil || !slices.Equal(rideOf(again), rideOf(first)) {
		t.Errorf("second DLQList = %v, %v; want the same letters as the first, %v", again, err, first)
	}
	if one, err := q.DLQList(sqstest.Context(t), 1); err != nil || len(one) != 1 {
		t.Errorf("DLQList(limit 1) = %d letters, %v; want 1", len(one), err)
	}
	waitDepth(t, q, "the letters still counted", deadLetters(1))
}

func rideOf(dls []ports.DeadLetter) []domain.LiftRide {
	out := make([]domain.LiftRide, len(dls))
	for i, dl := range dls {
		out[i] = dl.Ride
	}
	return out
}
