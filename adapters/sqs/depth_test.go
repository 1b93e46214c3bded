package sqs_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// TestDepthIsReadAtMostOncePerInterval: however often and however many
// callers ask, one depth sample (one GetQueueAttributes of each queue)
// serves for DepthInterval; a new one is read only once it has passed.
func TestDepthIsReadAtMostOncePerInterval(t *testing.T) {
	const interval = 2 * time.Second
	q, px, _ := viaProxy(t, sqs.Config{DepthInterval: interval}, sqssim.Options{})
	start := time.Now()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := q.Depth(sqstest.Context(t)); err != nil {
				t.Errorf("Depth: %v", err)
			}
		})
	}
	wg.Wait()
	reads := func() int { return px.Answered()["GetQueueAttributes"] }
	if got := reads(); got != 2 {
		t.Fatalf("50 concurrent Depth calls within the interval read the queues %d times; want 2 (the ride queue and the dead-letter queue, once)", got)
	}
	if got := q.Requests().GetAttributes; got != int64(reads()) {
		t.Errorf("Requests().GetAttributes = %d; SQS answered %d", got, reads())
	}
	// Asked without pause, the next sample comes once the interval has
	// passed, not before.
	first := reads()
	poll.Until(t, queuetest.Deadline, "a second sample", func() string {
		if _, err := q.Depth(sqstest.Context(t)); err != nil {
			return err.Error()
		}
		if reads() == first {
			return "no new sample"
		}
		return ""
	})
	if took := time.Since(start); took < interval {
		t.Errorf("a new sample was read %v after the first; want no sooner than the interval, %v", took, interval)
	}
}

// TestDepthCountsMessagesAndEstimatesRides: Depth counts the messages,
// visible and in flight, and estimates the rides from the mean rides per
// message this process has seen.
func TestDepthCountsMessagesAndEstimatesRides(t *testing.T) {
	q, _ := newQueue(t, sqs.Config{})
	for _, n := range []int{2, 4, 6} {
		publish(t, q, queuetest.Rides(n, domain.SkierID(10*n)))
	}
	want := ports.QueueDepth{Messages: 3, Rides: 12}
	waitDepth(t, q, "three messages of 2, 4 and 6 rides", func(d ports.QueueDepth) string {
		if d != want {
			return fmt.Sprintf("want %+v", want)
		}
		return ""
	})
	d := take(t, deliveries(t, q), 1)[0] // in flight still counts
	waitDepth(t, q, "one in flight", func(d ports.QueueDepth) string {
		if d != want {
			return fmt.Sprintf("want %+v", want)
		}
		return ""
	})
	ack(t, q, d)
	waitDepth(t, q, "one acked", func(d ports.QueueDepth) string {
		if d.Messages != 2 {
			return "want 2 messages"
		}
		return ""
	})
}

