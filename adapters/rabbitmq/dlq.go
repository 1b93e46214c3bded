package rabbitmq

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/skidata/skidata/domain"
)

// DeadLetter is one message in the dead-letter queue, as an operator sees it.
type DeadLetter struct {
	MessageID string
	// Ride is the decoded ride; zero when the body is unreadable (BodyErr).
	Ride    domain.LiftRide
	BodyErr string
	Body    []byte
	// Reason and Queue come from the broker's x-death header: why the ride
	// was dead-lettered (rejected, delivery_limit, ...) and from where.
	Reason string
	Queue  string
	// Count is how many times it was dead-lettered from that queue.
	Count int64
}

func deadLetterOf(m amqp.Delivery) DeadLetter {
	dl := DeadLetter{MessageID: m.MessageId, Body: m.Body}
	if r, err := decodeRide(m.Body); err != nil {
		dl.BodyErr = err.Error()
	} else {
		dl.Ride = r
	}
	if deaths, ok := m.Headers["x-death"].([]any); ok && len(deaths) > 0 {
		if d, ok := deaths[0].(amqp.Table); ok {
			dl.Reason, _ = d["reason"].(string)
			dl.Queue, _ = d["queue"].(string)
			dl.Count = headerInt(d, "count")
		}
	}
	return dl
}

// DLQList returns up to limit dead letters without removing them: they are
// fetched unacknowledged and go back to the queue when the channel closes.
func (b *Broker) DLQList(ctx context.Context, limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := b.withChannel(func(ch *amqp.Channel) error {
		for len(out) < limit {
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
			out = append(out, deadLetterOf(m))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// DLQReplay moves every readable dead letter back to its shard queue (with a
// fresh delivery count) and returns how many it moved. Each is removed from
// the dead-letter queue only after the broker confirmed its copy, so a replay
// that fails half-way loses nothing (a ride may then be in both queues,
// which the idempotent stores absorb). Unreadable bodies stay in the
// dead-letter queue.
func (b *Broker) DLQReplay(ctx context.Context) (int, error) {
	moved := 0
	err := b.withChannel(func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(b.cfg.DeadLetterQueue(), true, false, false, false, nil)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", b.cfg.DeadLetterQueue(), err)
		}
		// Until the queue is empty, but bounded, so letters that die again
		// while we replay are not replayed in a loop. The count at the
		// start is only a guide: letters a lister just handed back may not
		// be counted yet.
		for range q.Messages + 1000 {
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
			ride, err := decodeRide(m.Body)
			if err != nil {
				continue // left unacked: back in the DLQ when the channel closes
			}
			queue := b.cfg.ShardQueue(b.cfg.shardOf(ride.SkierID()))
			if err := b.publishRaw(ctx, queue, ride.Key(), m.Body, nil); err != nil {
				return fmt.Errorf("replay %s: %w", ride.Key(), err)
			}
			if err := m.Ack(false); err != nil {
				return fmt.Errorf("remove replayed %s from %s: %w", ride.Key(), b.cfg.DeadLetterQueue(), err)
			}
			moved++
		}
		return nil
	})
	if err != nil {
		return moved, fmt.Errorf("replay dead letters (%d moved): %w", moved, err)
	}
	return moved, nil
}
