package sqs

import (
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/skidata/skidata/ports"
)

// SQS's limits this adapter is built around (docs/sqs.md, "Limits", cites
// each). The largest message, 1 MiB (raised from 256 KiB in 2025;
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html),
// is far above what the adapter sends: a message stays within one
// billing chunk (MaxRidesPerMessage).
const (
	// BillingChunk is the payload one billed request carries: "each 64 KB
	// chunk of a payload is billed as 1 request"
	// (https://aws.amazon.com/sqs/pricing/). SQS's KB are KiB: the old
	// 256 KB message limit was 262,144 bytes, and a 256 KB payload bills 4
	// requests.
	BillingChunk = 64 * 1024
	// MaxBatchEntries is the most entries of one SendMessageBatch,
	// DeleteMessageBatch or ChangeMessageVisibilityBatch, and the most
	// messages one ReceiveMessage returns
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-batch-api-actions.html).
	MaxBatchEntries = 10
	// MaxWaitTime is the longest long poll
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html).
	MaxWaitTime = 20 * time.Second
	// MaxVisibilityTimeout is the longest a received message may stay
	// invisible, extensions included
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html).
	MaxVisibilityTimeout = 12 * time.Hour
	// InFlightQuota is how many messages of a standard queue may be in
	// flight (received, not deleted): "approximately 120,000"
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html).
	InFlightQuota = 120_000
	// MaxReceiveCountLimit is the largest maxReceiveCount of a redrive
	// policy: SQS takes 1 to 1,000 (docs/sqs.md, "Limits").
	MaxReceiveCountLimit = 1000
	// MaxRetention is the longest SQS keeps a message: 14 days
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
	MaxRetention = 14 * 24 * time.Hour
	// maxQueueName is SQS's limit on a queue name: 80 characters of
	// letters, digits, hyphens and underscores (quotas-queues.html).
	maxQueueName = 80
)

// PublishInFlight is how many sends one process should keep in flight at
// once (the group commit's bound): no more than the SDK keeps idle
// connections to a host (10), less the depth sample's, so every send
// reuses a connection; rides that arrive while that many are in flight
// share the next message, which costs nothing more to send.
const PublishInFlight = 8

// MinPublishLinger is the shortest a message should wait for more rides
// (the group commit's linger) before it is sent. SQS bills each message a
// send, a receive and a share of a delete, whatever it holds up to 64 KiB,
// so the requests a ride costs fall as messages fill: at the 8,000 rides
// a second of the national chain's peak, messages of 20 ms hold about
// 160 rides, well within the 30,000 requests per million rides the queue
// is budgeted (docs/sqs.md, "Cost"). A burst that has all arrived still
// goes early (the linger gap), so a quiet resort's rides do not wait it
// out.
const MinPublishLinger = 20 * time.Millisecond

// DeadLetterSuffix names a queue's dead-letter queue: NAME-dlq.
const DeadLetterSuffix = "-dlq"

// Config is everything Open (and CreateQueues) needs. Zero fields take the
// defaults below; a negative one, or one beyond SQS's limits, is refused.
type Config struct {
	// Queue is the ride queue's name (e.g. skidata-rides) or URL
	// (https://sqs.eu-west-1.amazonaws.com/123456789012/skidata-rides).
	// Its dead-letter queue is NAME-dlq, in the same account and region.
	Queue string
	// Endpoint is a stand-in's URL (e.g. http://127.0.0.1:4566); empty:
	// AWS, at the region's SQS endpoint.
	Endpoint string
	// Region is the AWS region; empty: the SDK's (AWS_REGION, the shared
	// config file).
	Region string
	// Pollers is how many goroutines long-poll the queue for deliveries.
	// Default 2.
	Pollers int
	// VisibilityTimeout is how long a received message stays hidden from
	// other consumers; while this process holds it unsettled it is
	// extended before it ends (whole seconds, at most 12 hours). A
	// consumer that dies holding it gets it redelivered to another after
	// this long. Default 30s.
	VisibilityTimeout time.Duration
	// WaitTime is how long one receive waits for a message (long polling,
	// whole seconds, at most 20s): an idle queue costs one receive per
	// poller and WaitTime. Default 20s.
	WaitTime time.Duration
	// MaxHeld bounds the messages this process has received and not yet
	// settled: the pollers stop receiving while it is reached, so the
	// persister's backlog stays in SQS (and SQS's in-flight quota,
	// InFlightQuota, is never approached). At least 10. Default 500.
	MaxHeld int
	// MaxMessages bounds the messages waiting (visible and in flight): a
	// publish that finds the queue at it is refused with ErrQueueFull.
	// SQS keeps any backlog, so this is only a ceiling of the service's
	// own, checked against the sampled depth plus this process's sends
	// and deletes since (approximate across processes). 0: unbounded.
	MaxMessages int
	// MaxReceiveCount is how many times a message is received before SQS
	// moves it to the dead-letter queue (the redrive policy CreateQueues
	// sets, 1 to 1,000). Default 5.
	MaxReceiveCount int
	// Retention is how long SQS keeps an unconsumed message in either
	// queue (CreateQueues; 60s to 14 days). Default 14 days: a persister
	// outage of up to two weeks loses no ride.
	Retention time.Duration
	// PublishTimeout bounds one Publish, SDK retries included, when the
	// caller's context allows longer. Default 5s.
	PublishTimeout time.Duration
	// DepthInterval is how long a depth sample is reused: Depth costs at
	// most one GetQueueAttributes of each queue per interval, however
	// often /readyz, the metrics and admission control ask (admission
	// asks ten times a second). Default 10s: two requests per process
	// every 10 s are about 520,000 billed requests a month, where every
	// second would be 5.2 million, more than the rides of a month of the
	// national chain cost to carry; and SQS's counts are approximate
	// anyway, settling up to a minute after a change.
	DepthInterval time.Duration
	// Metrics receives every request SQS answered (its action, billed
	// units, and whether it was an empty receive: what Requests counts),
	// the receive lag (ReceiveLag) and the rides the adapter dead-letters
	// itself. Default: none.
	Metrics ports.Metrics
	// Logger receives what the adapter does on its own (dead-lettering
	// unreadable messages, failed extensions). Default: none.
	Logger *slog.Logger
}

