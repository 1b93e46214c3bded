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
	// BatchSize is the most rides written in one AddRides call.
	BatchSize int
	// Linger is how long a partial batch waits for more rides before it is
	// written anyway.
	Linger time.Duration
	// WriteWhenIdle writes a batch as soon as no more rides are at hand,
	// without lingering. For a queue whose publishers wait for the ack
	// (inproc with a durable store): nothing more arrives while they wait,
	// so lingering would only delay every 201; rides that arrive during a
	// write form the next batch (group commit).
	WriteWhenIdle bool
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

// Persister takes rides off the queue in batches, writes each batch through
// the store and only then acknowledges it. A ride is therefore either stored
// and acknowledged, or still on the queue: a crash between the two redelivers
// it, and the store's idempotency keeps it from counting twice.
type Persister struct {
	sub     ports.Subscriber
	store   ports.RideStore
	cfg     PersisterConfig
	log     *slog.Logger
	cache   ports.Cache // nil: no cache to invalidate
	metrics ports.Metrics

	stored   atomic.Int64
	batches  atomic.Int64
	failed   atomic.Int64
	rejected atomic.Int64

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
// holds is written as soon as no more rides are immediately at hand. Call it
// after Subscriber.Close, whose channel closes only once every ride handed
// out is acknowledged.
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
	batch := make([]ports.Delivery, 0, p.cfg.BatchSize)
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
		batch = make([]ports.Delivery, 0, p.cfg.BatchSize)
		rides := make([]domain.LiftRide, len(b))
		for i, d := range b {
			rides[i] = d.Ride
		}
		writing.Go(func() {
			defer func() { <-slots }()
			p.write(ctx, b, rides)
		})
	}
	drain, draining := p.drain, p.cfg.WriteWhenIdle
	for {
		select {
		case d, ok := <-ch:
			if !ok {
				flush()
				return nil
			}
			if len(batch) == 0 {
				linger.Reset(p.cfg.Linger)
			}
			batch = append(batch, d)
			if len(batch) >= p.cfg.BatchSize || (draining && len(ch) == 0) {
				linger.Stop()
				flush()
			}
		case <-linger.C:
			flush()
		case <-drain:
			drain, draining = nil, true
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

// write stores one batch, retrying with backoff, then acks it; if the store
// keeps failing it nacks the batch so the queue delivers it again. If the
// store refuses the batch as invalid, the rides are written one by one so
// that only the refused ones are rejected (dead-lettered), never the batch.
func (p *Persister) write(ctx context.Context, batch []ports.Delivery, rides []domain.LiftRide) {
	// Ack and nack must reach the queue even while shutting down.
	settle := context.WithoutCancel(ctx)
	start := time.Now()
	err := p.storeRides(ctx, rides)
	if errors.Is(err, domain.ErrInvalid) {
		p.isolate(ctx, batch)
		return
	}
	if err != nil {
		p.failed.Add(1)
		p.metrics.PersistFailed(len(rides))
		p.log.Error("persist batch failed; handing it back to the queue", "rides", len(rides), "after", time.Since(start).Round(time.Millisecond), "err", err)
		if nerr := p.sub.Nack(settle, batch); nerr != nil {
			p.log.Error("nack failed; the queue will redeliver when its lease ends", "rides", len(batch), "err", nerr)
		}
		return
	}
	p.metrics.ObserveBatch(len(rides), time.Since(start))
	p.stored.Add(int64(len(rides)))
	p.batches.Add(1)
	p.invalidate(settle, rides)
	if aerr := p.sub.Ack(settle, batch); aerr != nil {
		// Stored but not acked: the queue redelivers, the store dedupes.
		p.log.Warn("ack failed after the batch was stored; it will be redelivered and deduplicated", "rides", len(batch), "err", aerr)
	}
}

// isolate writes a refused batch ride by ride: stored rides are acked,
// refused ones rejected, and any other failure hands the ride back.
func (p *Persister) isolate(ctx context.Context, batch []ports.Delivery) {
	settle := context.WithoutCancel(ctx)
	for _, d := range batch {
		err := p.storeRides(ctx, []domain.LiftRide{d.Ride})
		one := []ports.Delivery{d}
		switch {
		case err == nil:
			p.stored.Add(1)
			p.invalidate(settle, []domain.LiftRide{d.Ride})
			err = p.sub.Ack(settle, one)
		case errors.Is(err, domain.ErrInvalid):
			p.rejected.Add(1)
			p.metrics.PersistRejected(1)
			p.log.Error("store refused a ride; rejecting it (a broker dead-letters it)", "ride", d.Ride.Key(), "err", err)
			err = p.sub.Reject(settle, one)
		default:
			p.failed.Add(1)
			p.metrics.PersistFailed(1)
			err = p.sub.Nack(settle, one)
		}
		if err != nil {
			p.log.Warn("settling a ride failed; the queue will redeliver it", "ride", d.Ride.Key(), "err", err)
		}
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
