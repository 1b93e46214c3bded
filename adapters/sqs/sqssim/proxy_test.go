package sqssim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/skidata/skidata/adapters/sqs/sqssim"
	"github.com/skidata/skidata/test/poll"
	"github.com/skidata/skidata/test/sqstest"
)

func TestMain(m *testing.M) { os.Exit(sqstest.Main(m)) }

// newQueue creates a queue through endpoint and returns its URL.
func newQueue(t *testing.T, c *sqs.Client, attrs map[string]string) *string {
	t.Helper()
	name := sqstest.QueueName(t)
	out, err := c.CreateQueue(sqstest.Context(t), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	sqstest.DeleteQueuesAtEnd(t, sqstest.Endpoint(t), name)
	return out.QueueUrl
}

func send(t *testing.T, c *sqs.Client, url *string, n int) {
	t.Helper()
	for range n {
		if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m")}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
}

func receive(t *testing.T, c *sqs.Client, url *string, max, wait, visibility int32) ([]types.Message, error) {
	t.Helper()
	out, err := c.ReceiveMessage(sqstest.Context(t), &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: max, WaitTimeSeconds: wait, VisibilityTimeout: visibility})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// noRetries is a client that reports the first answer it gets.
func noRetries(endpoint string) *sqs.Client {
	return sqs.New(sqssim.Client(endpoint).Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
}

// strictAndAlone runs check on the strict proxy, which must refuse
// (refused true) what SQS refuses, and on fauxqs alone, which takes it
// (refused false: were fauxqs to refuse it too, the strict layer would no
// longer be needed).
func strictAndAlone(t *testing.T, check func(t *testing.T, endpoint string, refused bool)) {
	for _, via := range []struct {
		what     string
		endpoint string
		refused  bool
	}{
		{"the strict proxy", sqstest.Endpoint(t), true},
		{"fauxqs alone", sqstest.Upstream(t), false},
	} {
		t.Run(via.what, func(t *testing.T) { check(t, via.endpoint, via.refused) })
	}
}

// TestExtendingAVisibilityTimeoutThatHasEndedIsRefused: SQS refuses to
// change the visibility of a message whose timeout has ended
// (MessageNotInflight); fauxqs, which returns such a message to the queue
// only at its next receive, would extend it. The proxy refuses it, alone
// or in a batch.
func TestExtendingAVisibilityTimeoutThatHasEndedIsRefused(t *testing.T) {
	strictAndAlone(t, func(t *testing.T, endpoint string, refused bool) {
		c := sqssim.Client(endpoint)
		url := newQueue(t, c, nil)
		send(t, c, url, 2)
		msgs, err := receive(t, c, url, 2, 0, 1)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("receive = %d messages, %v; want 2", len(msgs), err)
		}
		received := time.Now()
		if _, err := c.ChangeMessageVisibility(sqstest.Context(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 1}); err != nil {
			t.Fatalf("extension within the timeout: %v", err)
		}
		time.Sleep(time.Until(received.Add(2500 * time.Millisecond))) // both timeouts end: the condition under test
		_, err = c.ChangeMessageVisibility(sqstest.Context(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 30})
		batch, berr := c.ChangeMessageVisibilityBatch(sqstest.Context(t), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: msgs[1].ReceiptHandle, VisibilityTimeout: 30}}})
		if berr != nil {
			t.Fatalf("ChangeMessageVisibilityBatch: %v", berr)
		}
		switch {
		case refused && (errorCode(err) != "MessageNotInflight" || len(batch.Failed) != 1 || aws.ToString(batch.Failed[0].Code) != "MessageNotInflight"):
			t.Errorf("extensions after the timeout: %v, failed entries %+v; want both refused, MessageNotInflight", err, batch.Failed)
		case !refused && (err != nil || len(batch.Failed) != 0):
			t.Errorf("fauxqs alone refused a late extension (%v, %+v): the strict layer may no longer be needed", err, batch.Failed)
		}
	})
}

