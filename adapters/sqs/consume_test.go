package sqs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// TestHeldPastItsVisibilityTimeoutIsExtendedNotRedelivered: a consumer
// holds a delivery unsettled for three visibility timeouts (a slow store
// write); the heartbeat extends it in time (the strict proxy refuses an
// extension that comes after the timeout), so a second consumer on the
// same queue never gets it, and the ack at the end deletes it.
func TestHeldPastItsVisibilityTimeoutIsExtendedNotRedelivered(t *testing.T) {
	const visibility = 2 * time.Second
	q, px, cfg := viaProxy(t, sqs.Config{VisibilityTimeout: visibility}, sqssim.Options{})
	publish(t, q, queuetest.Rides(2, 1))
	ch := deliveries(t, q)
	d := take(t, ch, 1)[0]
	other := openQueue(t, cfg)
	nothingFor(t, ch, deliveries(t, other), 3*visibility, "the message is held by the first consumer, which extends it")
	if got := px.Answered()["ChangeMessageVisibilityBatch"]; got == 0 {
		t.Error("no visibility extension reached SQS; want the heartbeat's")
	}
	ack(t, q, d)
	waitDepth(t, q, "the held message acked", emptyQueue)
}

// TestConsumerThatDiesHoldingMessagesHasThemRedelivered: consumer A acks
// some deliveries and dies holding others (no ack, no nack, no more
// extensions); consumer B gets those once their visibility timeout ends,
// and in the end every published ride was acked: a set of rides, as the
// idempotent stores keep them, holds each exactly once though the held
// ones were delivered twice.
func TestConsumerThatDiesHoldingMessagesHasThemRedelivered(t *testing.T) {
	cfg := testConfig(t, sqs.Config{})
	createQueues(t, cfg)
	pub := openQueue(t, cfg)
	rides := queuetest.Rides(20, 1)
	publishEach(t, pub, rides)
	a := openQueue(t, cfg)
	chA := deliveries(t, a)
	stored := map[domain.LiftRide]bool{}
	delivered := map[domain.LiftRide]int{}
	for _, d := range take(t, chA, 5) {
		ack(t, a, d)
		stored[d.Rides[0]] = true
		delivered[d.Rides[0]]++
	}
	held := take(t, chA, 5)
	for _, d := range held {
		delivered[d.Rides[0]]++
	}
	if err := a.Disconnect(); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}

	b := openQueue(t, cfg)
	chB := deliveries(t, b)
	for len(stored) < len(rides) {
		d := take(t, chB, 1)[0]
		stored[d.Rides[0]] = true
		delivered[d.Rides[0]]++
		ack(t, b, d)
	}
	for _, r := range rides {
		if !stored[r] {
			t.Errorf("ride %s was published but never acked", r.Key())
		}
	}
	if len(stored) != len(rides) {
		t.Errorf("%d distinct rides acked; want the %d published", len(stored), len(rides))
	}
	for _, d := range held {
		if delivered[d.Rides[0]] < 2 {
			t.Errorf("ride %s, held by the consumer that died, was delivered %d times; want it delivered again", d.Rides[0].Key(), delivered[d.Rides[0]])
		}
	}
	waitDepth(t, b, "every ride acked", emptyQueue)
}

// TestCloseHandsBackWhatWasReceivedButNotHandedOut: the poller received
// several messages in one receive and handed out one before Close; the
// others go back to SQS at once, so another consumer gets them long
// before their (one-minute) visibility timeout would have ended.
func TestCloseHandsBackWhatWasReceivedButNotHandedOut(t *testing.T) {
	cfg := testConfig(t, sqs.Config{Pollers: 1, VisibilityTimeout: time.Minute})
	createQueues(t, cfg)
	q := openQueue(t, cfg)
	rides := queuetest.Rides(5, 1)
	publishEach(t, q, rides)
	ch := deliveries(t, q)
	acked := map[domain.LiftRide]bool{}
	first := take(t, ch, 1)[0]
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ack(t, q, first)
	acked[first.Rides[0]] = true
	for d := range ch { // what is still handed out after Close must be acked; then the channel closes
		ack(t, q, d)
		acked[d.Rides[0]] = true
	}
	other := openQueue(t, cfg)
	chOther := deliveries(t, other)
	for len(acked) < len(rides) {
		d := take(t, chOther, 1)[0]
		ack(t, other, d)
		acked[d.Rides[0]] = true
	}
	waitDepth(t, other, "every message acked", emptyQueue)
}

// TestPollersStopReceivingAtMaxHeld: with MaxHeld messages held unsettled
// no poller receives (no ReceiveMessage reaches SQS, however many
// messages wait), and settling some lets them receive again.
func TestPollersStopReceivingAtMaxHeld(t *testing.T) {
	const maxHeld = 10
	q, px, cfg := viaProxy(t, sqs.Config{MaxHeld: maxHeld, Pollers: 2}, sqssim.Options{})
	publishEach(t, q, queuetest.Rides(25, 1))
	ch := deliveries(t, q)
	held := take(t, ch, maxHeld)
	before := px.Answered()["ReceiveMessage"]
	nothingFor(t, ch, nil, 3*cfg.WaitTime, "MaxHeld messages are held")
	if after := px.Answered()["ReceiveMessage"]; after != before {
		t.Errorf("%d receives reached SQS while MaxHeld messages were held; want none", after-before)
	}
	waitDepth(t, q, "the held messages counted", func(d ports.QueueDepth) string {
		if d.Messages != 25 {
			return "not 25 messages"
		}
		return ""
	})
	ack(t, q, held[:5]...)
	more := take(t, ch, 5)
	ack(t, q, append(held[5:], more...)...)
}

