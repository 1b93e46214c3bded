package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// PersisterConfig tunes the consumer side.
type PersisterConfig struct {
	// BatchSize is the number of rides at which the deliveries in hand are
	// written at once; a batch is made of whole deliveries, so one write
	// may hold up to BatchSize-1 rides more.
	BatchSize int
	// Linger is how long a partial batch waits for more deliveries before
	// it is written anyway. 0 writes as soon as no more deliveries are at
	// hand: for a queue whose publishers wait for the store (inproc with a
	// durable store) nothing more arrives while they wait, so lingering
	// would only delay every 201; deliveries that arrive during a write
	// form the next batch.
	Linger time.Duration
	// Writers is how many batches may be written at once (default 1). More
	// than one lets a store that commits slowly (an fsync per transaction)
	// commit several batches together, and lets the next batch form while
	// one commits; acknowledgements may then come out of order, which every
	// queue accepts. While all writers are busy, consumption pauses.
	Writers int
	// RetryFor is how long a batch failing with an unexpected error is
	// retried (with exponential backoff) before it is handed back to the
	// queue for redelivery. A store that answers "unavailable"
	// (domain.ErrUnavailable: down, unreachable, overloaded) is retried
	// without limit instead: the batch is held, and consumption pauses,
	// until the store is back or the process stops, so an outage never
	// uses up a broker's delivery limit and dead-letters good rides.
	RetryFor time.Duration
}

// Persister takes messages off the queue, writes the rides of the
// deliveries it holds through the store in one call and only then settles
// each delivery whole. A ride is therefore either stored and acknowledged,
// or still on the queue: a crash between the two redelivers it, and the
// store's idempotency keeps it from counting twice.
type Persister struct {
	sub     ports.Subscriber
	store   ports.RideStore
	cfg     PersisterConfig
	log     *slog.Logger
	cache   ports.Cache // nil: no cache to invalidate
	metrics ports.Metrics

	stored atomic.Int64

	drain     chan struct{}
	drainOnce sync.Once
}

// NewPersister returns a persister; Run starts it. cache may be nil; when it
// is not, every batch stored invalidates the query answers it changes.
func NewPersister(sub ports.Subscriber, store ports.RideStore, cfg PersisterConfig, cache ports.Cache, m ports.Metrics, log *slog.Logger) *Persister {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1
	}
	return &Persister{sub: sub, store: store, cfg: cfg, cache: cache, metrics: m, log: log, drain: make(chan struct{})}
}

// Drain tells Run to stop waiting for full batches: from now on whatever it
// holds is written as soon as no more deliveries are immediately at hand.
// Call it after Subscriber.Close, whose channel closes only once every
// delivery handed out is settled.
func (p *Persister) Drain() { p.drainOnce.Do(func() { close(p.drain) }) }

// Stored is the number of rides written (including redeliveries the store
// recognised as duplicates).
func (p *Persister) Stored() int64 { return p.stored.Load() }

// Run consumes until the subscriber's delivery channel closes (after
// Subscriber.Close, once drained) or ctx ends (a hard stop: the batch in hand
// is handed back).
func (p *Persister) Run(ctx context.Context) error {
	ch, err := p.sub.Deliveries(ctx)
	if err != nil {
		return fmt.Errorf("persister: start consuming: %w", err)
	}
	var batch []ports.Delivery
	rides := 0
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	slots := make(chan struct{}, max(1, p.cfg.Writers))
	var writing sync.WaitGroup
	defer writing.Wait()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		slots <- struct{}{} // waits while every writer is busy
		b := batch
		batch, rides = nil, 0
		writing.Go(func() {
			defer func() { <-slots }()
			p.write(ctx, b)
		})
	}
	drain, idle := p.drain, p.cfg.Linger <= 0
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				flush()
				return nil
			}
			if len(batch) == 0 && !idle {
				linger.Reset(p.cfg.Linger)
			}
			batch = append(batch, d)
			rides += len(d.Rides)
			if rides >= p.cfg.BatchSize || (idle && len(ch) == 0) {
				linger.Stop()
				flush()
			}
		case <-linger.C:
			flush()
		case <-drain:
			drain, idle = nil, true
			linger.Stop()
			flush()
		}
	}
}

// storeRides writes rides, retrying with backoff while the failure may
// pass: without limit while the store is unavailable (until ctx ends), for
// RetryFor on any other error. A refusal (domain.ErrInvalid) is final and
// returned at once.
func (p *Persister) storeRides(ctx context.Context, rides []domain.LiftRide) error {
	start := time.Now()
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := p.store.AddRides(ctx, rides)
		switch {
		case err == nil, errors.Is(err, domain.ErrUnavailable) && ctx.Err() == nil:
			return struct{}{}, err
		case errors.Is(err, domain.ErrInvalid), time.Since(start) >= p.cfg.RetryFor, ctx.Err() != nil:
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	},
		backoff.WithBackOff(newBackoff()),
		backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(err error, next time.Duration) {
			p.log.Warn("persist batch failed; retrying", "rides", len(rides), "retry_in", next, "err", err)
		}))
	return err
}

