package sqs

import (
	"context"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/skidata/skidata/ports"
)

// Requests counts the requests SQS answered (every attempt the SDK made
// that got an HTTP answer, errors and retries included: what reached SQS),
// by kind, and the request units AWS bills for them.
type Requests struct {
	// Send is SendMessage and SendMessageBatch requests.
	Send int64
	// Receive is ReceiveMessage requests, the empty ones included.
	Receive int64
	// EmptyReceive is the ReceiveMessage requests that returned no message
	// (a long poll that waited the whole WaitTime, or a receive that lost
	// the race for a message to another poller).
	EmptyReceive int64
	// Delete is DeleteMessage and DeleteMessageBatch requests.
	Delete int64
	// ChangeVisibility is ChangeMessageVisibility(Batch) requests: the
	// nacks and the extensions of messages held long.
	ChangeVisibility int64
	// GetAttributes is GetQueueAttributes requests: the depth samples.
	GetAttributes int64
	// Other is every other request (GetQueueUrl at Open, CreateQueue,
	// SetQueueAttributes).
	Other int64
	// Billed is the request units AWS bills: one a request, and one more
	// for each further 64 KiB (BillingChunk) of payload it carries (the
	// messages sent, or received).
	Billed int64
}

// Total is every request SQS answered.
func (r Requests) Total() int64 {
	return r.Send + r.Receive + r.Delete + r.ChangeVisibility + r.GetAttributes + r.Other
}

// requestCounters is Requests, counted concurrently, and reported to
// metrics as they are counted.
type requestCounters struct {
	send, receive, emptyReceive, delete, changeVisibility, getAttributes, other, billed atomic.Int64
	metrics                                                                             ports.Metrics
}

func (c *requestCounters) snapshot() Requests {
	return Requests{
		Send: c.send.Load(), Receive: c.receive.Load(), EmptyReceive: c.emptyReceive.Load(), Delete: c.delete.Load(),
		ChangeVisibility: c.changeVisibility.Load(), GetAttributes: c.getAttributes.Load(), Other: c.other.Load(), Billed: c.billed.Load(),
	}
}

// count records one answered request of operation op, which sent sent
// bytes of messages; result is its output, nil when it failed.
func (c *requestCounters) count(op string, sent int, result any) {
	payload, empty := sent, false
	switch op {
	case "SendMessage", "SendMessageBatch":
		c.send.Add(1)
	case "ReceiveMessage":
		c.receive.Add(1)
		if out, ok := result.(*sqs.ReceiveMessageOutput); ok {
			if empty = len(out.Messages) == 0; empty {
				c.emptyReceive.Add(1)
			}
			for _, m := range out.Messages {
				payload += messageSize(m.Body, m.MessageAttributes)
			}
		}
	case "DeleteMessage", "DeleteMessageBatch":
		c.delete.Add(1)
	case "ChangeMessageVisibility", "ChangeMessageVisibilityBatch":
		c.changeVisibility.Add(1)
	case "GetQueueAttributes":
		c.getAttributes.Add(1)
	default:
		c.other.Add(1)
	}
	units := billedUnits(payload)
	c.billed.Add(units)
	c.metrics.QueueRequest(op, int(units), empty)
}

// billedUnits is what a request carrying payload bytes of messages bills:
// one unit per started 64 KiB, and at least one.
func billedUnits(payload int) int64 {
	return max(1, int64((payload+BillingChunk-1)/BillingChunk))
}

// messageSize is a message's size as SQS counts it: the body and each
// attribute's name, type and value.
func messageSize(body *string, attrs map[string]types.MessageAttributeValue) int {
	n := 0
	if body != nil {
		n += len(*body)
	}
	for name, a := range attrs {
		n += len(name)
		if a.DataType != nil {
			n += len(*a.DataType)
		}
		if a.StringValue != nil {
			n += len(*a.StringValue)
		}
		n += len(a.BinaryValue)
	}
	return n
}

// sentPayload is the size of the messages a request sends (0 for one that
// sends none).
func sentPayload(params any) int {
	n := 0
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		n = messageSize(in.MessageBody, in.MessageAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			n += messageSize(e.MessageBody, e.MessageAttributes)
		}
	}
	return n
}

type sentPayloadKey struct{}

// countRequests adds the counting to a client's every operation: the size
// of what it sends is read from its input once, and each attempt that SQS
// answered is counted after it is deserialized (the retry loop runs around
// the deserialize step, so every attempt passes through it).
func countRequests(c *requestCounters) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("skidataSentPayload", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if n := sentPayload(in.Parameters); n > 0 {
				ctx = middleware.WithStackValue(ctx, sentPayloadKey{}, n)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
		if err != nil {
			return err
		}
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("skidataCountRequests", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil {
				sent, _ := middleware.GetStackValue(ctx, sentPayloadKey{}).(int)
				var result any
				if err == nil {
					result = out.Result
				}
				c.count(awsmiddleware.GetOperationName(ctx), sent, result)
			}
			return out, md, err
		}), middleware.Before)
	}
}