// Validate reports what in c cannot work (a queue name SQS refuses, a
// setting beyond SQS's limits) without connecting, as Open and
// CreateQueues would.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

func (c Config) withDefaults() (Config, error) {
	if _, err := c.names(); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"Pollers", int64(c.Pollers)}, {"VisibilityTimeout", int64(c.VisibilityTimeout)}, {"WaitTime", int64(c.WaitTime)},
		{"MaxHeld", int64(c.MaxHeld)}, {"MaxMessages", int64(c.MaxMessages)}, {"MaxReceiveCount", int64(c.MaxReceiveCount)},
		{"Retention", int64(c.Retention)}, {"PublishTimeout", int64(c.PublishTimeout)}, {"DepthInterval", int64(c.DepthInterval)},
	} {
		if f.value < 0 {
			return c, fmt.Errorf("sqs: Config.%s is negative (%d)", f.name, f.value)
		}
	}
	if c.Pollers == 0 {
		c.Pollers = 2
	}
	if c.VisibilityTimeout == 0 {
		c.VisibilityTimeout = 30 * time.Second
	}
	if c.WaitTime == 0 {
		c.WaitTime = MaxWaitTime
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = 500
	}
	if c.MaxReceiveCount == 0 {
		c.MaxReceiveCount = 5
	}
	if c.Retention == 0 {
		c.Retention = MaxRetention
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.DepthInterval == 0 {
		c.DepthInterval = 10 * time.Second
	}
	switch {
	case c.VisibilityTimeout < time.Second || c.VisibilityTimeout > MaxVisibilityTimeout || c.VisibilityTimeout%time.Second != 0:
		return c, fmt.Errorf("sqs: Config.VisibilityTimeout %v: want whole seconds from 1s to %v", c.VisibilityTimeout, MaxVisibilityTimeout)
	case c.WaitTime > MaxWaitTime || c.WaitTime%time.Second != 0:
		return c, fmt.Errorf("sqs: Config.WaitTime %v: want whole seconds up to %v", c.WaitTime, MaxWaitTime)
	case c.MaxHeld < MaxBatchEntries || c.MaxHeld > InFlightQuota:
		return c, fmt.Errorf("sqs: Config.MaxHeld %d: want %d (one receive) to %d (SQS's in-flight quota)", c.MaxHeld, MaxBatchEntries, InFlightQuota)
	case c.MaxReceiveCount > MaxReceiveCountLimit:
		return c, fmt.Errorf("sqs: Config.MaxReceiveCount %d: SQS takes 1 to %d", c.MaxReceiveCount, MaxReceiveCountLimit)
	case c.Retention < time.Minute || c.Retention > MaxRetention || c.Retention%time.Second != 0:
		return c, fmt.Errorf("sqs: Config.Retention %v: want whole seconds from 1m to %v", c.Retention, MaxRetention)
	}
	if c.Metrics == nil {
		c.Metrics = ports.NopMetrics{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// queueNames are the ride queue's and its dead-letter queue's names, and
// their URLs when Config.Queue is a URL (else empty: looked up).
type queueNames struct {
	name, dlqName string
	url, dlqURL   string
}

// names reads Config.Queue: a name, or a URL whose last path element is
// the name.
func (c Config) names() (queueNames, error) {
	q := strings.TrimSpace(c.Queue)
	if q == "" {
		return queueNames{}, fmt.Errorf("sqs: Config.Queue is empty; want the ride queue's name (e.g. skidata-rides) or URL")
	}
	var n queueNames
	if strings.HasPrefix(q, "https://") || strings.HasPrefix(q, "http://") {
		u, err := url.Parse(q)
		if err != nil {
			return n, fmt.Errorf("sqs: queue URL %q: %w", q, err)
		}
		n.url, n.name = q, path.Base(u.Path)
		u.Path = path.Join(path.Dir(u.Path), n.name+DeadLetterSuffix)
		n.dlqURL = u.String()
	} else {
		n.name = q
	}
	n.dlqName = n.name + DeadLetterSuffix
	if len(n.dlqName) > maxQueueName || strings.ContainsFunc(n.name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) || strings.HasSuffix(n.name, ".fifo") {
		return n, fmt.Errorf("sqs: queue name %q: want letters, digits, hyphens and underscores, at most %d characters so that %q fits SQS's %d (a standard queue: no .fifo)",
			n.name, maxQueueName-len(DeadLetterSuffix), n.dlqName, maxQueueName)
	}
	return n, nil
}
