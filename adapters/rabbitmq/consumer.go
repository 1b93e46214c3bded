package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cenkalti/backoff/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// deliveryCountHeader counts deliveries of a classic-queue message across
// the requeues this adapter does itself (classic queues keep no count).
const deliveryCountHeader = "x-skidata-deliveries"

// consumer is the subscribing side: one connection, one channel per shard.
// Each channel is a lane with its own id, never reused: delivery tags are per
// channel, so a message is settled only on the channel that delivered it,
// and a delivery from a channel that has died is not settled at all (the
// broker redelivers it, which the idempotent stores absorb).
//
// One broker message is one ports.Delivery, from the queue to the store and
// back: the receipt names the message, and Ack, Nack and Reject settle it
// whole.
type consumer struct {
	b    *Broker
	out  chan ports.Delivery
	node int // index in Broker.urls of the node connected to; used by run only

	mu         sync.Mutex
	lanes      map[uint32]*lane
	nextLane   uint32
	held       int64 // messages received on live lanes, not yet settled
	heldRides  int64 // the rides in them
	forwarders int
	closing    bool
	finished   bool

	closingCh  chan struct{} // closed by Close: hand out nothing more
	finishedCh chan struct{} // closed once out is closed
	stopRun    context.CancelFunc
	done       chan struct{} // the run loop has returned
}

type lane struct {
	id    uint32
	shard int
	ch    *amqp.Channel
	tag   string

	sendMu sync.Mutex // orders the settlements sent on the channel

	// Guarded by consumer.mu.
	pending map[uint64]held // by delivery tag
	dead    bool
}

// held is a message handed out and not yet settled.
type held struct {
	m     amqp.Delivery
	rides int
}

// receipt is what the consumer puts in a delivery: the lane (shard
// channel) it came on and the broker's delivery tag there.
type receipt struct {
	lane uint32
	tag  uint64
}

// Deliveries starts consuming every shard. It may be called once per Broker.
// The channel closes after Close (or ctx ending) once every message handed
// out has been settled.
func (b *Broker) Deliveries(ctx context.Context) (<-chan ports.Delivery, error) {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	if b.sub != nil {
		return nil, errors.New("rabbitmq: Deliveries called twice on one Broker")
	}
	runCtx, stop := context.WithCancel(context.Background())
	c := &consumer{
		b:          b,
		out:        make(chan ports.Delivery),
		lanes:      map[uint32]*lane{},
		closingCh:  make(chan struct{}),
		finishedCh: make(chan struct{}),
		stopRun:    stop,
		done:       make(chan struct{}),
	}
	conn, err := c.connect(ctx)
	if err != nil {
		stop()
		return nil, fmt.Errorf("rabbitmq: start consuming: %w", err)
	}
	b.sub = c
	go c.run(runCtx, conn)
	go func() {
		select {
		case <-ctx.Done():
			c.close()
		case <-c.finishedCh:
		}
	}()
	return c.out, nil
}

// connect opens the consuming connection and one lane per shard.
func (c *consumer) connect(ctx context.Context) (*amqp.Connection, error) {
	b := c.b
	conn, node, err := b.dialDeclared(ctx, "consume")
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		conn.Close()
		return nil, errors.New("subscriber closed")
	}
	for shard := range b.cfg.Shards {
		if err := c.openLane(conn, shard); err != nil {
			conn.Close()
			b.failed(node)
			return nil, fmt.Errorf("%w: rabbitmq at %s: consume %s: %w", domain.ErrUnavailable, b.masked[node], b.cfg.ShardQueue(shard), err)
		}
	}
	c.node = node
	return conn, nil
}

func (c *consumer) openLane(conn *amqp.Connection, shard int) error {
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(c.b.cfg.Prefetch, 0, false); err != nil {
		return err
	}
	c.mu.Lock()
	c.nextLane++
	l := &lane{id: c.nextLane, shard: shard, ch: ch, pending: map[uint64]held{}}
	l.tag = fmt.Sprintf("%s.%d", c.b.cfg.ConnectionName, l.id)
	c.mu.Unlock()
	msgs, err := ch.Consume(c.b.cfg.ShardQueue(shard), l.tag, false, false, false, false, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.lanes[l.id] = l
	c.forwarders++
	c.mu.Unlock()
	go c.forward(l, msgs)
	return nil
}

// run keeps the consuming connection up until the subscriber has finished.
func (c *consumer) run(ctx context.Context, conn *amqp.Connection) {
	defer close(c.done)
	for {
		closed := conn.NotifyClose(make(chan *amqp.Error, 1))
		select {
		case <-closed:
			c.dropLanes()
			c.b.failed(c.node) // reconnect starting with the next node
		case <-c.finishedCh:
			conn.Close()
			return
		case <-ctx.Done(): // Disconnect: no more waiting for settlements
			conn.Close()
			c.dropLanes()
			return
		}
		next, err := backoff.Retry(ctx, func() (*amqp.Connection, error) {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return nil, backoff.Permanent(errors.New("subscriber closed"))
			}
			return c.connect(ctx)
		}, backoff.WithBackOff(c.b.newBackOff()), backoff.WithMaxElapsedTime(0))
		if err != nil {
			c.maybeFinish()
			return
		}
		conn = next
	}
}

