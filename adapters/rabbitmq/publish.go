package rabbitmq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
)

// Group commit. Every ride is confirmed by the broker before Publish
// returns, but rides published at the same time to one shard share one
// message and so one confirm (one quorum-log append and fsync on the
// broker): a per-shard batcher takes whatever rides are waiting, up to
// Config.PublishBatch, as soon as one of the Config.PublishChannels
// in-flight slots is free. Under light load a ride travels alone and waits
// for nothing; under heavy load the slots are busy, rides pile up behind
// them, and each confirm covers many rides. Config.PublishLinger can add a
// deliberate wait for fuller batches.

// pendingRide is one Publish waiting for its batch's confirm.
type pendingRide struct {
	ride domain.LiftRide
	ctx  context.Context
	done chan error // buffered: the batcher never blocks on it
}

// batcher is one shard's group-commit loop.
type batcher struct {
	b     *Broker
	queue string
	in    chan *pendingRide
}

func (b *Broker) startBatchers(ctx context.Context) {
	b.slots = make(chan struct{}, b.cfg.PublishChannels)
	for shard := range b.cfg.Shards {
		bt := &batcher{b: b, queue: b.cfg.ShardQueue(shard), in: make(chan *pendingRide, b.cfg.PublishBatch)}
		b.batchers = append(b.batchers, bt)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			bt.run(ctx)
		}()
	}
}

// Publish hands the ride to its shard's batcher and waits until the broker
// confirmed the message that carries it. Many publishes are in flight at
// once; each returns with its own batch's outcome.
func (b *Broker) Publish(ctx context.Context, ride domain.LiftRide) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PublishTimeout)
	defer cancel()
	p := &pendingRide{ride: ride, ctx: ctx, done: make(chan error, 1)}
	bt := b.batchers[b.cfg.shardOf(ride.SkierID())]
	select {
	case bt.in <- p:
	case <-ctx.Done():
		return fmt.Errorf("%w: ride %s not handed to the broker in time (too many publishes waiting)", domain.ErrUnavailable, ride.Key())
	case <-b.stopped:
		return fmt.Errorf("%w: rabbitmq publisher closed by this process", domain.ErrUnavailable)
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: ride %s not confirmed by the broker in time (it may or may not be queued; publishing again is safe): %w", domain.ErrUnavailable, ride.Key(), ctx.Err())
	case <-b.stopped:
		return fmt.Errorf("%w: rabbitmq publisher closed by this process before ride %s was confirmed (it may or may not be queued; publishing again is safe)", domain.ErrUnavailable, ride.Key())
	}
}

// run forms batches until ctx ends: it waits for a first ride, then for a
// free in-flight slot (and, with a linger, for the linger to pass),
// gathering rides meanwhile, and publishes the batch in the background.
func (bt *batcher) run(ctx context.Context) {
	limit := bt.b.cfg.PublishBatch
	linger := bt.b.cfg.PublishLinger
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var batch []*pendingRide
		select {
		case p := <-bt.in:
			batch = append(batch, p)
		case <-ctx.Done():
			return
		}
		var lingerC <-chan time.Time
		if linger > 0 {
			timer.Reset(linger)
			lingerC = timer.C
		}
		gotSlot := false
		for !gotSlot {
			var in chan *pendingRide
			if len(batch) < limit {
				in = bt.in
			}
			var slots chan struct{}
			if lingerC == nil || len(batch) >= limit {
				slots = bt.b.slots
			}
			select {
			case p := <-in:
				batch = append(batch, p)
			case <-lingerC:
				lingerC = nil
			case slots <- struct{}{}:
				gotSlot = true
			case <-ctx.Done():
				failAll(batch, fmt.Errorf("%w: rabbitmq publisher closed by this process", domain.ErrUnavailable))
				return
			}
		}
		// Timers are synchronous since Go 1.23 (go.mod's version): a
		// stopped timer delivers no stale value, so no drain is needed.
		timer.Stop()
		// Take what arrived while waiting for the slot.
	fill:
		for len(batch) < limit {
			select {
			case p := <-bt.in:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		go func() {
			defer func() { <-bt.b.slots }()
			bt.publish(ctx, batch)
		}()
	}
}

func failAll(batch []*pendingRide, err error) {
	for _, p := range batch {
		p.done <- err
	}
}

// publish sends one batch message and tells every waiting ride its outcome.
// Rides whose caller has already given up are left out: they were answered
// with an error, and publishing them is not wrong but is wasted work.
func (bt *batcher) publish(ctx context.Context, batch []*pendingRide) {
	live := batch[:0]
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.done <- err
			continue
		}
		live = append(live, p)
	}
	if len(live) == 0 {
		return
	}
	rides := make([]domain.LiftRide, len(live))
	for i, p := range live {
		rides[i] = p.ride
	}
	id := bt.b.messageID()
	err := bt.b.publishRaw(ctx, publishing{
		queue:       bt.queue,
		messageID:   id,
		contentType: batchContentType,
		body:        encodeBatch(rides),
		what:        fmt.Sprintf("batch %s of %d rides", id, len(rides)),
	})
	failAll(live, err)
}

