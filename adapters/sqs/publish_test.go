package sqs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/skidata/skidata/adapters/sqs"
	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/queuetest"
	"github.com/skidata/skidata/test/sqstest"
)

// viaProxy makes fresh queues and opens a Queue on them through a strict
// proxy of the test's own, to inject faults and count requests.
func viaProxy(t *testing.T, cfg sqs.Config, opts sqssim.Options) (*sqs.Queue, *sqssim.Proxy, sqs.Config) {
	t.Helper()
	cfg = testConfig(t, cfg)
	createQueues(t, cfg)
	px := sqstest.NewProxy(t, opts)
	cfg.Endpoint = px.URL
	return openQueue(t, cfg), px, cfg
}

// viaToxiproxy makes fresh queues and opens a Queue on them through a
// TCP proxy (toxiproxy, in this process) in front of the test server, to
// cut the network.
func viaToxiproxy(t *testing.T, cfg sqs.Config) (*sqs.Queue, *toxiproxy.Proxy) {
	t.Helper()
	cfg = testConfig(t, cfg)
	createQueues(t, cfg)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(srv, t.Name(), "127.0.0.1:0", strings.TrimPrefix(sqstest.Endpoint(t), "http://"))
	if err := tp.Start(); err != nil {
		t.Fatalf("start toxiproxy: %v", err)
	}
	t.Cleanup(tp.Stop)
	cfg.Endpoint = "http://" + tp.Listen
	return openQueue(t, cfg), tp
}

// consumeAll takes and acks deliveries until the queue is empty and
// returns the rides of each message.
func consumeAll(t *testing.T, q *sqs.Queue, messages int) [][]domain.LiftRide {
	t.Helper()
	var out [][]domain.LiftRide
	for _, d := range take(t, deliveries(t, q), messages) {
		out = append(out, d.Rides)
		ack(t, q, d)
	}
	waitDepth(t, q, "every message acked", emptyQueue)
	return out
}

// TestPublishThrottledIsRetriedAndReturnsOnceAccepted: SQS throttles the
// first two sends; Publish retries (the SDK, with backoff) and returns nil
// only after the third was accepted, and the message is in the queue once.
func TestPublishThrottledIsRetriedAndReturnsOnceAccepted(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	px.Refuse("SendMessage", 2, sqssim.Throttled)
	rides := queuetest.Rides(3, 1)
	publish(t, q, rides)
	if got := px.Answered()["SendMessage"]; got != 3 {
		t.Errorf("SQS answered %d sends; want 3 (two throttled, one accepted)", got)
	}
	if got := q.Requests().Send; got != 3 {
		t.Errorf("Requests().Send = %d; want 3, every attempt SQS answered", got)
	}
	if got := consumeAll(t, q, 1); !slices.Equal(got[0], rides) {
		t.Errorf("delivered %v; want the published message %v", got[0], rides)
	}
}

// TestPublishRefusedOnEveryAttemptIsUnavailable: SQS fails every attempt
// the SDK makes; Publish returns ErrUnavailable (a 503, not a 201) and the
// queue holds nothing.
func TestPublishRefusedOnEveryAttemptIsUnavailable(t *testing.T) {
	q, px, _ := viaProxy(t, sqs.Config{}, sqssim.Options{})
	px.Refuse("SendMessage", 3, sqssim.InternalError)
	err := q.Publish(sqstest.Context(t), queuetest.Rides(1, 1))
	if !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, ports.ErrQueueFull) {
		t.Fatalf("Publish with every attempt failed = %v; want ErrUnavailable (not ErrQueueFull)", err)
	}
	if got := px.Answered()["SendMessage"]; got != 3 {
		t.Errorf("SQS answered %d sends; want the SDK's 3 attempts", got)
	}
	waitDepth(t, q, "nothing was accepted", emptyQueue)
	rides := queuetest.Rides(1, 2)
	publish(t, q, rides) // SQS answers again
	if got := consumeAll(t, q, 1); !slices.Equal(got[0], rides) {
		t.Errorf("delivered %v; want only the message SQS accepted, %v", got[0], rides)
	}
}

func TestPublishOfMoreRidesThanAMessageHoldsIsRefused(t *testing.T) {
	q, _ := newQueue(t, sqs.Config{})
	if err := q.Publish(sqstest.Context(t), queuetest.Rides(sqs.MaxRidesPerMessage+1, 1)); err == nil {
		t.Fatalf("Publish of %d rides succeeded; want an error (a message holds at most %d)", sqs.MaxRidesPerMessage+1, sqs.MaxRidesPerMessage)
	}
	if got := q.Requests().Send; got != 0 {
		t.Errorf("Requests().Send = %d; want nothing sent", got)
	}
}

