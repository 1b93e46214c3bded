package sqs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v5"

	"github.com/skidata/skidata/domain"
)

// settleTries is how many times in all an entry of a batch request that
// SQS failed on its side (SenderFault false) is sent: the SDK retries a
// request that fails as a whole, but a request answered 200 with some
// entries failed is the caller's to retry.
const settleTries = 3

// inBatches sends handles through send, ten a request; send returns the
// entries that failed, their Id being the index in the chunk it was given.
// Entries SQS failed on its side are sent again with backoff, up to
// settleTries times in all. It returns the handles that still failed, and
// an error naming why.
func inBatches(ctx context.Context, handles []string, send func(context.Context, []string) ([]types.BatchResultErrorEntry, error)) (map[string]bool, error) {
	failed := map[string]bool{}
	var errs []error
	for chunk := range slices.Chunk(handles, MaxBatchEntries) {
		pending := chunk
		_, err := backoff.Retry(ctx, func() (struct{}, error) {
			entries, err := send(ctx, pending)
			if err != nil {
				return struct{}{}, backoff.Permanent(err) // the SDK has retried it already
			}
			var again []string
			var last error
			for _, e := range entries {
				i, err := strconv.Atoi(aws.ToString(e.Id))
				if err != nil || i < 0 || i >= len(pending) {
					return struct{}{}, backoff.Permanent(fmt.Errorf("SQS answered for an entry %q it was not sent", aws.ToString(e.Id)))
				}
				why := fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message))
				if e.SenderFault {
					failed[pending[i]] = true
					errs = append(errs, why)
					continue
				}
				again, last = append(again, pending[i]), why
			}
			pending = again
			return struct{}{}, last
		}, backoff.WithBackOff(newSettleBackOff()), backoff.WithMaxTries(settleTries))
		if err != nil {
			for _, h := range pending {
				failed[h] = true
			}
			errs = append(errs, err)
		}
	}
	if len(failed) > 0 {
		return failed, fmt.Errorf("%d of %d entries failed: %w", len(failed), len(handles), errors.Join(errs...))
	}
	return nil, nil
}

func newSettleBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	return b
}

// deleteMessages deletes messages of the ride queue (DeleteMessageBatch).
// A message SQS did not delete is delivered again after its visibility
// timeout.
func (q *Queue) deleteMessages(ctx context.Context, handles []string) error {
	failed, err := q.deleteFrom(ctx, q.names.url, handles)
	q.deleted.Add(int64(len(handles) - len(failed)))
	if err != nil {
		return fmt.Errorf("%w: sqs: delete from %s (SQS delivers what it did not delete again after the visibility timeout; the store's idempotency absorbs it): %w", domain.ErrUnavailable, q.names.name, err)
	}
	return nil
}

// deleteFrom deletes messages of a queue and returns those it could not.
func (q *Queue) deleteFrom(ctx context.Context, queueURL string, handles []string) (map[string]bool, error) {
	return inBatches(ctx, handles, func(ctx context.Context, chunk []string) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		out, err := q.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
}

// changeVisibility sets the visibility timeout of messages of the ride
// queue (ChangeMessageVisibilityBatch): 0 makes them visible again at
// once. It returns the handles SQS did not change.
func (q *Queue) changeVisibility(ctx context.Context, handles []string, timeout time.Duration) (map[string]bool, error) {
	return q.changeVisibilityIn(ctx, q.names.url, handles, timeout)
}

func (q *Queue) changeVisibilityIn(ctx context.Context, queueURL string, handles []string, timeout time.Duration) (map[string]bool, error) {
	return inBatches(ctx, handles, func(ctx context.Context, chunk []string) ([]types.BatchResultErrorEntry, error) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: int32(timeout / time.Second)}
		}
		out, err := q.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
		if err != nil {
			return nil, err
		}
		return out.Failed, nil
	})
}
