package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cenkalti/backoff/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// deliveryCountHeader counts deliveries of a classic-queue ride across the
// requeues this adapter does itself (classic queues keep no count).
const deliveryCountHeader = "x-skidata-deliveries"

// consumer is the subscribing side: one connection, one channel per shard.
// Each channel is a lane with its own id, never reused: delivery tags are per
// channel, so an ack is sent only on the channel that delivered, and a
// delivery from a channel that has died is not acked at all (the broker
// redelivers it, which the idempotent stores absorb).
type consumer struct {
	b   *Broker
	out chan ports.Delivery

	mu         sync.Mutex
	lanes      map[uint32]*lane
	nextLane   uint32
	held       int64 // received from the broker on live lanes, not yet settled
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

	sendMu sync.Mutex // orders acks and nacks on the channel

	// Guarded by consumer.mu.
	pending map[uint64]*message
	dead    bool
}

// message is one broker message handed out as one delivery per ride. It is
// settled with the broker once every ride of it is settled: acked if all
// were stored (rides refused as invalid having been dead-lettered alone),
// requeued whole if any was handed back.
type message struct {
	m         amqp.Delivery
	rides     []domain.LiftRide
	settled   []bool
	left      int  // rides not settled yet
	requeue   bool // some ride was nacked: the whole message goes back
	rejectAll bool // the only ride was refused: dead-letter the message itself
}

// Deliveries starts consuming every shard. It may be called once per Broker.
// The channel closes after Close (or ctx ending) once every ride handed out
// has been acked or nacked.
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
	conn, err := b.dial(ctx, "consume")
	if err != nil {
		return nil, err
	}
	if err := b.declare(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: rabbitmq at %s: %w", domain.ErrUnavailable, b.url, err)
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
			return nil, fmt.Errorf("%w: rabbitmq at %s: consume %s: %w", domain.ErrUnavailable, b.url, b.cfg.ShardQueue(shard), err)
		}
	}
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
	l := &lane{id: c.nextLane, shard: shard, ch: ch, pending: map[uint64]*message{}}
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
		case <-c.finishedCh:
			conn.Close()
			return
		case <-ctx.Done(): // Disconnect: no more waiting for acks
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
// already put their unacked rides back in the queue.
func (c *consumer) dropLanes() {
	c.mu.Lock()
	for id, l := range c.lanes {
		l.dead = true
		for _, msg := range l.pending {
			c.held -= int64(msg.left)
		}
		clear(l.pending)
		delete(c.lanes, id)
	}
	c.mu.Unlock()
	c.maybeFinish()
}

// forward takes the lane's messages off the library eagerly (so they are
// counted in Depth) and hands their rides out one by one. Undecodable bodies
// are dead-lettered at once: no retry can make them readable; so are the
// invalid rides of a batch, each alone.
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
			body, err := decodeBody(m.Body)
			if err == nil && len(body.bad) > 0 && len(body.rides) > 0 {
				err = c.deadLetterRecords(l, m, body)
			}
			if err != nil || len(body.rides) == 0 {
				if m.Nack(false, false) == nil { // to the dead-letter exchange
					c.b.cfg.Metrics.RidesDeadLettered("unreadable", max(1, len(body.bad)))
				}
				continue
			}
			ds := c.track(l, m, body.rides)
			if closing {
				_ = c.settle(l, ds, settleRequeue)
				continue
			}
			queue = append(queue, ds...)
		case send <- head:
			queue = queue[1:]
		case <-closingCh:
			closingCh, closing = nil, true
			_ = c.settle(l, queue, settleRequeue)
			queue = nil
		}
	}
	if len(queue) > 0 {
		_ = c.settle(l, queue, settleRequeue)
	}
}

func (c *consumer) isDead(l *lane) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return l.dead
}

// track records a message as held and returns its deliveries, one per ride.
// On a lane already dead the deliveries are still returned: settling them is
// a no-op, and the broker has requeued the message.
func (c *consumer) track(l *lane, m amqp.Delivery, rides []domain.LiftRide) []ports.Delivery {
	ds := make([]ports.Delivery, len(rides))
	for i, r := range rides {
		ds[i] = ports.Delivery{Ride: r, Receipt: receipt{lane: l.id, tag: m.DeliveryTag, ride: uint16(i)}}
	}
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !l.dead {
		l.pending[m.DeliveryTag] = &message{m: m, rides: rides, settled: make([]bool, len(rides)), left: len(rides)}
		c.held += int64(len(rides))
	}
	return ds
}