// dropLanes forgets every lane after the connection died: the broker has
// already put their unsettled messages back in the queue.
func (c *consumer) dropLanes() {
	c.mu.Lock()
	for id, l := range c.lanes {
		l.dead = true
		for _, h := range l.pending {
			c.held--
			c.heldRides -= int64(h.rides)
		}
		clear(l.pending)
		delete(c.lanes, id)
	}
	c.mu.Unlock()
	c.maybeFinish()
}

// forward takes the lane's messages off the library eagerly (so they are
// counted in Depth) and hands each out as one delivery. A body no release
// can read is dead-lettered at once: no retry can make it readable. So are
// the unreadable records of a batch (decodeBody keeps the rest).
func (c *consumer) forward(l *lane, msgs <-chan amqp.Delivery) {
	defer func() {
		c.mu.Lock()
		c.forwarders--
		c.mu.Unlock()
		c.maybeFinish()
	}()
	var queue []ports.Delivery
	closingCh := c.closingCh
	closing := false
	for msgs != nil || (len(queue) > 0 && !closing) {
		var send chan<- ports.Delivery
		var head ports.Delivery
		if len(queue) > 0 && !closing {
			send, head = c.out, queue[0]
		}
		select {
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				if c.isDead(l) {
					queue = nil // the broker requeued them with the channel
				}
				continue
			}
			d, ok := c.take(l, m)
			if !ok {
				continue
			}
			if closing {
				_ = c.settle(l, []uint64{m.DeliveryTag}, settleRequeue)
				continue
			}
			queue = append(queue, d)
		case send <- head:
			queue[0] = ports.Delivery{}
			queue = queue[1:]
		case <-closingCh:
			closingCh, closing = nil, true
			_ = c.settle(l, tagsOf(queue), settleRequeue)
			queue = nil
		}
	}
	if len(queue) > 0 {
		_ = c.settle(l, tagsOf(queue), settleRequeue)
	}
}

// take decodes a message and records it as held; ok is false if the
// message was unreadable and has been dead-lettered instead.
func (c *consumer) take(l *lane, m amqp.Delivery) (ports.Delivery, bool) {
	body, err := decodeBody(m.Body)
	if err == nil && len(body.bad) > 0 && len(body.rides) > 0 {
		err = c.deadLetterRecords(l, m, body)
	}
	if err != nil || len(body.rides) == 0 {
		if m.Nack(false, false) == nil { // to the dead-letter exchange
			c.b.cfg.Metrics.RidesDeadLettered("unreadable", max(1, len(body.bad)))
		}
		return ports.Delivery{}, false
	}
	c.b.observeMessage(len(body.rides))
	c.mu.Lock()
	if !l.dead { // on a dead lane the broker has requeued it already
		l.pending[m.DeliveryTag] = held{m: m, rides: len(body.rides)}
		c.held++
		c.heldRides += int64(len(body.rides))
	}
	c.mu.Unlock()
	return ports.Delivery{Rides: body.rides, Receipt: receipt{lane: l.id, tag: m.DeliveryTag}}, true
}

func tagsOf(ds []ports.Delivery) []uint64 {
	tags := make([]uint64, len(ds))
	for i, d := range ds {
		tags[i] = receiptOf(d).tag
	}
	return tags
}

func (c *consumer) isDead(l *lane) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.dead
}

func (c *consumer) heldCount() (messages, rides int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held, c.heldRides
}

// Ack acknowledges messages whose rides the store has written.
func (b *Broker) Ack(_ context.Context, ds []ports.Delivery) error {
	return b.settleAll(ds, settleAck)
}

// Nack hands messages back to be delivered again. A message delivered
// DeliveryLimit times goes to the dead-letter queue instead.
func (b *Broker) Nack(_ context.Context, ds []ports.Delivery) error {
	return b.settleAll(ds, settleRequeue)
}

