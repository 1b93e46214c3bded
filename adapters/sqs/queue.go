package sqs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/singleflight"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

var (
	_ ports.Publisher  = (*Queue)(nil)
	_ ports.Subscriber = (*Queue)(nil)
	_ ports.QueueStats = (*Queue)(nil)
)

// Queue is one process's link to the ride queue and its dead-letter queue:
// it publishes, and (once Deliveries is called) consumes.
type Queue struct {
	cfg      Config
	client   *sqs.Client
	names    queueNames // both URLs resolved
	where    string     // the endpoint, for messages: AWS or the stand-in's URL
	requests requestCounters

	disconnected atomic.Bool // Disconnect was called: publishing refused

	sent    atomic.Int64 // messages this process put in the ride queue
	deleted atomic.Int64 // messages this process deleted from it
	lag     atomic.Int64 // ReceiveLag, in nanoseconds

	meanMu    sync.Mutex
	meanRides float64 // rides per message lately; 0: none seen
	meanCount int     // messages in meanRides, up to meanWindow

	depthMu   sync.Mutex
	depth     depthSample
	depthOnce singleflight.Group

	subMu sync.Mutex
	sub   *consumer
}

// Open connects (with the SDK's credential chain) and checks that the ride
// queue and its dead-letter queue exist: a queue that is missing stops the
// start with a message saying how to create it, and SQS unreachable is an
// error wrapping domain.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, where: "AWS", requests: requestCounters{metrics: cfg.Metrics}}
	q.names, _ = cfg.names() // checked by withDefaults
	if cfg.Endpoint != "" {
		q.where = cfg.Endpoint
	}
	if q.client, err = newClient(ctx, cfg, &q.requests); err != nil {
		return nil, err
	}
	if q.names.url, err = q.queueURL(ctx, q.names.name, q.names.url); err != nil {
		return nil, err
	}
	if q.names.dlqURL, err = q.queueURL(ctx, q.names.dlqName, q.names.dlqURL); err != nil {
		return nil, err
	}
	return q, nil
}

// newClient is an SQS client on the SDK's configuration (region,
// credential chain, retries with backoff), pointed at cfg.Endpoint when it
// is set, with every request counted.
func newClient(ctx context.Context, cfg Config, counters *requestCounters) (*sqs.Client, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqs: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("sqs: AWS region missing: set the SQS region or AWS_REGION")
	}
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.APIOptions = append(o.APIOptions, countRequests(counters))
	}), nil
}

// queueURL checks that a queue exists and returns its URL: the one given,
// or the one SQS has for the name.
func (q *Queue) queueURL(ctx context.Context, name, given string) (string, error) {
	var err error
	if given != "" {
		_, err = q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(given), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	} else {
		var out *sqs.GetQueueUrlOutput
		if out, err = q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
			given = aws.ToString(out.QueueUrl)
		}
	}
	var missing *types.QueueDoesNotExist
	switch {
	case errors.As(err, &missing):
		return "", fmt.Errorf("sqs: queue %s does not exist at %s (create the ride queue and its dead-letter queue with `skiapi queues create`): %w", name, q.where, err)
	case err != nil:
		return "", fmt.Errorf("%w: sqs at %s: find queue %s: %w", domain.ErrUnavailable, q.where, name, err)
	}
	return given, nil
}

// Publish sends the rides as one message (one SendMessage, see the package
// documentation for why not SendMessageBatch) and returns nil only once
// SQS has answered that it holds it. Any failure, after the SDK's retries
// with backoff, wraps domain.ErrUnavailable; a queue at MaxMessages wraps
// ports.ErrQueueFull too.
func (q *Queue) Publish(ctx context.Context, rides []domain.LiftRide) error {
	if len(rides) == 0 {
		return nil
	}
	if len(rides) > MaxRidesPerMessage {
		return fmt.Errorf("sqs: a message holds at most %d rides, got %d", MaxRidesPerMessage, len(rides))
	}
	if q.disconnected.Load() {
		return fmt.Errorf("%w: sqs queue %s disconnected by this process", domain.ErrUnavailable, q.names.name)
	}
	if q.cfg.MaxMessages > 0 {
		if n, full := q.full(ctx); full {
			return fmt.Errorf("%w: %w: sqs queue %s holds about %d messages (MaxMessages %d)", domain.ErrUnavailable, ports.ErrQueueFull, q.names.name, n, q.cfg.MaxMessages)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.PublishTimeout)
	defer cancel()
	if err := q.send(ctx, q.names.url, encodeBody(rides), nil); err != nil {
		return fmt.Errorf("%w: sqs: message of %d rides not accepted by %s (if its answer was lost it may be queued; publishing again is safe): %w", domain.ErrUnavailable, len(rides), q.names.name, err)
	}
	q.sent.Add(1)
	q.observeMessage(len(rides))
	return nil
}

// send puts one message in a queue.
func (q *Queue) send(ctx context.Context, queueURL, body string, attrs map[string]types.MessageAttributeValue) error {
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body), MessageAttributes: attrs})
	return err
}