// TestPublishWhileSQSIsUnreachableIsUnavailableAtOnceThenRecovers: with
// the network to SQS refusing connections, Publish fails with
// ErrUnavailable without waiting for its timeout; once SQS is reachable
// again publishing works, and exactly the accepted messages are delivered.
func TestPublishWhileSQSIsUnreachableIsUnavailableAtOnceThenRecovers(t *testing.T) {
	const timeout = 20 * time.Second
	q, tp := viaToxiproxy(t, sqs.Config{PublishTimeout: timeout})
	rides := queuetest.Rides(3, 1)
	publish(t, q, rides[:1])
	tp.Stop()
	start := time.Now()
	err := q.Publish(sqstest.Context(t), rides[1:2])
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish with SQS unreachable = %v; want ErrUnavailable", err)
	}
	if took := time.Since(start); took >= timeout/2 {
		t.Errorf("Publish with SQS unreachable took %v; want it to fail at once, not near its %v timeout", took, timeout)
	}
	if err := tp.Start(); err != nil {
		t.Fatalf("restart toxiproxy on %s: %v", tp.Listen, err)
	}
	publish(t, q, rides[2:])
	got := consumeAll(t, q, 2)
	slices.SortFunc(got, func(a, b []domain.LiftRide) int { return int(a[0].SkierID() - b[0].SkierID()) })
	if !slices.Equal(got[0], rides[:1]) || !slices.Equal(got[1], rides[2:]) {
		t.Errorf("delivered %v; want the two accepted messages %v and %v", got, rides[:1], rides[2:])
	}
}

// silence makes the toxiproxy drop every byte in one direction
// ("upstream": the requests, "downstream": the answers) until the test
// removes it.
func silence(t *testing.T, tp *toxiproxy.Proxy, stream string) func() {
	t.Helper()
	w, err := tp.Toxics.AddToxicJson(strings.NewReader(`{"name":"silence","type":"timeout","stream":"` + stream + `","attributes":{"timeout":0}}`))
	if err != nil {
		t.Fatalf("add toxic: %v", err)
	}
	return func() {
		if err := tp.Toxics.RemoveToxic(sqstest.Context(t), w.Name); err != nil {
			t.Fatalf("remove toxic: %v", err)
		}
	}
}

// TestPublishToASilentNetworkIsUnavailableAfterItsTimeout: requests that
// vanish on the way to SQS make Publish fail with ErrUnavailable once its
// timeout is up, not hang; nothing was queued, and publishing works again
// once the network carries requests.
func TestPublishToASilentNetworkIsUnavailableAfterItsTimeout(t *testing.T) {
	const timeout = time.Second
	q, tp := viaToxiproxy(t, sqs.Config{PublishTimeout: timeout})
	restore := silence(t, tp, "upstream")
	start := time.Now()
	err := q.Publish(sqstest.Context(t), queuetest.Rides(1, 1))
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish into a silent network = %v; want ErrUnavailable", err)
	}
	if took := time.Since(start); took < timeout || took > 10*timeout {
		t.Errorf("Publish into a silent network returned after %v; want its timeout, %v", took, timeout)
	}
	restore()
	rides := queuetest.Rides(1, 2)
	publish(t, q, rides)
	if got := consumeAll(t, q, 1); !slices.Equal(got[0], rides) {
		t.Errorf("delivered %v; want only %v (the silenced message never reached SQS)", got[0], rides)
	}
}

// TestPublishWhoseAnswerIsLostIsUnavailableAndItsRetryIsHarmless: SQS
// takes the message but its answer never arrives. Publish cannot know,
// and says ErrUnavailable (a 503: the client sends the ride again); the
// ride is then delivered twice, which the stores' idempotency absorbs.
func TestPublishWhoseAnswerIsLostIsUnavailableAndItsRetryIsHarmless(t *testing.T) {
	q, tp := viaToxiproxy(t, sqs.Config{PublishTimeout: time.Second})
	restore := silence(t, tp, "downstream")
	rides := queuetest.Rides(1, 1)
	if err := q.Publish(sqstest.Context(t), rides); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Publish whose answer is lost = %v; want ErrUnavailable", err)
	}
	restore()
	publish(t, q, rides) // the client's retry
	for _, got := range consumeAll(t, q, 2) {
		if !slices.Equal(got, rides) {
			t.Errorf("delivered %v; want %v, twice", got, rides)
		}
	}
}