// TestAckRetriesEntriesSQSFailedOnItsSide: DeleteMessageBatch answers 200
// with the entry failed on SQS's side, twice; Ack sends it again and
// succeeds, and the message is gone.
func TestAckRetriesEntriesSQSFailedOnItsSide(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	publish(t, q, queuetest.Rides(1, 1))
	d := take(t, deliveries(t, q), 1)[0]
	px.FailEntries("DeleteMessageBatch", 2, sqssim.EntryInternalError)
	ack(t, q, d)
	if got := px.Answered()["DeleteMessageBatch"]; got != 3 {
		t.Errorf("SQS answered %d deletes; want 3 (the entry failed twice, then deleted)", got)
	}
	waitDepth(t, q, "the message deleted", emptyQueue)
}

// TestAckSQSKeepsFailingIsAnErrorAndTheMessageComesBack: the entry fails
// on every try; Ack says so (ErrUnavailable) and the message is delivered
// again once its visibility timeout ends.
func TestAckSQSKeepsFailingIsAnErrorAndTheMessageComesBack(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	rides := queuetest.Rides(2, 1)
	publish(t, q, rides)
	ch := deliveries(t, q)
	d := take(t, ch, 1)[0]
	px.FailEntries("DeleteMessageBatch", 3, sqssim.EntryInternalError)
	if err := q.Ack(sqstest.Context(t), []ports.Delivery{d}); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Ack with the entry failing on every try = %v; want ErrUnavailable", err)
	}
	again := take(t, ch, 1)[0]
	if !slices.Equal(again.Rides, rides) {
		t.Errorf("delivered %v again; want the message SQS did not delete, %v", again.Rides, rides)
	}
	ack(t, q, again)
	waitDepth(t, q, "the message deleted at last", emptyQueue)
}

// TestAckEntryRefusedAsTheSendersFaultIsNotRetried: an entry SQS refuses
// as the sender's fault (a receipt handle it does not know) would fail
// again; Ack reports it at once.
func TestAckEntryRefusedAsTheSendersFaultIsNotRetried(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	publish(t, q, queuetest.Rides(1, 1))
	d := take(t, deliveries(t, q), 1)[0]
	px.FailEntries("DeleteMessageBatch", 1, sqssim.EntryError{Code: "ReceiptHandleIsInvalid", Message: "The input receipt handle is invalid.", SenderFault: true})
	if err := q.Ack(sqstest.Context(t), []ports.Delivery{d}); err == nil {
		t.Fatal("Ack of an entry SQS refused = nil; want the refusal")
	}
	if got := px.Answered()["DeleteMessageBatch"]; got != 1 {
		t.Errorf("SQS answered %d deletes; want 1 (a sender's fault is not retried)", got)
	}
}

// TestSeveralPollersLongPollAtOnceForTenMessagesEach: on an idle queue
// each of Config.Pollers goroutines has a receive of its own waiting at
// once (one poller alone would send its second receive only when its
// 20 s wait ended), each asking for ten messages, SQS's most, with the
// longest wait SQS allows.
func TestSeveralPollersLongPollAtOnceForTenMessagesEach(t *testing.T) {
	const pollers = 3
	type asked struct{ MaxNumberOfMessages, WaitTimeSeconds int }
	var (
		mu       sync.Mutex
		receives []asked
	)
	q, _, _ := viaProxy(t, sqs.Config{Pollers: pollers, WaitTime: sqs.MaxWaitTime}, sqssim.Options{Observe: func(op string, body []byte) {
		if op != "ReceiveMessage" {
			return
		}
		var a asked
		_ = json.Unmarshal(body, &a) // a body it cannot read is recorded as asking for nothing
		mu.Lock()
		receives = append(receives, a)
		mu.Unlock()
	}})
	deliveries(t, q)
	poll.Until(t, sqs.MaxWaitTime/2, "a long poll waiting from every poller", func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(receives) < pollers {
			return fmt.Sprintf("%d receives", len(receives))
		}
		return ""
	})
	mu.Lock()
	defer mu.Unlock()
	for _, a := range receives {
		if a != (asked{10, 20}) {
			t.Errorf("a receive asked for %+v; want ten messages with a 20 s wait", a)
		}
	}
}

// TestAReceiveTakesUpToTenMessages: 25 messages waiting reach the
// consumer in three receives (10, 10, 5), not one receive a message.
func TestAReceiveTakesUpToTenMessages(t *testing.T) {
	q, _ := newQueue(t, sqs.Config{Pollers: 1})
	publishEach(t, q, queuetest.Rides(25, 1))
	ack(t, q, take(t, deliveries(t, q), 25)...)
	// Every receive after the 25th message is empty: the queue holds
	// nothing more.
	if r := q.Requests(); r.Receive-r.EmptyReceive != 3 {
		t.Errorf("25 waiting messages came in %d receives; want 3 (ten a receive)", r.Receive-r.EmptyReceive)
	}
}