// TestVisibilityPastTwelveHoursSinceTheReceiveIsRefused: SQS caps a
// message's visibility at 12 hours from its receive, extensions included
// (ChangeMessageVisibility); fauxqs checks only each call's own value. The
// proxy refuses an extension whose end is past the cap, alone or in a
// batch, and takes one within it.
func TestVisibilityPastTwelveHoursSinceTheReceiveIsRefused(t *testing.T) {
	const twelveHours = 43_200 // seconds, also each call's own maximum
	strictAndAlone(t, func(t *testing.T, endpoint string, refused bool) {
		c := noRetries(endpoint)
		url := newQueue(t, c, nil)
		send(t, c, url, 2)
		msgs, err := receive(t, c, url, 2, 0, 30)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("receive = %d messages, %v; want 2", len(msgs), err)
		}
		if _, err := c.ChangeMessageVisibility(sqstest.Context(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: twelveHours - 60}); err != nil {
			t.Fatalf("an extension ending within 12 hours of the receive: %v", err)
		}
		// The receive was a moment ago, so 12 hours from now ends past the cap.
		_, err = c.ChangeMessageVisibility(sqstest.Context(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: twelveHours})
		batch, berr := c.ChangeMessageVisibilityBatch(sqstest.Context(t), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: url, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: msgs[1].ReceiptHandle, VisibilityTimeout: twelveHours}}})
		if berr != nil {
			t.Fatalf("ChangeMessageVisibilityBatch: %v", berr)
		}
		switch {
		case refused && (errorCode(err) != "InvalidParameterValue" || len(batch.Failed) != 1 || aws.ToString(batch.Failed[0].Code) != "InvalidParameterValue"):
			t.Errorf("extensions past 12 hours since the receive: %v, failed entries %+v; want both refused, InvalidParameterValue", err, batch.Failed)
		case !refused && (err != nil || len(batch.Failed) != 0):
			t.Errorf("fauxqs alone refused an extension past 12 hours (%v, %+v): the strict layer may no longer be needed", err, batch.Failed)
		}
	})
}

// TestInFlightLimit: at the limit a short poll is refused (OverLimit) and
// a long poll returns nothing, with no error; below it, a receive gets at
// most the room left.
func TestInFlightLimit(t *testing.T) {
	px := sqstest.NewProxy(t, sqssim.Options{InFlightLimit: 3})
	c := noRetries(px.URL)
	url := newQueue(t, c, nil)
	send(t, c, url, 5)
	msgs, err := receive(t, c, url, 10, 0, 30)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("receive of 10 with room for 3 = %d messages, %v; want 3", len(msgs), err)
	}
	if _, err := receive(t, c, url, 1, 0, 30); errorCode(err) != "OverLimit" {
		t.Errorf("short poll at the limit = %v; want OverLimit", err)
	}
	if got, err := receive(t, c, url, 1, 1, 30); err != nil || len(got) != 0 {
		t.Errorf("long poll at the limit = %d messages, %v; want none, no error", len(got), err)
	}
	if _, err := c.DeleteMessage(sqstest.Context(t), &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: msgs[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got, err := receive(t, c, url, 10, 0, 30); err != nil || len(got) != 1 {
		t.Errorf("receive after one delete = %d messages, %v; want 1", len(got), err)
	}
}

func TestRedrivePolicyMustNameAQueueAndACount(t *testing.T) {
	c := sqssim.Client(sqstest.Endpoint(t))
	dlq := newQueue(t, c, nil)
	attrs, err := c.GetQueueAttributes(sqstest.Context(t), &sqs.GetQueueAttributesInput{QueueUrl: dlq, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	arn := attrs.Attributes["QueueArn"]
	for _, c2 := range []struct {
		policy string
		ok     bool
	}{
		{`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":5}`, true},
		{`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"5"}`, true},
		{`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:no-such-queue","maxReceiveCount":5}`, false},
		{`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":0}`, false},
		{`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1001}`, false},
	} {
		name := sqstest.QueueName(t)
		_, err := c.CreateQueue(sqstest.Context(t), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"RedrivePolicy": c2.policy}})
		sqstest.DeleteQueuesAtEnd(t, sqstest.Endpoint(t), name)
		if c2.ok != (err == nil) || (!c2.ok && errorCode(err) != "InvalidParameterValue") {
			t.Errorf("CreateQueue with RedrivePolicy %s = %v; want accepted %v (else InvalidParameterValue)", c2.policy, err, c2.ok)
		}
	}
}

// TestRefuseAndFailEntries: the faults a test injects are answered, in
// order, and then the proxy forwards again; the failed entries of a batch
// are left out and reported, the others done.
func TestRefuseAndFailEntries(t *testing.T) {
	px := sqstest.NewProxy(t, sqssim.Options{})
	c := noRetries(px.URL)
	url := newQueue(t, c, nil)
	px.Refuse("SendMessage", 1, sqssim.Throttled)
	if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m")}); errorCode(err) != "RequestThrottled" {
		t.Errorf("refused send = %v; want RequestThrottled", err)
	}
	px.FailEntries("SendMessageBatch", 1, sqssim.EntryInternalError)
	out, err := c.SendMessageBatch(sqstest.Context(t), &sqs.SendMessageBatchInput{QueueUrl: url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("one")},
		{Id: aws.String("b"), MessageBody: aws.String("two")},
	}})
	if err != nil || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "a" || out.Failed[0].SenderFault || len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "b" {
		t.Fatalf("batch with one entry failed = %+v, %v; want a failed on SQS's side, b sent", out, err)
	}
	if msgs, err := receive(t, c, url, 10, 1, 30); err != nil || len(msgs) != 1 || aws.ToString(msgs[0].Body) != "two" {
		t.Errorf("the queue holds %d messages (%v); want b's alone", len(msgs), err)
	}
	if got := px.Answered(); got["SendMessage"] != 1 || got["SendMessageBatch"] != 1 {
		t.Errorf("Answered = %v; want one send and one batch", got)
	}
}