// TestRequestCountersCountWhatReachedSQS: the adapter's own counters agree
// with what SQS (the strict proxy) answered, throttled attempts and empty
// receives included; with every message within one 64 KiB chunk, each
// request bills one unit.
func TestRequestCountersCountWhatReachedSQS(t *testing.T) {
	m := &requestMetrics{}
	q, px, _ := viaProxy(t, sqs.Config{Pollers: 1, Metrics: m}, sqssim.Options{})
	px.Refuse("SendMessage", 1, sqssim.Throttled)
	publishEach(t, q, queuetest.Rides(3, 1))
	ch := deliveries(t, q)
	ds := take(t, ch, 3)
	ack(t, q, ds[:2]...)
	if err := q.Nack(sqstest.Context(t), ds[2:]); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	ack(t, q, take(t, ch, 1)...)
	waitDepth(t, q, "every message acked", emptyQueue)
	poll.Until(t, queuetest.Deadline, "an empty receive counted", func() string {
		if q.Requests().EmptyReceive == 0 {
			return "none"
		}
		return ""
	})
	if err := q.Disconnect(); err != nil {
		t.Fatal(err)
	}
	got := q.Requests()
	// A receive Disconnect cancels reached SQS, which answers it (empty)
	// after its wait, but its answer never reaches the adapter: the proxy
	// may count one receive more.
	poll.Until(t, queuetest.Deadline, "the proxy's empty receives settled", func() string {
		a := px.Answered()
		if a["ReceiveMessage"]-int(got.Receive) != a[sqssim.EmptyReceives]-int(got.EmptyReceive) {
			return fmt.Sprintf("proxy: %d receives, %d empty; adapter: %d, %d", a["ReceiveMessage"], a[sqssim.EmptyReceives], got.Receive, got.EmptyReceive)
		}
		return ""
	})
	a := px.Answered()
	for _, c := range []struct {
		what        string
		have, proxy int
	}{
		{"Send", int(got.Send), a["SendMessage"] + a["SendMessageBatch"]},
		{"Delete", int(got.Delete), a["DeleteMessage"] + a["DeleteMessageBatch"]},
		{"ChangeVisibility", int(got.ChangeVisibility), a["ChangeMessageVisibility"] + a["ChangeMessageVisibilityBatch"]},
		{"GetAttributes", int(got.GetAttributes), a["GetQueueAttributes"]},
		{"Other", int(got.Other), a["GetQueueUrl"]},
	} {
		if c.have != c.proxy {
			t.Errorf("Requests().%s = %d; SQS answered %d", c.what, c.have, c.proxy)
		}
	}
	if d := a["ReceiveMessage"] - int(got.Receive); d < 0 || d > 1 {
		t.Errorf("Requests().Receive = %d; SQS answered %d", got.Receive, a["ReceiveMessage"])
	}
	if got.Send != 4 || got.Delete != 2 || got.ChangeVisibility != 1 {
		t.Errorf("counted %+v; want 4 sends (one throttled), 2 deletes, 1 visibility change", got)
	}
	if got.Billed != got.Total() {
		t.Errorf("Billed = %d for %d requests; want one unit each, every payload being under 64 KiB", got.Billed, got.Total())
	}
	if reported := m.requests(); reported != got {
		t.Errorf("reported to the metrics %+v; want what Requests counts, %+v", reported, got)
	}
}

// requestMetrics records what the adapter reports to ports.Metrics of its
// requests and its receive lag, as Requests would count them.
type requestMetrics struct {
	ports.NopMetrics
	mu      sync.Mutex
	counted sqs.Requests
	lag     time.Duration
}

func (m *requestMetrics) QueueRequest(api string, billed int, empty bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.counted
	switch api {
	case "SendMessage", "SendMessageBatch":
		c.Send++
	case "ReceiveMessage":
		c.Receive++
	case "DeleteMessage", "DeleteMessageBatch":
		c.Delete++
	case "ChangeMessageVisibility", "ChangeMessageVisibilityBatch":
		c.ChangeVisibility++
	case "GetQueueAttributes":
		c.GetAttributes++
	default:
		c.Other++
	}
	if empty {
		c.EmptyReceive++
	}
	c.Billed += int64(billed)
}

func (m *requestMetrics) QueueReceiveLag(lag time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag = lag
}

func (m *requestMetrics) requests() sqs.Requests {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counted
}

func (m *requestMetrics) receiveLag() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lag
}

