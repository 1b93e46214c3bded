package sqs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skidata/skidata/ports"
)

// reasonRedrive is DeadLetter.Reason for a message SQS moved.
const reasonRedrive = "maxReceiveCount"

// dlqVisibility hides the dead letters a listing or a replay has taken
// from other listers while it runs; a listing makes them visible again
// when it ends.
const dlqVisibility = time.Minute

// dlqWait is a dead-letter receive's wait: a long poll (unlike a short
// one, it asks every SQS server, so an empty answer means empty), short
// because the queue is read to its end.
const dlqWait = time.Second

// receiveDeadLetters takes up to 10 messages off the dead-letter queue,
// hidden for dlqVisibility.
func (q *Queue) receiveDeadLetters(ctx context.Context) ([]types.Message, error) {
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.names.dlqURL),
		MaxNumberOfMessages: MaxBatchEntries,
		WaitTimeSeconds:     int32(dlqWait / time.Second),
		VisibilityTimeout:   int32(dlqVisibility / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameDeadLetterQueueSourceArn,
		},
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", q.names.dlqName, err)
	}
	return out.Messages, nil
}

// deadLettersOf is one dead-letter message as letters: one per ride, or
// one for a body that cannot be read. Reason is "rejected" (the store
// refused the ride) or "unreadable" (a body no release can decode) when
// this adapter dead-lettered it, "maxReceiveCount" when SQS's redrive
// policy moved it; Count is how many times SQS has delivered the
// dead-letter message (its ApproximateReceiveCount; listing it counts
// too).
func (q *Queue) deadLettersOf(m types.Message) []ports.DeadLetter {
	body := aws.ToString(m.Body)
	base := ports.DeadLetter{MessageID: aws.ToString(m.MessageId), Body: []byte(body), Reason: reasonRedrive, Queue: q.names.name}
	if v, ok := m.MessageAttributes[attrReason]; ok {
		base.Reason = aws.ToString(v.StringValue)
	}
	if v, ok := m.MessageAttributes[attrSourceQueue]; ok {
		base.Queue = aws.ToString(v.StringValue)
	} else if arn := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; arn != "" {
		base.Queue = arn[strings.LastIndex(arn, ":")+1:]
	}
	base.Count, _ = strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)], 10, 64)
	rides, err := decodeBody(body)
	if err != nil {
		base.BodyErr = err.Error()
		return []ports.DeadLetter{base}
	}
	out := make([]ports.DeadLetter, len(rides))
	for i, r := range rides {
		out[i] = base
		out[i].Ride = r
	}
	return out
}

// DLQList returns up to limit dead letters (one per ride) without removing
// them: their messages are received, hidden for the listing, and made
// visible again when it ends.
func (q *Queue) DLQList(ctx context.Context, limit int) ([]ports.DeadLetter, error) {
	var out []ports.DeadLetter
	var handles []string
	defer func() {
		if len(handles) > 0 {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
			_, _ = q.changeVisibilityIn(ctx, q.names.dlqURL, handles, 0) // if it fails they reappear after dlqVisibility
		}
	}()
	for len(out) < limit {
		msgs, err := q.receiveDeadLetters(ctx)
		if err != nil {
			return nil, fmt.Errorf("sqs: list dead letters: %w", err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
			out = append(out, q.deadLettersOf(m)...)
		}
	}
	return out[:min(limit, len(out))], nil
}

// DLQReplay moves every readable dead letter back to the ride queue (as
// messages of at most MaxRidesPerMessage rides) and returns how many rides
// it moved. A dead-letter message is deleted only after SQS accepted its
// rides in the ride queue, so a replay that fails half-way loses nothing
// (a ride may then be in both queues, which the idempotent stores absorb).
// Unreadable messages stay in the dead-letter queue.
func (q *Queue) DLQReplay(ctx context.Context) (int, error) {
	waiting, err := q.messagesIn(ctx, q.names.dlqURL)
	if err != nil {
		return 0, fmt.Errorf("sqs: replay dead letters: %w", err)
	}
	var unreadable []string
	defer func() {
		if len(unreadable) > 0 {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
			_, _ = q.changeVisibilityIn(ctx, q.names.dlqURL, unreadable, 0)
		}
	}()
	moved := 0
	// Until the queue is empty, but bounded, so that letters dying again
	// while the replay runs are not replayed in a loop.
	for seen := int64(0); seen < waiting+1000; {
		msgs, err := q.receiveDeadLetters(ctx)
		if err != nil {
			return moved, fmt.Errorf("sqs: replay dead letters (%d rides moved): %w", moved, err)
		}
		if len(msgs) == 0 {
			break
		}
		seen += int64(len(msgs))
		var done []string
		for _, m := range msgs {
			rides, err := decodeBody(aws.ToString(m.Body))
			if err != nil {
				unreadable = append(unreadable, aws.ToString(m.ReceiptHandle))
				continue
			}
			for chunk := range slices.Chunk(rides, MaxRidesPerMessage) {
				if err := q.Publish(ctx, chunk); err != nil {
					return moved, fmt.Errorf("sqs: replay dead letter %s (%d rides moved): %w", aws.ToString(m.MessageId), moved, err)
				}
			}
			done = append(done, aws.ToString(m.ReceiptHandle))
			moved += len(rides)
		}
		if _, err := q.deleteFrom(ctx, q.names.dlqURL, done); err != nil {
			return moved, fmt.Errorf("sqs: remove replayed dead letters from %s (they may be replayed again, harmlessly): %w", q.names.dlqName, err)
		}
	}
	return moved, nil
}