func (c *consumer) heldCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// Ack acknowledges a batch the store has written.
func (b *Broker) Ack(_ context.Context, batch []ports.Delivery) error {
	return b.settleAll(batch, settleAck)
}

// Nack hands a batch back to be delivered again. A ride delivered
// DeliveryLimit times goes to the dead-letter queue instead.
func (b *Broker) Nack(_ context.Context, batch []ports.Delivery) error {
	return b.settleAll(batch, settleRequeue)
}

// Reject sends rides the store refused as invalid straight to the
// dead-letter queue, without waiting for the delivery limit.
func (b *Broker) Reject(_ context.Context, batch []ports.Delivery) error {
	return b.settleAll(batch, settleReject)
}

func (b *Broker) settleAll(batch []ports.Delivery, how settleMode) error {
	b.subMu.Lock()
	c := b.sub
	b.subMu.Unlock()
	if c == nil {
		return errors.New("rabbitmq: Ack or Nack before Deliveries")
	}
	byLane := map[uint32][]ports.Delivery{}
	for _, d := range batch {
		r := receiptOf(d)
		byLane[r.lane] = append(byLane[r.lane], d)
	}
	var errs []error
	for id, ds := range byLane {
		c.mu.Lock()
		l := c.lanes[id]
		c.mu.Unlock()
		if l == nil {
			continue // that channel died; the broker redelivers its rides
		}
		if err := c.settle(l, ds, how); err != nil {
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
	settleReject
)

// settle records the outcome of rides of one lane and settles with the
// broker every message whose rides are now all settled. Acks use one
// multiple-ack when the completed messages hold every pending tag up to the
// highest (the usual case for a persister that acks in order), else one
// frame per message: a multiple-ack must never cover a message still being
// processed.
func (c *consumer) settle(l *lane, ds []ports.Delivery, how settleMode) error {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	c.mu.Lock()
	if l.dead {
		c.mu.Unlock()
		return nil
	}
	var acks []uint64
	var requeues, rejects []*message
	var deadOne []deadRide // rides of a batch refused alone
	touched := map[uint64]*message{}
	for _, d := range ds {
		r := receiptOf(d)
		msg, ok := l.pending[r.tag]
		if !ok || int(r.ride) >= len(msg.settled) || msg.settled[r.ride] {
			continue
		}
		touched[r.tag] = msg
		msg.settled[r.ride] = true
		msg.left--
		c.held--
		switch how {
		case settleRequeue:
			msg.requeue = true
		case settleReject:
			if len(msg.rides) == 1 {
				msg.rejectAll = true
			} else {
				deadOne = append(deadOne, deadRide{msg: msg, ride: msg.rides[r.ride]})
			}
		}
	}
	// Rides refused alone are dead-lettered before their message can be
	// acked: they are published to the dead-letter exchange (confirmed),
	// and a message whose refused ride could not be published goes back
	// whole instead.
	if len(deadOne) > 0 {
		c.mu.Unlock()
		for _, dr := range deadOne {
			if err := c.deadLetterRide(l, dr.msg.m, dr.ride); err != nil {
				c.mu.Lock()
				dr.msg.requeue = true
				c.mu.Unlock()
			}
		}
		c.mu.Lock()
		if l.dead {
			c.mu.Unlock()
			return nil
		}
	}
	for tag, msg := range touched {
		if msg.left > 0 || l.pending[tag] != msg {
			continue
		}
		delete(l.pending, tag)
		switch {
		case msg.requeue:
			requeues = append(requeues, msg)
		case msg.rejectAll:
			rejects = append(rejects, msg)
		default:
			acks = append(acks, tag)
		}
	}
	if len(acks)+len(requeues)+len(rejects) == 0 {
		c.mu.Unlock()
		return nil
	}
	multiple := len(acks) > 1
	var top uint64
	if multiple {
		top = slices.Max(acks)
		for t := range l.pending {
			if t <= top {
				multiple = false
				break
			}
		}
	}
	c.mu.Unlock()

	var err error
	if multiple {
		err = l.ch.Ack(top, true)
	} else {
		for _, t := range acks {
			err = errors.Join(err, l.ch.Ack(t, false))
		}
	}
	for _, msg := range rejects {
		if e := l.ch.Nack(msg.m.DeliveryTag, false, false); e != nil { // to the dead-letter exchange
			err = errors.Join(err, e)
		} else {
			c.b.cfg.Metrics.RidesDeadLettered("rejected", 1)
		}
	}
	if len(requeues) > 0 {
		if c.b.cfg.QueueType == QueueTypeClassic && c.b.cfg.DeliveryLimit > 0 {
			err = errors.Join(err, c.requeueCounted(l, requeues))
		} else {
			for _, msg := range requeues {
				err = errors.Join(err, l.ch.Nack(msg.m.DeliveryTag, false, true))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%w: settle %d messages on %s (they will be delivered again): %w", domain.ErrUnavailable, len(acks)+len(requeues)+len(rejects), c.b.cfg.ShardQueue(l.shard), err)
	}
	return nil
}

type deadRide struct {
	msg  *message
	ride domain.LiftRide
}

// Headers on a ride this adapter dead-letters alone (one ride of a batch):
// the broker's x-death header describes the message it dead-letters
// itself, and these say the same for a ride split out of one.
const (
	deadReasonHeader = "x-skidata-dead-reason"
	deadQueueHeader  = "x-skidata-dead-queue"
	deadBatchHeader  = "x-skidata-batch"
)

// deadLetterRide publishes one ride of a batch, alone, to the dead-letter
// exchange, and waits for the confirm.
func (c *consumer) deadLetterRide(l *lane, m amqp.Delivery, ride domain.LiftRide) error {
	return c.deadLetterBody(l, m, ride.Key(), encodeRide(ride), "rejected")
}

// deadLetterRecords dead-letters the invalid records of a batch alone.
func (c *consumer) deadLetterRecords(l *lane, m amqp.Delivery, body decodedBody) error {
	for i, rec := range body.bad {
		id := fmt.Sprintf("%s.bad%d", m.MessageId, i)
		if err := c.deadLetterBody(l, m, id, rec, "unreadable"); err != nil {
			return err
		}
	}
	return nil
}

func (c *consumer) deadLetterBody(l *lane, m amqp.Delivery, id string, body []byte, reason string) error {
	err := c.b.publishRaw(context.Background(), publishing{
		exchange:    c.b.cfg.DeadLetterExchange(),
		messageID:   id,
		contentType: singleContentType,
		body:        body,
		headers: amqp.Table{
			deadReasonHeader: reason,
			deadQueueHeader:  c.b.cfg.ShardQueue(l.shard),
			deadBatchHeader:  m.MessageId,
		},
		what: "dead letter " + id,
	})
	if err == nil {
		c.b.cfg.Metrics.RidesDeadLettered(reason, 1)
	}
	return err
}

// requeueCounted is Nack for classic queues, which keep no delivery count:
// the ride is republished with its count in a header (confirmed) and the old
// copy acked, or dead-lettered once it reached the limit. Rides redelivered
// because a consumer died are not counted this way.
func (c *consumer) requeueCounted(l *lane, msgs []*message) error {
	var errs []error
	for _, msg := range msgs {
		m := msg.m
		n := headerInt(m.Headers, deliveryCountHeader) + 1
		if n >= int64(c.b.cfg.DeliveryLimit) {
			errs = append(errs, l.ch.Nack(m.DeliveryTag, false, false))
			continue
		}
		err := c.b.publishRaw(context.Background(), publishing{
			queue: m.RoutingKey, messageID: m.MessageId, contentType: m.ContentType, body: m.Body,
			headers: amqp.Table{deliveryCountHeader: n}, what: "requeued message " + m.MessageId,
		})
		if err != nil {
			errs = append(errs, l.ch.Nack(m.DeliveryTag, false, true))
			continue
		}
		errs = append(errs, l.ch.Ack(m.DeliveryTag, false))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: requeue %d rides on %s: %w", domain.ErrUnavailable, len(msgs), c.b.cfg.ShardQueue(l.shard), err)
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

// Close stops handing out rides (the ones prefetched but not handed out go
// back to the broker); the deliveries channel closes once every ride handed
// out has been acked or nacked. The connection stays up for those acks:
// Disconnect closes it.
func (b *Broker) Close() error {
	b.subMu.Lock()
	c := b.sub
	b.subMu.Unlock()
	if c != nil {
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

// stopNow is Disconnect's part: close and stop waiting for acks.
func (c *consumer) stopNow() {
	c.close()
	c.stopRun()
	<-c.done
}

// receipt is what the consumer puts in a delivery: which lane (shard
// channel) it came on, the broker's delivery tag of its message there, and
// which ride of the message it is.
type receipt struct {
	lane uint32
	tag  uint64
	ride uint16
}

func receiptOf(d ports.Delivery) receipt {
	r, _ := d.Receipt.(receipt)
	return r
}