// TestAMessageCarriesAtMostTenAttributes: SQS refuses a message of 11
// attributes, alone or as a batch entry; fauxqs would take it.
func TestAMessageCarriesAtMostTenAttributes(t *testing.T) {
	c := noRetries(sqstest.Endpoint(t))
	url := newQueue(t, c, nil)
	attrs := func(n int) map[string]types.MessageAttributeValue {
		m := map[string]types.MessageAttributeValue{}
		for i := range n {
			m[fmt.Sprintf("a%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		return m
	}
	if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m"), MessageAttributes: attrs(10)}); err != nil {
		t.Errorf("a message of 10 attributes: %v; want it sent", err)
	}
	if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m"), MessageAttributes: attrs(11)}); errorCode(err) != "InvalidParameterValue" {
		t.Errorf("a message of 11 attributes: %v; want InvalidParameterValue", err)
	}
	out, err := c.SendMessageBatch(sqstest.Context(t), &sqs.SendMessageBatchInput{QueueUrl: url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("ok"), MessageBody: aws.String("m"), MessageAttributes: attrs(1)},
		{Id: aws.String("many"), MessageBody: aws.String("m"), MessageAttributes: attrs(11)},
	}})
	if err != nil || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "many" || !out.Failed[0].SenderFault {
		t.Errorf("a batch with an entry of 11 attributes = %+v, %v; want that entry failed as the sender's fault", out, err)
	}
}

// TestALongPollAnswersEmptyOnlyWhenItsWaitEnds: two long polls wait on an
// empty queue and one message comes. SQS answers a long poll with no
// message only once its wait has ended; fauxqs wakes both, and the one
// that loses the message would answer empty at once (an empty receive
// SQS would not bill). Through the proxy the loser waits on, and takes
// the next message.
func TestALongPollAnswersEmptyOnlyWhenItsWaitEnds(t *testing.T) {
	px := sqstest.NewProxy(t, sqssim.Options{})
	c := sqssim.Client(px.URL)
	url := newQueue(t, c, nil)
	type result struct {
		msgs []types.Message
		err  error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			msgs, err := receive(t, c, url, 1, 10, 30)
			results <- result{msgs, err}
		}()
	}
	poll.Until(t, 10*time.Second, "both long polls waiting at the proxy", func() string {
		if n := px.Answered()["ReceiveMessage"]; n < 2 {
			return fmt.Sprintf("%d receives arrived", n)
		}
		return ""
	})
	send(t, c, url, 1)
	first := <-results
	if first.err != nil || len(first.msgs) != 1 {
		t.Fatalf("the first receive to answer: %d messages, %v; want the message", len(first.msgs), first.err)
	}
	send(t, c, url, 1)
	second := <-results
	if second.err != nil || len(second.msgs) != 1 {
		t.Errorf("the other long poll answered %d messages (%v); want it to wait on and take the second message", len(second.msgs), second.err)
	}
	if n := px.Answered()[sqssim.EmptyReceives]; n != 0 {
		t.Errorf("%d empty receives answered; want none", n)
	}
}

