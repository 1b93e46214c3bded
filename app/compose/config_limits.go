package compose

import (
	"fmt"
	"math"
	"time"

	"github.com/skidata/skidata/adapters/rabbitmq"
	"github.com/skidata/skidata/adapters/sqs"
)

// The bounds of the numeric settings, beyond the obvious "at least 1" or
// "positive": each is where a larger value stops working, not a taste.
const (
	// MaxBatchSize bounds --batch-size: one store write holds its batch
	// in memory several times over (the deliveries, the sorted copy, the
	// columns or items, the cache keys) and is retried and redelivered
	// whole. A larger value only ever makes batches wait for
	// --batch-linger, or the process run out of memory.
	MaxBatchSize = 100_000
	// maxPrefetch is AMQP's basic.qos prefetch-count, a 16-bit field.
	maxPrefetch = math.MaxUint16
	// maxChannels bounds --amqp-shards and --amqp-publish-channels: each
	// is a channel on one connection, and RabbitMQ's default channel_max
	// is 2047.
	maxChannels = 1024
	// maxWorkers bounds --persist-writers and --dynamo-write-concurrency:
	// each is a store request (a pooled connection, an HTTP connection)
	// in flight at once.
	maxWorkers = 1024
	// maxPostgresConns is PostgreSQL's own limit on max_connections.
	maxPostgresConns = 262_143
	// maxStatementTimeout is PostgreSQL's limit on statement_timeout, an
	// int of milliseconds.
	maxStatementTimeout = math.MaxInt32 * time.Millisecond
	// maxIngestRate bounds --ingest-rate (rides per second): its burst
	// defaults to one second's worth, an int.
	maxIngestRate = 1e9
)