// Reject settles a message of which the store refused some rides: when it
// refused them all the broker dead-letters the message itself (its x-death
// header says why and from where); otherwise the refused rides are
// published, as one message naming its source, to the dead-letter exchange
// (confirmed) and the original is acked, its other rides being stored. If
// that publish fails the original goes back whole instead.
func (b *Broker) Reject(ctx context.Context, d ports.Delivery, refused []domain.LiftRide) error {
	c, err := b.subscriber()
	if err != nil {
		return err
	}
	l := c.liveLane(receiptOf(d).lane)
	if l == nil {
		return nil // that channel died; the broker redelivers the message
	}
	how := settleDeadLetter
	if len(refused) < len(d.Rides) {
		how = settleAck
		c.mu.Lock()
		h, ok := l.pending[receiptOf(d).tag]
		c.mu.Unlock()
		if !ok {
			return nil
		}
		if err := c.deadLetterRides(l, h.m, refused); err != nil {
			how = settleRequeue
		}
	}
	err = c.settle(l, []uint64{receiptOf(d).tag}, how)
	c.maybeFinish()
	return err
}

// consumer is the subscription Deliveries started, nil before it.
func (b *Broker) consumer() *consumer {
	b.subMu.Lock()
	defer b.subMu.Unlock()
	return b.sub
}

// subscriber is consumer for a settlement, which needs one.
func (b *Broker) subscriber() (*consumer, error) {
	if c := b.consumer(); c != nil {
		return c, nil
	}
	return nil, errors.New("rabbitmq: a delivery settled before Deliveries")
}

func (c *consumer) liveLane(id uint32) *lane {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lanes[id]
}

func (b *Broker) settleAll(ds []ports.Delivery, how settleMode) error {
	c, err := b.subscriber()
	if err != nil {
		return err
	}
	byLane := map[uint32][]uint64{}
	for _, d := range ds {
		r := receiptOf(d)
		byLane[r.lane] = append(byLane[r.lane], r.tag)
	}
	var errs []error
	for id, tags := range byLane {
		l := c.liveLane(id)
		if l == nil {
			continue // that channel died; the broker redelivers its messages
		}
		if err := c.settle(l, tags, how); err != nil {
			errs = append(errs, err)
		}
	}
	c.maybeFinish()
	return errors.Join(errs...)
}

type settleMode int

const (
	settleAck settleMode = iota
	settleRequeue
	settleDeadLetter
)

// settle settles messages of one lane with the broker. Acks use one
// multiple-ack when the messages hold every pending tag up to the highest
// (the usual case for a persister that acks in order), else one frame per
// message: a multiple-ack must never cover a message still being processed.
func (c *consumer) settle(l *lane, tags []uint64, how settleMode) error {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	c.mu.Lock()
	if l.dead {
		c.mu.Unlock()
		return nil
	}
	msgs := make([]amqp.Delivery, 0, len(tags))
	rides := 0
	for _, tag := range tags {
		h, ok := l.pending[tag]
		if !ok {
			continue // settled already
		}
		delete(l.pending, tag)
		c.held--
		c.heldRides -= int64(h.rides)
		rides += h.rides
		msgs = append(msgs, h.m)
	}
	var top uint64
	for _, m := range msgs {
		top = max(top, m.DeliveryTag)
	}
	multiple := how == settleAck && len(msgs) > 1
	if multiple {
		for t := range l.pending {
			if t <= top {
				multiple = false
				break
			}
		}
	}
	c.mu.Unlock()
	if len(msgs) == 0 {
		return nil
	}

	var err error
	switch {
	case multiple:
		err = l.ch.Ack(top, true)
	case how == settleAck:
		for _, m := range msgs {
			err = errors.Join(err, l.ch.Ack(m.DeliveryTag, false))
		}
	case how == settleDeadLetter:
		for _, m := range msgs {
			err = errors.Join(err, l.ch.Nack(m.DeliveryTag, false, false)) // to the dead-letter exchange
		}
		if err == nil {
			c.b.cfg.Metrics.RidesDeadLettered("rejected", rides)
		}
	case c.b.cfg.QueueType == QueueTypeClassic && c.b.cfg.DeliveryLimit > 0:
		err = c.requeueCounted(l, msgs)
	default:
		for _, m := range msgs {
			err = errors.Join(err, l.ch.Nack(m.DeliveryTag, false, true))
		}
	}
	if err != nil {
		return fmt.Errorf("%w: settle %d messages on %s (they will be delivered again): %w", domain.ErrUnavailable, len(msgs), c.b.cfg.ShardQueue(l.shard), err)
	}
	return nil
}