// write stores the rides of a batch of deliveries in one store call,
// retrying with backoff, then acks every delivery; if the store keeps
// failing it nacks them so the queue delivers them again. If the store
// refuses the batch as invalid, isolate finds the refused rides.
func (p *Persister) write(ctx context.Context, batch []ports.Delivery) {
	// Ack and nack must reach the queue even while shutting down.
	settle := context.WithoutCancel(ctx)
	rides := ridesOf(batch)
	start := time.Now()
	err := p.storeRides(ctx, rides)
	if errors.Is(err, domain.ErrInvalid) {
		p.isolate(ctx, batch)
		return
	}
	if err != nil {
		p.handBack(settle, batch, len(rides), time.Since(start), err)
		return
	}
	p.metrics.ObserveBatch(len(rides), time.Since(start))
	p.stored.Add(int64(len(rides)))
	p.invalidate(settle, rides)
	if aerr := p.sub.Ack(settle, batch); aerr != nil {
		// Stored but not acked: the queue redelivers, the store dedupes.
		p.log.Warn("ack failed after the batch was stored; it will be redelivered and deduplicated", "deliveries", len(batch), "rides", len(rides), "err", aerr)
	}
}

// ridesOf is the rides of the deliveries, in order, as one slice: the
// delivery's own slice when there is one delivery.
func ridesOf(batch []ports.Delivery) []domain.LiftRide {
	if len(batch) == 1 {
		return batch[0].Rides
	}
	n := 0
	for _, d := range batch {
		n += len(d.Rides)
	}
	rides := make([]domain.LiftRide, 0, n)
	for _, d := range batch {
		rides = append(rides, d.Rides...)
	}
	return rides
}

func (p *Persister) handBack(settle context.Context, ds []ports.Delivery, rides int, after time.Duration, err error) {
	p.metrics.PersistFailed(rides)
	p.log.Error("persist failed; handing the rides back to the queue", "deliveries", len(ds), "rides", rides, "after", after.Round(time.Millisecond), "err", err)
	if nerr := p.sub.Nack(settle, ds); nerr != nil {
		p.log.Error("nack failed; the queue will redeliver when its lease ends", "deliveries", len(ds), "err", nerr)
	}
}

// isolate handles a batch the store refused as invalid, the rare path: it
// writes each delivery alone, and a delivery still refused ride by ride, so
// that its good rides are stored and only the refused ones are rejected
// (dead-lettered by a broker). Deliveries the store takes are acked.
func (p *Persister) isolate(ctx context.Context, batch []ports.Delivery) {
	settle := context.WithoutCancel(ctx)
	for _, d := range batch {
		err := p.storeRides(ctx, d.Rides)
		if errors.Is(err, domain.ErrInvalid) && len(d.Rides) > 1 {
			err = p.storeEach(ctx, settle, d)
			if err == nil {
				continue // settled by storeEach
			}
		}
		one := []ports.Delivery{d}
		switch {
		case err == nil:
			p.stored.Add(int64(len(d.Rides)))
			p.invalidate(settle, d.Rides)
			err = p.sub.Ack(settle, one)
		case errors.Is(err, domain.ErrInvalid):
			p.reject(settle, d, d.Rides, err)
			continue
		default:
			p.handBack(settle, one, len(d.Rides), 0, err)
			continue
		}
		if err != nil {
			p.log.Warn("settling a delivery failed; the queue will redeliver it", "rides", len(d.Rides), "err", err)
		}
	}
}

// storeEach writes the rides of one refused delivery one by one, then
// rejects the delivery naming the refused rides. A failure other than a
// refusal is returned and the delivery is left for the caller to hand back.
func (p *Persister) storeEach(ctx, settle context.Context, d ports.Delivery) error {
	var refused, stored []domain.LiftRide
	var why error
	for _, r := range d.Rides {
		err := p.storeRides(ctx, []domain.LiftRide{r})
		switch {
		case err == nil:
			stored = append(stored, r)
		case errors.Is(err, domain.ErrInvalid):
			refused, why = append(refused, r), err
		default:
			return err
		}
	}
	p.stored.Add(int64(len(stored)))
	p.invalidate(settle, stored)
	if len(refused) == 0 {
		// The refusal did not repeat ride by ride: all are stored now.
		if err := p.sub.Ack(settle, []ports.Delivery{d}); err != nil {
			p.log.Warn("settling a delivery failed; the queue will redeliver it", "rides", len(d.Rides), "err", err)
		}
		return nil
	}
	p.reject(settle, d, refused, why)
	return nil
}

func (p *Persister) reject(settle context.Context, d ports.Delivery, refused []domain.LiftRide, why error) {
	p.metrics.PersistRejected(len(refused))
	for _, r := range refused {
		p.log.Error("store refused a ride; rejecting it (a broker dead-letters it)", "ride", r.Key(), "err", why)
	}
	if err := p.sub.Reject(settle, d, refused); err != nil {
		p.log.Warn("rejecting a delivery failed; the queue will redeliver it", "rides", len(d.Rides), "err", err)
	}
}

// invalidate deletes the cached answers the stored batch changed. It runs
// after the store write and before the ack, so once the queue has drained no
// cached answer predates a stored ride. A failed delete is logged and the
// batch acked anyway: the rides are stored, and the cache TTL bounds how
// long the old answer can be served.
func (p *Persister) invalidate(ctx context.Context, rides []domain.LiftRide) {
	if p.cache == nil {
		return
	}
	keys := keysAffectedBy(rides)
	if err := p.cache.Delete(ctx, keys...); err != nil {
		p.log.Warn("cache invalidation failed; old answers live until their TTL", "keys", len(keys), "err", err)
	}
}

func newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	return b
}
