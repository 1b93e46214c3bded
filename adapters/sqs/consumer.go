package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v5"
	"golang.org/x/sync/semaphore"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// consumer is the subscribing side: Config.Pollers goroutines long-poll
// the ride queue, each SQS message becomes one ports.Delivery, and a
// heartbeat extends the visibility of every message held longer than half
// its timeout, until it is settled.
type consumer struct {
	q    *Queue
	out  chan ports.Delivery
	room *semaphore.Weighted // Config.MaxHeld: a poller takes room before it receives

	stopPolling context.CancelFunc // Close: receive nothing more
	stopBeat    context.CancelFunc // finished or Disconnect: extend nothing more
	pollersDone chan struct{}      // closed once every poller has returned

	mu       sync.Mutex
	held     map[string]*heldMessage // by receipt handle
	pollers  int
	closing  bool
	finished bool
}

// heldMessage is a message received and not yet settled.
type heldMessage struct {
	visibleAt time.Time // when SQS shows it to others unless extended
	lost      bool      // an extension failed: SQS may deliver it again
}

// receipt is what a delivery carries back to Ack, Nack and Reject: the
// message's receipt handle from this receive, and its id.
type receipt struct {
	handle string
	id     string
}

// receiveMargin is how much longer than its wait time a receive may take
// before it is given up (a network that holds the request).
const receiveMargin = 10 * time.Second

// settleTimeout bounds one settlement (deletes, visibility changes), whose
// caller may give a context without a deadline.
const settleTimeout = 10 * time.Second

// Deliveries starts the pollers. It may be called once per Queue. The
// channel closes after Close (or ctx ending) once every message handed out
// has been settled.
func (q *Queue) Deliveries(ctx context.Context) (<-chan ports.Delivery, error) {
	q.subMu.Lock()
	defer q.subMu.Unlock()
	if q.sub != nil {
		return nil, errors.New("sqs: Deliveries called twice on one Queue")
	}
	pollCtx, stopPolling := context.WithCancel(context.Background())
	beatCtx, stopBeat := context.WithCancel(context.Background())
	c := &consumer{
		q:           q,
		out:         make(chan ports.Delivery),
		room:        semaphore.NewWeighted(int64(q.cfg.MaxHeld)),
		stopPolling: stopPolling,
		stopBeat:    stopBeat,
		pollersDone: make(chan struct{}),
		held:        map[string]*heldMessage{},
		pollers:     q.cfg.Pollers,
	}
	q.sub = c
	var wg sync.WaitGroup
	for range q.cfg.Pollers {
		wg.Go(func() { c.poll(pollCtx) })
	}
	go func() {
		wg.Wait()
		close(c.pollersDone)
	}()
	go c.heartbeat(beatCtx)
	go func() {
		select {
		case <-ctx.Done():
			c.close()
		case <-beatCtx.Done():
		}
	}()
	return c.out, nil
}

// poll receives until Close, waiting while MaxHeld messages are held.
func (c *consumer) poll(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		c.pollers--
		c.mu.Unlock()
		c.maybeFinish()
	}()
	retry := backoff.NewExponentialBackOff()
	retry.InitialInterval = 100 * time.Millisecond
	retry.MaxInterval = 5 * time.Second
	for ctx.Err() == nil {
		slots, err := c.takeRoom(ctx)
		if err != nil {
			return
		}
		msgs, err := c.receive(ctx, slots)
		if err != nil {
			c.room.Release(int64(slots))
			if ctx.Err() != nil {
				return
			}
			wait := retry.NextBackOff()
			c.q.cfg.Logger.Warn("sqs receive failed; retrying", "queue", c.q.names.name, "retry_in", wait, "err", err)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			continue
		}
		retry.Reset()
		c.handOut(ctx, c.take(ctx, msgs, slots))
	}
}

