package rabbitmq

import (
	"context"
	"fmt"
	"math"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/ports"
)

// deadLettersOf is one message of the dead-letter queue as letters: one
// per ride of a batch, one for each unreadable record, or one for a body
// that cannot be read at all. Reason and Queue come from the broker's
// x-death header (rejected, delivery_limit, ...) or, for a ride the
// consumer dead-lettered alone, its own headers; Count is how many times
// it was dead-lettered from that queue.
func deadLettersOf(m amqp.Delivery) []ports.DeadLetter {
	base := ports.DeadLetter{MessageID: m.MessageId, Body: m.Body}
	if deaths, ok := m.Headers["x-death"].([]any); ok && len(deaths) > 0 {
		if d, ok := deaths[0].(amqp.Table); ok {
			base.Reason, _ = d["reason"].(string)
			base.Queue, _ = d["queue"].(string)
			base.Count = headerInt(d, "count")
		}
	} else if reason, ok := m.Headers[deadReasonHeader].(string); ok {
		// One ride of a batch, dead-lettered alone by the consumer.
		base.Reason = reason
		base.Queue, _ = m.Headers[deadQueueHeader].(string)
		base.Count = 1
	}
	body, err := decodeBody(m.Body)
	if err != nil {
		base.BodyErr = err.Error()
		return []ports.DeadLetter{base}
	}
	var out []ports.DeadLetter
	for _, r := range body.rides {
		dl := base
		dl.Ride = r
		out = append(out, dl)
	}
	for i, rec := range body.bad {
		dl := base
		dl.Body, dl.BodyErr = rec, body.errs[i].Error()
		out = append(out, dl)
	}
	return out
}

// DLQList returns up to limit dead letters (one per ride: a dead-lettered
// batch message shows each of its rides) without removing them: they are
// fetched unacknowledged and go back to the queue when the channel closes.
func (b *Broker) DLQList(ctx context.Context, limit int) ([]ports.DeadLetter, error) {
	var out []ports.DeadLetter
	err := b.eachDeadLetter(ctx, math.MaxInt, func(_ *amqp.Channel, m amqp.Delivery) (bool, error) {
		out = append(out, deadLettersOf(m)...)
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out[:min(limit, len(out))], nil
}

// eachDeadLetter gets messages off the dead-letter queue, unacknowledged,
// and calls fn with each until the queue is empty, fn says to stop or
// fails, or at most bound messages were read. Messages fn does not ack go
// back to the queue when the channel closes.
func (b *Broker) eachDeadLetter(ctx context.Context, bound int, fn func(ch *amqp.Channel, m amqp.Delivery) (more bool, err error)) error {
	return b.withChannel(func(ch *amqp.Channel) error {
		for range bound {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, ok, err := ch.Get(b.cfg.DeadLetterQueue(), false)
			if err != nil {
				return fmt.Errorf("get from %s: %w", b.cfg.DeadLetterQueue(), err)
			}
			if !ok {
				return nil
			}
			if more, err := fn(ch, m); err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// DLQReplay moves every readable dead letter back to a shard queue (with a
// fresh delivery count) and returns how many rides it moved. Each is removed
// from the dead-letter queue only after the broker confirmed its copy, so a
// replay that fails half-way loses nothing (a ride may then be in both
// queues, which the idempotent stores absorb). Unreadable bodies, and
// batches with an unreadable record, stay in the dead-letter queue.
func (b *Broker) DLQReplay(ctx context.Context) (int, error) {
	waiting, err := b.deadLetterCount()
	if err != nil {
		return 0, fmt.Errorf("replay dead letters: %w", err)
	}
	moved := 0
	// Until the queue is empty, but bounded, so letters that die again
	// while we replay are not replayed in a loop. The count at the start
	// is only a guide: letters a lister just handed back may not be
	// counted yet.
	err = b.eachDeadLetter(ctx, waiting+1000, func(_ *amqp.Channel, m amqp.Delivery) (bool, error) {
		n, err := b.replayOne(ctx, m)
		if err != nil || n == 0 {
			return err == nil, err // n == 0: left unacked, back in the DLQ when the channel closes
		}
		if err := m.Ack(false); err != nil {
			return false, fmt.Errorf("remove replayed message %s from %s: %w", m.MessageId, b.cfg.DeadLetterQueue(), err)
		}
		moved += n
		return true, nil
	})
	if err != nil {
		return moved, fmt.Errorf("replay dead letters (%d moved): %w", moved, err)
	}
	return moved, nil
}

// deadLetterCount is the number of messages ready in the dead-letter queue.
func (b *Broker) deadLetterCount() (int, error) {
	var n int
	err := b.withChannel(func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(b.cfg.DeadLetterQueue(), true, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", b.cfg.DeadLetterQueue(), err)
		}
		n = q.Messages
		return nil
	})
	return n, err
}

// replayOne republishes the rides of one dead-lettered message, in
// messages of at most PublishBatch rides, and returns how many rides it
// moved; 0 means the message is (partly) unreadable and stays.
func (b *Broker) replayOne(ctx context.Context, m amqp.Delivery) (int, error) {
	body, err := decodeBody(m.Body)
	if err != nil || len(body.bad) > 0 || len(body.rides) == 0 {
		return 0, nil
	}
	for chunk := range slices.Chunk(body.rides, b.cfg.PublishBatch) {
		if err := b.Publish(ctx, chunk); err != nil {
			return 0, fmt.Errorf("replay %s: %w", m.MessageId, err)
		}
	}
	return len(body.rides), nil
}