// messageID names a batch message uniquely within the broker's life: the
// connection name, this process's start and a sequence number. It is what a
// returned message is matched by, and what `skiapi dlq list` shows.
func (b *Broker) messageID() string {
	return b.cfg.ConnectionName + "." + b.startID + "." + strconv.FormatUint(b.msgSeq.Add(1), 10)
}

// publishing is one message to publish: to a queue through the default
// exchange, or (exchange set) to the dead-letter exchange.
type publishing struct {
	exchange    string
	queue       string
	messageID   string
	contentType string
	body        []byte
	headers     amqp.Table
	what        string // for errors: "batch X of n rides", "ride K"
}

// publishRaw publishes one message, mandatory, and waits for its confirm.
// The batchers, the classic-queue requeue, the dead-lettering of one ride
// of a batch and the DLQ replay share it. Mandatory means a message no
// queue takes (its queue was deleted) comes back instead of being confirmed
// and dropped, and is reported as not accepted.
func (b *Broker) publishRaw(ctx context.Context, m publishing) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PublishTimeout)
	defer cancel()
	s, err := b.session()
	if err != nil {
		return err
	}
	if b.blocked.Load() {
		return fmt.Errorf("%w: rabbitmq broker at %s is refusing publishes (resource alarm)", domain.ErrUnavailable, b.url)
	}
	pc := s.chans[b.rr.Add(1)%uint64(len(s.chans))]
	where := m.queue
	if m.exchange != "" {
		where = "exchange " + m.exchange
	}
	dc, err := pc.ch.PublishWithDeferredConfirmWithContext(ctx, m.exchange, m.queue, true, false, amqp.Publishing{
		DeliveryMode: amqp.Persistent,
		ContentType:  m.contentType,
		MessageId:    m.messageID,
		Headers:      m.headers,
		Body:         m.body,
	})
	if err != nil {
		return fmt.Errorf("%w: publish %s to %s: %w", domain.ErrUnavailable, m.what, where, err)
	}
	acked, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s not confirmed by the broker in time (it may or may not be queued; publishing again is safe): %w", domain.ErrUnavailable, m.what, err)
	case acked && pc.wasReturned(ctx, m.messageID):
		return fmt.Errorf("%w: broker returned %s: no queue %s (deleted?); nothing was accepted", domain.ErrUnavailable, m.what, where)
	case acked:
		return nil
	case pc.ch.IsClosed():
		return fmt.Errorf("%w: connection to rabbitmq broker at %s lost before it confirmed %s", domain.ErrUnavailable, b.url, m.what)
	default:
		return fmt.Errorf("%w: broker refused %s: queue %s is full (max %d messages)", domain.ErrUnavailable, m.what, where, b.cfg.perShardMaxLength())
	}
}

// pubChan is one confirm-mode channel and the listener of the messages the
// broker returns on it.
//
// The broker sends basic.return before the basic.ack of a returned
// mandatory message, and the client library hands both over on its one
// reader goroutine, blocking on the (unbuffered) return channel until the
// listener has taken the return. So once a confirm has arrived, the
// listener has received every return sent before it; asking the listener
// (which serves returns and questions in order) is then exact.
type pubChan struct {
	ch        *amqp.Channel
	questions chan returnQuestion
	done      chan struct{} // the listener ended (channel closed)
}

type returnQuestion struct {
	messageID string
	answer    chan bool
}

func newPubChan(ch *amqp.Channel) *pubChan {
	pc := &pubChan{ch: ch, questions: make(chan returnQuestion), done: make(chan struct{})}
	returns := ch.NotifyReturn(make(chan amqp.Return))
	go pc.listen(returns)
	return pc
}

// maxRemembered bounds the returned ids kept for callers that gave up
// before asking (a timed-out publish); returns are rare, so this is only a
// guard against a slow leak.
const maxRemembered = 10_000

func (pc *pubChan) listen(returns <-chan amqp.Return) {
	defer close(pc.done)
	returned := map[string]struct{}{}
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				return
			}
			if len(returned) >= maxRemembered {
				clear(returned)
			}
			returned[r.MessageId] = struct{}{}
		case q := <-pc.questions:
			_, ok := returned[q.messageID]
			delete(returned, q.messageID)
			q.answer <- ok
		}
	}
}

// wasReturned asks whether the broker returned the message. Call it only
// after the message's confirm arrived. A listener gone (the channel died) or
// a caller out of time counts as returned: the publish is then reported as
// not accepted, which is always safe (publishing again is idempotent).
func (pc *pubChan) wasReturned(ctx context.Context, messageID string) bool {
	q := returnQuestion{messageID: messageID, answer: make(chan bool, 1)}
	select {
	case pc.questions <- q:
		return <-q.answer
	case <-pc.done:
		return true
	case <-ctx.Done():
		return true
	}
}
