package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Publish sends the rides as one message (a version-2 batch body) to the
// next shard queue in turn and waits for the broker's confirm. Rides
// POSTed at the same time reach it already gathered by the ingest use
// case's group commit, so they share one message and one confirm (one
// quorum-log append and fsync on the broker). The message is persistent and
// mandatory: a message no queue takes comes back and is reported as not
// accepted.
func (b *Broker) Publish(ctx context.Context, rides []domain.LiftRide) error {
	if len(rides) == 0 {
		return nil
	}
	if len(rides) > maxBatch {
		return fmt.Errorf("rabbitmq: a message holds at most %d rides, got %d", maxBatch, len(rides))
	}
	select {
	case <-b.stopped:
		return fmt.Errorf("%w: rabbitmq publisher closed by this process", domain.ErrUnavailable)
	default:
	}
	b.observeMessage(len(rides))
	m := publishing{messageID: b.messageID(), contentType: batchContentType, body: encodeBatch(rides), rides: len(rides)}
	first := b.nextShard.Add(1)
	var err error
	// A shard that is full (the broker nacks with reject-publish) passes
	// the message on to the next: the queue is full only when all are.
	for i := range uint64(b.cfg.Shards) {
		m.queue = b.cfg.ShardQueue(int((first + i) % uint64(b.cfg.Shards)))
		if err = b.publishRaw(ctx, m); !errors.Is(err, ports.ErrQueueFull) {
			return err
		}
	}
	return err
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
	rides       int // for errors; 0: not known
}

// what names the message in errors.
func (m publishing) what() string {
	if m.rides > 0 {
		return fmt.Sprintf("message %s of %d rides", m.messageID, m.rides)
	}
	return "message " + m.messageID
}

// publishRaw publishes one message, mandatory, and waits for its confirm.
// Publish, the classic-queue requeue, the dead-lettering of refused rides
// and the DLQ replay share it. Mandatory means a message no
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
		return fmt.Errorf("%w: rabbitmq broker at %s is refusing publishes (resource alarm)", domain.ErrUnavailable, b.masked[s.node])
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
		return fmt.Errorf("%w: publish %s to %s: %w", domain.ErrUnavailable, m.what(), where, err)
	}
	acked, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s not confirmed by the broker in time (it may or may not be queued; publishing again is safe): %w", domain.ErrUnavailable, m.what(), err)
	case acked && pc.wasReturned(ctx, m.messageID):
		return fmt.Errorf("%w: broker returned %s: no queue %s (deleted?); nothing was accepted", domain.ErrUnavailable, m.what(), where)
	case acked:
		return nil
	case pc.ch.IsClosed():
		return fmt.Errorf("%w: connection to rabbitmq broker at %s lost before it confirmed %s", domain.ErrUnavailable, b.masked[s.node], m.what())
	default:
		return fmt.Errorf("%w: %w: broker refused %s: queue %s is full (max %d messages)", domain.ErrUnavailable, ports.ErrQueueFull, m.what(), where, b.cfg.perShardMaxLength())
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
