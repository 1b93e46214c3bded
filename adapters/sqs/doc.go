// Package sqs is the Amazon SQS queue adapter: it implements
// ports.Publisher, ports.Subscriber and ports.QueueStats on a standard SQS
// queue and its dead-letter queue (NAME-dlq), with aws-sdk-go-v2 and the
// SDK's credential chain, so the API servers and the persister can run as
// separate processes with no broker to run:
//
//	POST -> app.Ingest (group commit) -> (*Queue).Publish -> SQS -> pollers -> (*Queue).Deliveries -> app.Persister -> store
//
// # Publishing
//
// One Publish is one SQS message holding the rides of the group commit's
// message (one ride a line, codec.go), sent with one SendMessage. Publish
// returns nil only once SQS has answered that it holds the message, which
// it stores redundantly before answering, so a ride answered with 201
// survives the API process. A failure (after the SDK's retries with
// backoff of throttling, server errors and broken connections) wraps
// domain.ErrUnavailable: the API answers 503 with Retry-After and nothing
// was accepted (or, when the answer was lost, the ride may be queued, and
// sending it again is safe: the stores are idempotent).
//
// Why SendMessage, not SendMessageBatch of up to ten entries: AWS bills a
// request by its payload, one unit per 64 KiB, not by its entries; ten
// entries of a batch holding N bytes bill as one message of N bytes does.
// The group commit already puts every ride that waits into one message,
// up to MaxRidesPerMessage (one 64 KiB chunk, whatever the rides), so a
// batch would cut billed requests only by gathering several group-commit
// messages inside the adapter, a second batcher on the publish side, which
// the project does not have (one batcher a side). When more rides wait
// than one chunk holds, ten entries of one chunk each bill ten units, as
// ten sends do. A batch would save HTTP round trips, not billed requests,
// and would make every publish handle a 200 with failed entries. (Standard
// queues take a nearly unlimited number of calls a second per action,
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html,
// so sends in parallel, one per group-commit slot, meet no limit.)
//
// # Consuming
//
// Config.Pollers goroutines long-poll the queue (ReceiveMessage of up to
// ten messages, waiting up to Config.WaitTime, so an idle queue costs one
// receive per poller and wait); each message is one ports.Delivery, its
// Receipt the receipt handle of that receive. Ack deletes
// (DeleteMessageBatch, ten a request), Nack makes the messages visible
// again at once (ChangeMessageVisibilityBatch to 0), and Reject sends the
// refused rides to the dead-letter queue as one message whose attributes
// say why and from where, then deletes the original. A batch entry SQS
// failed on its side is sent again (settleTries); a message that is not
// deleted comes back after its visibility timeout, and the store's
// idempotency absorbs it. A message that keeps failing is moved to the
// dead-letter queue by SQS itself once received Config.MaxReceiveCount
// times (the redrive policy CreateQueues sets); a body no release can read
// is moved there at once.
//
// A received message is hidden from other consumers for
// Config.VisibilityTimeout, which should be longer than a store write;
// while this process holds it unsettled, a heartbeat extends it
// (ChangeMessageVisibilityBatch) before its last quarter runs out, so a
// store that is slow or down (the persister retries it without limit)
// does not hand the rides to another consumer, and a write shorter than
// half the timeout costs no extension. A consumer that dies stops
// extending, and SQS redelivers what it held when the timeout ends.
// Config.MaxHeld bounds what this process holds unsettled: the pollers
// stop receiving while it is reached, as a broker's prefetch would, so the
// persister's backlog stays in SQS and SQS's in-flight quota (about
// 120,000 messages a queue) is never approached.
//
// The queue is a standard queue: delivery is at least once, and a message
// may come twice or out of order. Every store is idempotent on the ride
// identity, so both are harmless. Not FIFO, because what FIFO adds buys
// nothing here and costs: ordering is not needed (a ride carries its own
// time, and queries order by it), exactly-once delivery would still need
// the idempotent stores (a consumer that dies after storing a batch and
// before deleting it has it redelivered in any queue), FIFO queues take
// 300 calls a second per action (3,000 messages with batches;
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/troubleshooting-fifo-throttling-issues.html)
// where standard queues take nearly unlimited, a FIFO request costs $0.50
// a million against $0.40, and a message that keeps failing holds up its
// whole message group.
//
// # Depth and counters
//
// Depth reads SQS's approximate counts (visible plus in flight) at most
// once per Config.DepthInterval, however often /readyz, the metrics and
// admission control ask, and converts messages to rides with the mean
// rides per message this process has seen: an estimate, exact when the
// messages are of one size. Requests counts every request SQS answered, by
// kind, and the request units AWS bills for them, for the metrics and the
// load client's requests per million rides. ReceiveLag is what can be
// read of the queue's lag; SQS's ApproximateAgeOfOldestMessage is a
// CloudWatch metric only.
//
// docs/sqs.md describes the queues, what a 201 means, SQS's limits with
// their sources, and what the local stand-in (fauxqs behind the strict
// proxy of adapters/sqs/sqssim) does and does not model.
package sqs