// validateNumbers refuses every numeric setting outside what can work,
// whatever the store, queue and cache, so that `skiapi config` shows the
// values in effect: no adapter replaces one with its default. The message
// names the flag and the range allowed.
func (c Config) validateNumbers() error {
	type intRange struct {
		flag   string
		value  int64
		lo, hi int64
		note   string // what values outside lo..hi also mean, or why hi
	}
	for _, r := range []intRange{
		{"batch-size", int64(c.Persister.BatchSize), 1, MaxBatchSize, "rides in one store write"},
		{"persist-writers", int64(c.Persister.Writers), 1, maxWorkers, ""},
		{"queue-capacity", int64(c.QueueCapacity), 1, math.MaxInt32, ""},
		{"amqp-shards", int64(c.AMQP.Shards), 1, maxChannels, "one channel each"},
		{"amqp-prefetch", int64(c.AMQP.Prefetch), 1, maxPrefetch, "AMQP's prefetch-count is 16 bits"},
		{"amqp-publish-channels", int64(c.AMQP.PublishChannels), 1, maxChannels, ""},
		{"publish-batch", int64(c.Publish.MaxRides), 1, rabbitmq.MaxPublishBatch, "the most rides a RabbitMQ message holds"},
		{"db-max-conns", int64(c.Postgres.MaxConns), 0, maxPostgresConns, "0: the larger of 4 and the CPU count"},
		{"dynamo-write-concurrency", int64(c.Dynamo.WriteConcurrency), 1, maxWorkers, ""},
		{"sqs-pollers", int64(c.SQS.Pollers), 1, maxWorkers, "one receive in flight each"},
		{"sqs-max-receive-count", int64(c.SQS.MaxReceiveCount), 1, sqs.MaxReceiveCountLimit, "SQS's bound on a redrive policy's maxReceiveCount"},
		{"ingest-burst", int64(c.Admission.Burst), 0, math.MaxInt32, "0: one second's worth of --ingest-rate"},
		{"client-burst", int64(c.Admission.ClientBurst), 0, math.MaxInt32, "0: one second's worth of --client-rate"},
		{"queue-soft-limit", c.Admission.SoftLimit, 0, math.MaxInt64, "0: off"},
		{"queue-hard-limit", c.Admission.HardLimit, 0, math.MaxInt64, "0: off"},
		{"cache-size", int64(c.CacheSize), 1, math.MaxInt32, ""},
	} {
		if r.value < r.lo || r.value > r.hi {
			return rangeError(r.flag, fmt.Sprint(r.value), fmt.Sprintf("%d to %d", r.lo, r.hi), r.note)
		}
	}
	if d := c.AMQP.DeliveryLimit; d == 0 || d < -1 || d > math.MaxInt32 {
		return rangeError("amqp-delivery-limit", fmt.Sprint(d), fmt.Sprintf("1 to %d, or -1", math.MaxInt32), "-1: no limit")
	}
	if r := c.Admission.Rate; math.IsNaN(r) || r < 0 || r > maxIngestRate {
		return rangeError("ingest-rate", fmt.Sprint(r), fmt.Sprintf("0 to %g", float64(maxIngestRate)), "rides per second; 0: unlimited")
	}
	if r := c.Admission.ClientRate; math.IsNaN(r) || r < 0 || r > maxIngestRate {
		return rangeError("client-rate", fmt.Sprint(r), fmt.Sprintf("0 to %g", float64(maxIngestRate)), "rides per second; 0: no per-client limit")
	}
	type durRange struct {
		flag   string
		value  time.Duration
		lo, hi time.Duration
		zero   string // what 0 means, if anything
	}
	const forever = time.Duration(math.MaxInt64)
	for _, r := range []durRange{
		{"batch-linger", c.Persister.Linger, 1, forever, ""},
		{"batch-retry-for", c.Persister.RetryFor, 0, forever, "0: no retry"},
		{"shutdown-timeout", c.ShutdownTimeout, 1, forever, ""},
		{"http-shutdown-timeout", c.HTTP.ShutdownTimeout, 1, forever, ""},
		{"http-read-timeout", c.HTTP.ReadTimeout, 1, forever, ""},
		{"http-write-timeout", c.HTTP.WriteTimeout, 1, forever, ""},
		{"http-handler-timeout", c.HTTP.HandlerTimeout, 1, forever, ""},
		{"amqp-publish-timeout", c.AMQP.PublishTimeout, 1, forever, ""},
		{"publish-linger", c.Publish.Linger, 0, forever, "0: never waits"},
		{"publish-linger-gap", c.Publish.LingerGap, 0, forever, "0: lingers the whole --publish-linger"},
		{"db-connect-timeout", c.Postgres.ConnectTimeout, 0, forever, "0: the URL's connect_timeout, else 5s"},
		{"breaker-open-for", c.Breaker.OpenFor, 1, forever, ""},
		{"ingest-max-wait", c.Admission.MaxWait, 0, forever, "0: refuse at once"},
		{"cache-ttl", c.Query.CacheTTL, 1, forever, ""},
	} {
		if r.value < r.lo || r.value > r.hi {
			allowed := "more than 0s"
			if r.lo == 0 {
				allowed = "0s or more"
			}
			return rangeError(r.flag, r.value.String(), allowed, r.zero)
		}
	}
	if d := c.SQS.VisibilityTimeout; d < time.Second || d > sqs.MaxVisibilityTimeout || d%time.Second != 0 {
		return rangeError("sqs-visibility-timeout", d.String(), "whole seconds from 1s to "+sqs.MaxVisibilityTimeout.String(), "SQS's bounds")
	}
	// statement_timeout is whole milliseconds: less than 1ms would be 0,
	// which is the server's setting.
	if d := c.Postgres.StatementTimeout; d != 0 && (d < time.Millisecond || d > maxStatementTimeout) {
		return rangeError("db-statement-timeout", d.String(), fmt.Sprintf("0s, or 1ms to %s", maxStatementTimeout), "0: the server's setting")
	}
	return nil
}

// rangeError is a numeric setting outside its range, as one line naming
// the flag as typed.
func rangeError(flag, value, allowed, note string) error {
	msg := fmt.Sprintf("--%s %s is out of range: want %s", flag, value, allowed)
	if note != "" {
		msg += " (" + note + ")"
	}
	return fmt.Errorf("%s", msg)
}