// TestProxyObservesEveryRequestItTakes: Observe is given each request the
// proxy takes, as it arrives, refused ones included, with the body that
// names its queue.
func TestProxyObservesEveryRequestItTakes(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	px := sqstest.NewProxy(t, sqssim.Options{Observe: func(op string, body []byte) {
		var req struct{ QueueUrl, QueueName string }
		_ = json.Unmarshal(body, &req)
		queue := req.QueueName
		if queue == "" {
			queue = path.Base(req.QueueUrl)
		}
		mu.Lock()
		seen = append(seen, op+" "+queue)
		mu.Unlock()
	}})
	c := noRetries(px.URL)
	url := newQueue(t, c, nil)
	name := path.Base(*url)
	px.Refuse("SendMessage", 1, sqssim.Throttled)
	if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m")}); errorCode(err) != "RequestThrottled" {
		t.Fatalf("SendMessage = %v; want it refused", err)
	}
	send(t, c, url, 1)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"CreateQueue " + name, "SendMessage " + name, "SendMessage " + name}
	if !slices.Equal(seen, want) {
		t.Errorf("Observe saw %q; want %q", seen, want)
	}
}

// TestRefuseShareRefusesEveryOperationUntilEnded: with RefuseShare(1, e)
// every request, whatever its operation, is answered e; with share 0
// again they are forwarded.
func TestRefuseShareRefusesEveryOperationUntilEnded(t *testing.T) {
	px := sqstest.NewProxy(t, sqssim.Options{})
	c := noRetries(px.URL)
	url := newQueue(t, c, nil)
	px.RefuseShare(1, sqssim.Throttled)
	if _, err := c.SendMessage(sqstest.Context(t), &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("m")}); errorCode(err) != "RequestThrottled" {
		t.Errorf("send while refusing = %v; want RequestThrottled", err)
	}
	if _, err := receive(t, c, url, 10, 0, 30); errorCode(err) != "RequestThrottled" {
		t.Errorf("receive while refusing = %v; want RequestThrottled", err)
	}
	px.RefuseShare(0, sqssim.Throttled)
	send(t, c, url, 1)
	if msgs, err := receive(t, c, url, 10, 1, 30); err != nil || len(msgs) != 1 {
		t.Errorf("after the refusals ended the queue holds %d messages (%v); want the one sent", len(msgs), err)
	}
}

// TestDuplicateDeliversAMessageTwice: with Duplicate(1) a message
// received is delivered again by the next receive, the same message under
// a receipt handle of its own, which a batch delete and a visibility
// change accept; the copy comes once, and deleting the original leaves
// the queue empty.
func TestDuplicateDeliversAMessageTwice(t *testing.T) {
	px := sqstest.NewProxy(t, sqssim.Options{})
	c := noRetries(px.URL)
	url := newQueue(t, c, nil)
	send(t, c, url, 1)
	px.Duplicate(1)
	first, err := receive(t, c, url, 10, 1, 30)
	if err != nil || len(first) != 1 {
		t.Fatalf("first receive: %d messages, %v; want the message", len(first), err)
	}
	px.Duplicate(0)
	if n, made := px.Copies(), px.Answered()[sqssim.CopiesMade]; n != 1 || made != 1 {
		t.Errorf("Copies = %d before the next receive, %d made; want 1, 1", n, made)
	}
	again, err := receive(t, c, url, 10, 1, 30)
	if err != nil || len(again) != 1 || aws.ToString(again[0].MessageId) != aws.ToString(first[0].MessageId) ||
		aws.ToString(again[0].Body) != aws.ToString(first[0].Body) || aws.ToString(again[0].ReceiptHandle) == aws.ToString(first[0].ReceiptHandle) {
		t.Fatalf("second receive: %+v, %v; want the same message under another receipt handle", again, err)
	}
	if n := px.Copies(); n != 0 {
		t.Errorf("Copies = %d after the copy was delivered; want 0", n)
	}
	if _, err := c.ChangeMessageVisibility(sqstest.Context(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 60}); err != nil {
		t.Errorf("extending the copy: %v", err)
	}
	for _, m := range []types.Message{again[0], first[0]} {
		out, err := c.DeleteMessageBatch(sqstest.Context(t), &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("d"), ReceiptHandle: m.ReceiptHandle}}})
		if err != nil || len(out.Failed) != 0 || len(out.Successful) != 1 {
			t.Errorf("deleting %s: %+v, %v; want it deleted", aws.ToString(m.ReceiptHandle), out, err)
		}
	}
	if msgs, err := receive(t, c, url, 10, 0, 0); err != nil || len(msgs) != 0 {
		t.Errorf("after both deletes a receive got %d messages (%v); want none", len(msgs), err)
	}
}