// Headers on a message this adapter dead-letters itself (the refused rides
// of a batch, the unreadable records of one): the broker's x-death header
// describes the messages it dead-letters, and these say the same for a
// message made from part of one.
const (
	deadReasonHeader = "x-skidata-dead-reason"
	deadQueueHeader  = "x-skidata-dead-queue"
	deadBatchHeader  = "x-skidata-batch"
)

// deadLetterRides publishes the refused rides of a message, as one
// message, to the dead-letter exchange, and waits for the confirm.
func (c *consumer) deadLetterRides(l *lane, m amqp.Delivery, rides []domain.LiftRide) error {
	return c.deadLetterBody(l, m, m.MessageId+".refused", batchContentType, encodeBatch(rides), "rejected", len(rides))
}

// deadLetterRecords dead-letters the unreadable records of a batch, each
// alone as a version-1 body (a record that does not decode cannot be put
// in a batch of rides).
func (c *consumer) deadLetterRecords(l *lane, m amqp.Delivery, body decodedBody) error {
	for i, rec := range body.bad {
		id := fmt.Sprintf("%s.bad%d", m.MessageId, i)
		if err := c.deadLetterBody(l, m, id, singleContentType, rec, "unreadable", 1); err != nil {
			return err
		}
	}
	return nil
}

func (c *consumer) deadLetterBody(l *lane, m amqp.Delivery, id, contentType string, body []byte, reason string, rides int) error {
	err := c.b.publishRaw(context.Background(), publishing{
		exchange:    c.b.cfg.DeadLetterExchange(),
		messageID:   id,
		contentType: contentType,
		body:        body,
		rides:       rides,
		headers: amqp.Table{
			deadReasonHeader: reason,
			deadQueueHeader:  c.b.cfg.ShardQueue(l.shard),
			deadBatchHeader:  m.MessageId,
		},
	})
	if err == nil {
		c.b.cfg.Metrics.RidesDeadLettered(reason, rides)
	}
	return err
}

// requeueCounted is Nack for classic queues, which keep no delivery count:
// the message is republished with its count in a header (confirmed) and the
// old copy acked, or dead-lettered once it reached the limit. Messages
// redelivered because a consumer died are not counted this way.
func (c *consumer) requeueCounted(l *lane, msgs []amqp.Delivery) error {
	var errs []error
	for _, m := range msgs {
		n := headerInt(m.Headers, deliveryCountHeader) + 1
		if n >= int64(c.b.cfg.DeliveryLimit) {
			errs = append(errs, l.ch.Nack(m.DeliveryTag, false, false))
			continue
		}
		err := c.b.publishRaw(context.Background(), publishing{
			queue: m.RoutingKey, messageID: m.MessageId, contentType: m.ContentType, body: m.Body,
			headers: amqp.Table{deliveryCountHeader: n},
		})
		if err != nil {
			errs = append(errs, l.ch.Nack(m.DeliveryTag, false, true))
			continue
		}
		errs = append(errs, l.ch.Ack(m.DeliveryTag, false))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: requeue %d messages on %s: %w", domain.ErrUnavailable, len(msgs), c.b.cfg.ShardQueue(l.shard), err)
	}
	return nil
}

func headerInt(h amqp.Table, key string) int64 {
	switch v := h[key].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int:
		return int64(v)
	}
	return 0
}

// Close stops handing out messages (the ones prefetched but not handed out
// go back to the broker); the deliveries channel closes once every message
// handed out has been settled. The connection stays up for those
// settlements: Disconnect closes it.
func (b *Broker) Close() error {
	if c := b.consumer(); c != nil {
		c.close()
	}
	return nil
}

func (c *consumer) close() {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	close(c.closingCh)
	lanes := make([]*lane, 0, len(c.lanes))
	for _, l := range c.lanes {
		lanes = append(lanes, l)
	}
	c.mu.Unlock()
	for _, l := range lanes {
		_ = l.ch.Cancel(l.tag, false) // ends the lane's delivery stream
	}
	c.maybeFinish()
}

// maybeFinish closes the deliveries channel once closing and settled.
func (c *consumer) maybeFinish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || !c.closing || c.forwarders > 0 || c.held > 0 {
		return
	}
	c.finished = true
	close(c.out)
	close(c.finishedCh)
}

// stopNow is Disconnect's part: close and stop waiting for settlements.
func (c *consumer) stopNow() {
	c.close()
	c.stopRun()
	<-c.done
}

func receiptOf(d ports.Delivery) receipt {
	r, _ := d.Receipt.(receipt)
	return r
}