// full says whether the ride queue holds MaxMessages: the last depth
// sample plus what this process has sent and deleted since. A sample that
// failed refuses nothing: the send will tell.
func (q *Queue) full(ctx context.Context) (int64, bool) {
	s := q.sample(ctx)
	if s.err != nil {
		return 0, false
	}
	n := max(0, s.messages+(q.sent.Load()-s.sent)-(q.deleted.Load()-s.deleted))
	return n, n >= int64(q.cfg.MaxMessages)
}

// depthSample is one reading of both queues' approximate counts, and the
// process's own counters as they were when it was taken.
type depthSample struct {
	at                    time.Time
	messages, deadLetters int64
	sent, deleted         int64
	err                   error
}

// depthTimeout bounds one depth sample.
const depthTimeout = 5 * time.Second

// Depth is the ride queue's approximate number of messages, visible and
// in flight (SQS's ApproximateNumberOfMessages plus
// ApproximateNumberOfMessagesNotVisible, which counts every consumer's),
// the rides in them, and the dead-letter queue's messages. SQS counts
// messages only, so Rides is an estimate: the messages times the mean
// rides per message of the messages this process has lately published or
// received (meanWindow; one a message before it has seen any). A sample
// is reused for DepthInterval, so callers that ask often cost one
// GetQueueAttributes of each queue per interval.
func (q *Queue) Depth(ctx context.Context) (ports.QueueDepth, error) {
	s := q.sample(ctx)
	if s.err != nil {
		return ports.QueueDepth{}, s.err
	}
	return ports.QueueDepth{
		Messages:    s.messages,
		Rides:       int64(math.Round(float64(s.messages) * q.ridesPerMessage())),
		DeadLetters: s.deadLetters,
	}, nil
}

// sample is the last depth sample while it is younger than
// DepthInterval, else a new one; callers that arrive while one is taken
// share it. A failed sample is kept as long, so a queue that does not
// answer is not asked more often.
func (q *Queue) sample(ctx context.Context) depthSample {
	if s, ok := q.freshSample(); ok {
		return s
	}
	v, _, _ := q.depthOnce.Do("depth", func() (any, error) {
		if s, ok := q.freshSample(); ok {
			return s, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), depthTimeout)
		defer cancel()
		s := q.readDepth(ctx)
		q.depthMu.Lock()
		q.depth = s
		q.depthMu.Unlock()
		return s, nil
	})
	return v.(depthSample)
}

func (q *Queue) freshSample() (depthSample, bool) {
	q.depthMu.Lock()
	defer q.depthMu.Unlock()
	return q.depth, !q.depth.at.IsZero() && time.Since(q.depth.at) < q.cfg.DepthInterval
}

// readDepth asks SQS for both queues' counts.
func (q *Queue) readDepth(ctx context.Context) depthSample {
	s := depthSample{sent: q.sent.Load(), deleted: q.deleted.Load()}
	s.messages, s.err = q.messagesIn(ctx, q.names.url)
	if s.err == nil {
		s.deadLetters, s.err = q.messagesIn(ctx, q.names.dlqURL)
	}
	if s.err != nil {
		s.err = fmt.Errorf("%w: sqs queue depth: %w", domain.ErrUnavailable, s.err)
	}
	s.at = time.Now()
	return s
}

// messagesIn is a queue's approximate messages, visible and in flight.
func (q *Queue) messagesIn(ctx context.Context, queueURL string) (int64, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, err := strconv.ParseInt(out.Attributes[string(name)], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s of %s is %q: %w", name, queueURL, out.Attributes[string(name)], err)
		}
		n += v
	}
	return n, nil
}

// meanWindow is about how many of the latest messages the mean rides per
// message follows: it is the exact mean of the first meanWindow messages,
// then a moving average in which each new message weighs 1/meanWindow.
const meanWindow = 100

// observeMessage feeds the mean rides per message with one message
// published or received.
func (q *Queue) observeMessage(rides int) {
	q.meanMu.Lock()
	defer q.meanMu.Unlock()
	q.meanCount = min(q.meanCount+1, meanWindow)
	q.meanRides += (float64(rides) - q.meanRides) / float64(q.meanCount)
}

func (q *Queue) ridesPerMessage() float64 {
	q.meanMu.Lock()
	defer q.meanMu.Unlock()
	return max(q.meanRides, 1)
}

// Requests is what this process has asked of SQS so far (both queues),
// for the request-count metrics and the load client's requests per
// million rides.
func (q *Queue) Requests() Requests { return q.requests.snapshot() }

// ReceiveLag is how old, when it was received, the oldest message of the
// latest receive that returned any was (from its SentTimestamp); 0 before
// the first, and after a receive that found the queue empty. It is what
// this process can read of the queue's lag: SQS's own age of the oldest
// message (ApproximateAgeOfOldestMessage) is a CloudWatch metric, which
// GetQueueAttributes does not return.
func (q *Queue) ReceiveLag() time.Duration { return time.Duration(q.lag.Load()) }

// Disconnect stops consuming at once, as a process that died would: what
// is held unsettled is neither deleted nor handed back, and SQS delivers
// it again once its visibility timeout ends; later publishes are refused.
// Call it after Close has drained the deliveries.
func (q *Queue) Disconnect() error {
	q.disconnected.Store(true)
	if c := q.consumer(); c != nil {
		c.stopNow()
	}
	return nil
}