// takeRoom waits until at least one more message may be held, and takes
// room for as many as one receive returns, up to what is free.
func (c *consumer) takeRoom(ctx context.Context) (int, error) {
	if err := c.room.Acquire(ctx, 1); err != nil {
		return 0, err
	}
	n := 1
	for n < MaxBatchEntries && c.room.TryAcquire(1) {
		n++
	}
	return n, nil
}

// receive is one long poll of up to most messages (at most 10).
func (c *consumer) receive(ctx context.Context, most int) ([]types.Message, error) {
	cfg := c.q.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.WaitTime+receiveMargin)
	defer cancel()
	out, err := c.q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(c.q.names.url),
		MaxNumberOfMessages:         int32(most),
		WaitTimeSeconds:             int32(cfg.WaitTime / time.Second),
		VisibilityTimeout:           int32(cfg.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// take decodes received messages and holds them; it gives back the room
// taken for the receive (slots) that they do not fill. A message no
// release can read goes to the dead-letter queue at once: no retry can
// make it readable.
func (c *consumer) take(ctx context.Context, msgs []types.Message, slots int) []ports.Delivery {
	now := time.Now()
	c.recordLag(now, msgs)
	ds := make([]ports.Delivery, 0, len(msgs))
	for _, m := range msgs {
		r := receipt{handle: aws.ToString(m.ReceiptHandle), id: aws.ToString(m.MessageId)}
		rides, err := decodeBody(aws.ToString(m.Body))
		if err != nil {
			c.deadLetterUnreadable(ctx, r, aws.ToString(m.Body), err)
			continue
		}
		c.q.observeMessage(len(rides))
		c.mu.Lock()
		c.held[r.handle] = &heldMessage{visibleAt: now.Add(c.q.cfg.VisibilityTimeout)}
		c.mu.Unlock()
		ds = append(ds, ports.Delivery{Rides: rides, Receipt: r})
	}
	c.room.Release(int64(slots - len(ds)))
	return ds
}

// recordLag sets ReceiveLag from one receive's messages.
func (c *consumer) recordLag(now time.Time, msgs []types.Message) {
	var oldest time.Time
	for _, m := range msgs {
		ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
		if err != nil {
			continue
		}
		if t := time.UnixMilli(ms); oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	lag := time.Duration(0)
	if !oldest.IsZero() {
		lag = max(0, now.Sub(oldest))
	}
	c.q.lag.Store(int64(lag))
	c.q.cfg.Metrics.QueueReceiveLag(lag)
}

// handOut gives the deliveries to the persister; once Close has been
// called, those not yet handed out are handed back to SQS instead.
func (c *consumer) handOut(ctx context.Context, ds []ports.Delivery) {
	for i, d := range ds {
		if ctx.Err() == nil {
			select {
			case c.out <- d:
				continue
			case <-ctx.Done():
			}
		}
		if err := c.q.Nack(context.Background(), ds[i:]); err != nil {
			c.q.cfg.Logger.Warn("sqs: handing back messages received during Close failed; SQS delivers them again after the visibility timeout", "messages", len(ds)-i, "err", err)
		}
		return
	}
}

// heartbeat extends, until it is stopped, the visibility of every message
// held with less than half its timeout left, checking four times a
// timeout: a message is extended before the last quarter of its timeout,
// while it is held, and never once it is settled. A store write shorter
// than half the timeout costs no extension.
func (c *consumer) heartbeat(ctx context.Context) {
	t := time.NewTicker(c.q.cfg.VisibilityTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.extendDue(ctx)
		}
	}
}

func (c *consumer) extendDue(ctx context.Context) {
	timeout := c.q.cfg.VisibilityTimeout
	now := time.Now()
	var due []string
	c.mu.Lock()
	for h, m := range c.held {
		if !m.lost && m.visibleAt.Sub(now) < timeout/2 {
			due = append(due, h)
		}
	}
	c.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	failed, err := c.q.changeVisibility(ctx, due, timeout)
	c.mu.Lock()
	for _, h := range due {
		if m := c.held[h]; m != nil {
			m.visibleAt = now.Add(timeout)
		}
	}
	for h := range failed {
		if m := c.held[h]; m != nil {
			m.lost = true
		}
	}
	c.mu.Unlock()
	if err != nil {
		c.q.cfg.Logger.Warn("sqs: extending the visibility of held messages failed; SQS may deliver them to another consumer before they are stored (the store's idempotency absorbs the duplicate)", "messages", len(due), "failed", len(failed), "err", err)
	}
}

// release forgets settled deliveries, giving back their room; it returns
// their receipts. A receipt this Queue did not hand out is an error.
func (c *consumer) release(ds []ports.Delivery) ([]receipt, error) {
	rs := make([]receipt, 0, len(ds))
	c.mu.Lock()
	defer c.mu.Unlock()
	freed := 0
	for _, d := range ds {
		r, ok := d.Receipt.(receipt)
		if !ok {
			return nil, fmt.Errorf("sqs: a delivery with receipt %T was not handed out by this queue", d.Receipt)
		}
		if _, held := c.held[r.handle]; held {
			delete(c.held, r.handle)
			freed++
		}
		rs = append(rs, r)
	}
	c.room.Release(int64(freed))
	return rs, nil
}

// subscriber is the consumer Deliveries started, for a settlement, which
// needs one.
func (q *Queue) subscriber() (*consumer, error) {
	if c := q.consumer(); c != nil {
		return c, nil
	}
	return nil, errors.New("sqs: a delivery settled before Deliveries")
}

func (q *Queue) consumer() *consumer {
	q.subMu.Lock()
	defer q.subMu.Unlock()
	return q.sub
}

// Ack deletes messages whose rides the store has written
// (DeleteMessageBatch, ten a request). A message SQS did not delete is
// delivered again after its visibility timeout, and the store's
// idempotency absorbs it; the error says how many.
func (q *Queue) Ack(ctx context.Context, ds []ports.Delivery) error {
	return q.settle(ctx, ds, q.deleteMessages)
}

// Nack hands messages back to be delivered again at once (their
// visibility set to 0). A message received MaxReceiveCount times goes to
// the dead-letter queue at its next receive (the redrive policy).
func (q *Queue) Nack(ctx context.Context, ds []ports.Delivery) error {
	return q.settle(ctx, ds, func(ctx context.Context, handles []string) error {
		if _, err := q.changeVisibility(ctx, handles, 0); err != nil {
			return fmt.Errorf("%w: sqs: hand back %d messages (SQS delivers them again after the visibility timeout): %w", domain.ErrUnavailable, len(handles), err)
		}
		return nil
	})
}

// settle stops holding the deliveries (no more extensions, room for more
// receives), then settles them with SQS through do: what SQS does not
// settle comes back when its visibility timeout ends.
func (q *Queue) settle(ctx context.Context, ds []ports.Delivery, do func(context.Context, []string) error) error {
	c, err := q.subscriber()
	if err != nil {
		return err
	}
	rs, err := c.release(ds)
	if err != nil {
		return err
	}
	defer c.maybeFinish()
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return do(ctx, handlesOf(rs))
}

// Message attributes on the messages this adapter dead-letters itself:
// why, and from which queue and message.
const (
	attrReason        = "skidata-reason"
	attrSourceQueue   = "skidata-source-queue"
	attrSourceMessage = "skidata-source-message"
	attrError         = "skidata-error"
)

// The reasons in attrReason (the same words the RabbitMQ adapter and the
// metrics use).
const (
	reasonRejected   = "rejected"
	reasonUnreadable = "unreadable"
)

// Reject settles a message of which the store refused some rides: the
// refused rides go to the dead-letter queue as one message naming the
// reason and the message they came from, and once SQS holds it the
// original is deleted (its other rides are stored). If the dead-letter
// send fails the original is handed back whole instead.
func (q *Queue) Reject(ctx context.Context, d ports.Delivery, refused []domain.LiftRide) error {
	r, ok := d.Receipt.(receipt)
	if !ok {
		return fmt.Errorf("sqs: a delivery with receipt %T was not handed out by this queue", d.Receipt)
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	err := q.send(ctx, q.names.dlqURL, encodeBody(refused), q.deadLetterAttrs(reasonRejected, r.id, ""))
	if err != nil {
		nackErr := q.Nack(ctx, []ports.Delivery{d})
		return fmt.Errorf("%w: sqs: dead-letter %d refused rides of message %s (handed back whole instead): %w", domain.ErrUnavailable, len(refused), r.id, errors.Join(err, nackErr))
	}
	q.cfg.Metrics.RidesDeadLettered(reasonRejected, len(refused))
	return q.Ack(ctx, []ports.Delivery{d})
}

// deadLetterUnreadable moves a message whose body does not decode to the
// dead-letter queue as it is, and deletes it. If either step fails it is
// left as it is: it comes back after its visibility timeout, and the
// redrive policy moves it after MaxReceiveCount receives.
func (c *consumer) deadLetterUnreadable(ctx context.Context, r receipt, body string, why error) {
	q := c.q
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := q.send(ctx, q.names.dlqURL, body, q.deadLetterAttrs(reasonUnreadable, r.id, why.Error()))
	if err != nil {
		q.cfg.Logger.Error("sqs: an unreadable message could not be dead-lettered; the redrive policy moves it after its last receive", "queue", q.names.name, "message", r.id, "why", why, "err", err)
		return
	}
	q.cfg.Metrics.RidesDeadLettered(reasonUnreadable, 1)
	if err := q.deleteMessages(ctx, []string{r.handle}); err != nil {
		q.cfg.Logger.Warn("sqs: an unreadable message was dead-lettered but not deleted; it will be dead-lettered again", "queue", q.names.name, "message", r.id, "err", err)
	}
	q.cfg.Logger.Error("sqs: unreadable message moved to the dead-letter queue", "queue", q.names.name, "message", r.id, "why", why)
}

// deadLetterAttrs are the attributes of a message this adapter
// dead-letters itself.
func (q *Queue) deadLetterAttrs(reason, sourceMessage, why string) map[string]types.MessageAttributeValue {
	str := func(s string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
	}
	attrs := map[string]types.MessageAttributeValue{
		attrReason:        str(reason),
		attrSourceQueue:   str(q.names.name),
		attrSourceMessage: str(sourceMessage),
	}
	if why != "" {
		attrs[attrError] = str(why[:min(len(why), 1024)])
	}
	return attrs
}

func handlesOf(rs []receipt) []string {
	hs := make([]string, len(rs))
	for i, r := range rs {
		hs[i] = r.handle
	}
	return hs
}

// Close stops receiving; what the pollers received and had not handed out
// goes back to SQS, and the deliveries channel closes once every message
// handed out has been settled. Settlements keep working after Close.
func (q *Queue) Close() error {
	if c := q.consumer(); c != nil {
		c.close()
	}
	return nil
}

func (c *consumer) close() {
	c.mu.Lock()
	already := c.closing
	c.closing = true
	c.mu.Unlock()
	if !already {
		c.stopPolling()
		c.maybeFinish()
	}
}

// maybeFinish closes the deliveries channel once closing, with every
// poller returned and nothing held.
func (c *consumer) maybeFinish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || !c.closing || c.pollers > 0 || len(c.held) > 0 {
		return
	}
	c.finish()
}

// finish ends the subscription; called with mu held.
func (c *consumer) finish() {
	c.finished = true
	close(c.out)
	c.stopBeat()
}

// stopNow is Disconnect's part: stop receiving and extending, forget what
// is held, and end the deliveries.
func (c *consumer) stopNow() {
	c.close()
	<-c.pollersDone
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.held)
	if !c.finished {
		c.finish()
	}
}