// TestBilledUnitsCountEach64KiBOfPayload: a request bills one unit per
// started 64 KiB of the messages it sends or receives, and at least one.
func TestBilledUnitsCountEach64KiBOfPayload(t *testing.T) {
	body := func(n int) *string { return aws.String(strings.Repeat("x", n)) }
	for _, c := range []struct {
		what   string
		op     string
		sent   int
		result any
		want   sqs.Requests
	}{
		{"a small send", "SendMessage", 100, nil, sqs.Requests{Send: 1, Billed: 1}},
		{"a send of 64 KiB", "SendMessage", sqs.BillingChunk, nil, sqs.Requests{Send: 1, Billed: 1}},
		{"a send of a byte more", "SendMessageBatch", sqs.BillingChunk + 1, nil, sqs.Requests{Send: 1, Billed: 2}},
		{"an empty receive", "ReceiveMessage", 0, &awssqs.ReceiveMessageOutput{}, sqs.Requests{Receive: 1, EmptyReceive: 1, Billed: 1}},
		{"a receive of three 60,000-byte messages", "ReceiveMessage", 0, &awssqs.ReceiveMessageOutput{Messages: []types.Message{{Body: body(60_000)}, {Body: body(60_000)}, {Body: body(60_000)}}}, sqs.Requests{Receive: 1, Billed: 3}},
		{"a receive whose attributes cross a chunk", "ReceiveMessage", 0, &awssqs.ReceiveMessageOutput{Messages: []types.Message{{Body: body(sqs.BillingChunk - 10), MessageAttributes: map[string]types.MessageAttributeValue{"reason": {DataType: aws.String("String"), StringValue: aws.String("rejected")}}}}}, sqs.Requests{Receive: 1, Billed: 2}},
		{"a failed receive", "ReceiveMessage", 0, nil, sqs.Requests{Receive: 1, Billed: 1}},
		{"a delete", "DeleteMessageBatch", 0, nil, sqs.Requests{Delete: 1, Billed: 1}},
		{"a visibility change", "ChangeMessageVisibilityBatch", 0, nil, sqs.Requests{ChangeVisibility: 1, Billed: 1}},
		{"a depth read", "GetQueueAttributes", 0, nil, sqs.Requests{GetAttributes: 1, Billed: 1}},
		{"a queue lookup", "GetQueueUrl", 0, nil, sqs.Requests{Other: 1, Billed: 1}},
	} {
		if got := sqs.CountRequest(c.op, c.sent, c.result); got != c.want {
			t.Errorf("%s: counted %+v; want %+v", c.what, got, c.want)
		}
	}
}

// TestReceivingMessagesOfMoreThan64KiBBillsTheirChunks: two messages of a
// full chunk each, received in one receive, bill that receive two units;
// sending each billed one.
func TestReceivingMessagesOfMoreThan64KiBBillsTheirChunks(t *testing.T) {
	q, _ := newQueue(t, sqs.Config{Pollers: 1})
	full := make([]domain.LiftRide, sqs.MaxRidesPerMessage)
	for i := range full {
		full[i] = widest
	}
	publish(t, q, full)
	publish(t, q, full)
	if got := q.Requests(); got.Billed != got.Total() {
		t.Fatalf("after two sends of one chunk each: %+v; want one unit a request", got)
	}
	ds := take(t, deliveries(t, q), 2)
	ack(t, q, ds...)
	got := q.Requests()
	if extra := got.Billed - got.Total(); extra != 1 {
		t.Errorf("receiving two full-chunk messages billed %d units beyond one a request; want 1 (both came in one receive of two chunks)", extra)
	}
}

// TestReceiveLagIsTheAgeOfTheOldestMessageReceived: a message that waited
// in the queue is received with its age, and once a receive finds the
// queue empty the lag is 0 again; the metrics are told both.
func TestReceiveLagIsTheAgeOfTheOldestMessageReceived(t *testing.T) {
	const aged = 300 * time.Millisecond
	m := &requestMetrics{}
	q, _ := newQueue(t, sqs.Config{Metrics: m})
	sent := time.Now()
	publish(t, q, queuetest.Rides(1, 1))
	time.Sleep(aged) // the message ages in the queue: the condition under test, not a wait for a result
	d := take(t, deliveries(t, q), 1)[0]
	if lag := q.ReceiveLag(); lag < aged-10*time.Millisecond || lag > time.Since(sent)+10*time.Millisecond {
		t.Errorf("ReceiveLag = %v; want the message's age at its receive, between %v and %v", lag, aged, time.Since(sent))
	}
	if lag := m.receiveLag(); lag < aged-10*time.Millisecond {
		t.Errorf("the metrics were told a receive lag of %v; want the message's age, at least %v", lag, aged)
	}
	ack(t, q, d)
	poll.Until(t, queuetest.Deadline, "a receive finding the queue empty", func() string {
		if lag, told := q.ReceiveLag(), m.receiveLag(); lag != 0 || told != 0 {
			return fmt.Sprintf("ReceiveLag %v, told the metrics %v", lag, told)
		}
		return ""
	})
}
