package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/skidata/skidata/ports"
)

// QueueState is what CreateQueues found or did for one queue.
type QueueState struct {
	Name string
	URL  string
	// Created says the queue did not exist and was created.
	Created bool
	// Updated names the attributes that differed from the configuration
	// and were set to it.
	Updated []string
}

// The queue attributes CreateQueues manages.
const (
	attrVisibilityTimeout = "VisibilityTimeout"
	attrRetention         = "MessageRetentionPeriod"
	attrReceiveWait       = "ReceiveMessageWaitTimeSeconds"
	attrRedrivePolicy     = "RedrivePolicy"
	attrManagedSSE        = "SqsManagedSseEnabled"
	attrKMSKey            = "KmsMasterKeyId"
)

// CreateQueues makes the ride queue and its dead-letter queue as cfg
// describes them, and returns what it did to each (dead-letter queue
// first):
//
//   - the dead-letter queue: 14 days' retention (SQS keeps a moved message
//     only until its first enqueue plus the dead-letter queue's retention,
//     so it must be the longest), encrypted at rest with SQS-managed keys;
//   - the ride queue: cfg's visibility timeout, retention and receive wait
//     (the defaults of any consumer), the same encryption, and a redrive
//     policy moving a message to the dead-letter queue once it has been
//     received MaxReceiveCount times.
//
// Running it again is harmless. A queue that exists with other values of
// these attributes is set to cfg's (SetQueueAttributes; AWS applies a
// change within about a minute, a retention change within 15), and
// QueueState.Updated names them; other attributes are left alone. A queue
// encrypted with a KMS key keeps it: SQS-managed encryption is only turned
// on for a queue with no KMS key.
func CreateQueues(ctx context.Context, cfg Config) ([]QueueState, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	names, _ := cfg.names()                                  // checked by withDefaults
	counters := requestCounters{metrics: ports.NopMetrics{}} // a one-shot command's requests: not the service's
	client, err := newClient(ctx, cfg, &counters)
	if err != nil {
		return nil, err
	}
	dlq, err := ensureQueue(ctx, client, names.dlqName, map[string]string{
		attrRetention:  seconds(MaxRetention),
		attrManagedSSE: "true",
	})
	if err != nil {
		return nil, err
	}
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("sqs: read the ARN of %s: %w", names.dlqName, err)
	}
	policy, _ := json.Marshal(redrivePolicy{DeadLetterTargetArn: arn.Attributes[string(types.QueueAttributeNameQueueArn)], MaxReceiveCount: cfg.MaxReceiveCount})
	rides, err := ensureQueue(ctx, client, names.name, map[string]string{
		attrVisibilityTimeout: seconds(cfg.VisibilityTimeout),
		attrRetention:         seconds(cfg.Retention),
		attrReceiveWait:       seconds(cfg.WaitTime),
		attrRedrivePolicy:     string(policy),
		attrManagedSSE:        "true",
	})
	if err != nil {
		return []QueueState{dlq}, err
	}
	return []QueueState{dlq, rides}, nil
}

// redrivePolicy is a queue's RedrivePolicy attribute.
type redrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// ensureQueue creates the queue with want, or sets the attributes of want
// that differ on the queue that exists.
func ensureQueue(ctx context.Context, client *sqs.Client, name string, want map[string]string) (QueueState, error) {
	st := QueueState{Name: name}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var missing *types.QueueDoesNotExist
	switch {
	case errors.As(err, &missing):
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: want})
		var exists *types.QueueNameExists
		switch {
		case err == nil:
			st.URL, st.Created = aws.ToString(out.QueueUrl), true
			return st, nil
		case !errors.As(err, &exists): // made meanwhile, with other attributes: set them below
			return st, fmt.Errorf("sqs: create queue %s: %w", name, err)
		}
		if got, err = client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err != nil {
			return st, fmt.Errorf("sqs: find queue %s: %w", name, err)
		}
	case err != nil:
		return st, fmt.Errorf("sqs: find queue %s: %w", name, err)
	}
	st.URL = aws.ToString(got.QueueUrl)
	asked := []types.QueueAttributeName{attrKMSKey}
	for k := range want {
		asked = append(asked, types.QueueAttributeName(k))
	}
	cur, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: got.QueueUrl, AttributeNames: asked})
	if err != nil {
		return st, fmt.Errorf("sqs: read the attributes of %s: %w", name, err)
	}
	set := map[string]string{}
	for k, v := range want {
		if k == attrManagedSSE && cur.Attributes[attrKMSKey] != "" {
			continue // encrypted with a KMS key of the operator's
		}
		if !sameAttribute(k, cur.Attributes[k], v) {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return st, nil
	}
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: set}); err != nil {
		return st, fmt.Errorf("sqs: set %s of %s: %w", strings.Join(slices.Sorted(maps.Keys(set)), ", "), name, err)
	}
	st.Updated = slices.Sorted(maps.Keys(set))
	return st, nil
}

// sameAttribute compares an attribute as SQS holds it with the value
// wanted: a redrive policy by its content (SQS may write the count as a
// string or a number), the rest as text.
func sameAttribute(name, have, want string) bool {
	if name != attrRedrivePolicy || have == "" {
		return have == want
	}
	var h struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	var w redrivePolicy
	if json.Unmarshal([]byte(have), &h) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	return h.DeadLetterTargetArn == w.DeadLetterTargetArn && strings.Trim(string(h.MaxReceiveCount), `"`) == strconv.Itoa(w.MaxReceiveCount)
}
