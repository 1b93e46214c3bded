package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// AdmissionConfig tunes the admission control at the door of ingest (see
// docs/admission.md).
type AdmissionConfig struct {
	// Rate is the most rides per second this process accepts; 0 is no limit.
	Rate float64
	// Burst is how many rides may arrive at once above the rate; 0 means one
	// second's worth of Rate.
	Burst int
	// SoftLimit is the queue depth in rides above which the rate is scaled
	// down linearly, reaching a trickle at HardLimit; 0 is off.
	SoftLimit int64
	// HardLimit is the queue depth in rides at which every POST is answered
	// 503 at once; 0 is off.
	HardLimit int64
	// ClientRate is the most rides per second one client (ports.ClientOf)
	// may send, so that one client cannot spend the whole Rate and get
	// every other client 429s; 0 is no per-client limit.
	ClientRate float64
	// ClientBurst is how many rides one client may send at once above
	// ClientRate; 0 means one second's worth.
	ClientBurst int
	// MaxWait is how long a ride over a rate (Rate or ClientRate) may wait
	// for its token before it is refused: a burst a little over the rate is
	// spread out rather than answered 429, whose Retry-After can only say
	// whole seconds. At most Rate×MaxWait rides wait at once. 0 refuses at
	// once.
	MaxWait time.Duration
}

// ClientsTracked is how many clients' buckets ingest keeps; the least
// recently seen is forgotten first (and starts with a full bucket if it
// comes back).
const ClientsTracked = 10_000

// depthSampleEvery is how often the queue depth is read: often enough that
// the limiter follows a spike within a fraction of a second, rarely enough
// that a broker's depth query (a network round trip) costs nothing.
const depthSampleEvery = 100 * time.Millisecond

// minRateFraction is the floor of the adaptive rate, as a fraction of the
// configured rate: just below the hard ceiling the service still admits a
// trickle, so clients that retry see progress rather than a wall.
const minRateFraction = 0.05

// The reasons a valid ride is refused, as ports.Metrics.RideRejected
// reports them.
const (
	rejectRate        = "rate"         // over the rate limit: 429
	rejectClientRate  = "client_rate"  // over the client's own rate limit: 429
	rejectQueueFull   = "queue_full"   // the queue is at its ceiling: 503
	rejectBreakerOpen = "breaker_open" // publishing paused after failures: 503
	rejectUnavailable = "unavailable"  // the queue failed the publish: 503
	rejectNotFound    = "not_found"    // unknown resort or season: 404
	rejectCanceled    = "canceled"     // the client went away
	rejectError       = "error"
)

// Ingest is the write path's use case. A POSTed ride passes, in order:
//
//  1. a hard ceiling on the queue depth (503 at once);
//  2. the catalogue check: its resort and season must be registered (404),
//     answered from memory; it comes before the buckets, so a ride that
//     names no real resort makes no client's bucket and takes no token;
//  3. the rate limits, each answering 429: a token bucket per client
//     (ports.ClientOf), then one token bucket (golang.org/x/time/rate)
//     whose refill rate follows the queue depth, full below the soft
//     limit and scaled down linearly to 5% at the hard limit; a ride whose
//     token comes within MaxWait waits for it rather than being refused;
//  4. the group commit: rides arriving together go to the queue as one
//     message (groupCommit), and AddRide returns once the queue holds it.
//
// A refused ride costs nothing past the step that refused it, and is
// counted by reason at the one place that knows the reason. The depth is
// sampled by one background goroutine, not per request: a broker's depth is
// a network call, and a request must not wait for it.
type Ingest struct {
	catalog *Catalog
	group   *groupCommit
	queue   ports.QueueStats
	cfg     AdmissionConfig
	metrics ports.Metrics
	log     *slog.Logger
	limiter *rate.Limiter                     // nil: no rate limit
	clients *lru.Cache[string, *rate.Limiter] // nil: no per-client limit
	depth   atomic.Int64                      // the last sampled queue depth, in rides
	now     func() time.Time
}

var _ ports.RideIngester = (*Ingest)(nil)

// NewIngest returns the ingest service and starts its depth sampler, which
// stops when ctx ends or the returned cleanup is called. pub is the queue
// as the API sees it (composition puts the circuit breaker in front).
func NewIngest(ctx context.Context, catalog *Catalog, pub ports.Publisher, queue ports.QueueStats, adm AdmissionConfig, pc PublishConfig, m ports.Metrics, log *slog.Logger) (*Ingest, func()) {
	in := newIngest(catalog, pub, queue, adm, pc, m, log)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); in.sampleDepth(ctx) }()
	return in, func() { cancel(); <-done }
}

func newIngest(catalog *Catalog, pub ports.Publisher, queue ports.QueueStats, adm AdmissionConfig, pc PublishConfig, m ports.Metrics, log *slog.Logger) *Ingest {
	in := &Ingest{
		catalog: catalog,
		group:   newGroupCommit(instrumentedPublisher{next: pub, metrics: m, log: log}, pc),
		queue:   queue, cfg: adm, metrics: m, log: log, now: time.Now,
	}
	if adm.Rate > 0 {
		in.limiter = rate.NewLimiter(rate.Limit(adm.Rate), burstOf(adm.Rate, adm.Burst))
	}
	if adm.ClientRate > 0 {
		in.clients, _ = lru.New[string, *rate.Limiter](ClientsTracked) // fails only for a size ≤ 0
	}
	return in
}

// burstOf is burst, or one second's worth of r when burst is 0.
func burstOf(r float64, burst int) int {
	if burst == 0 {
		return int(math.Ceil(r))
	}
	return burst
}

// clientRateError marks a refusal by the client's own limit, so that it is
// counted as client_rate; its message is the overload's alone.
type clientRateError struct{ error }

func (e clientRateError) Unwrap() error { return e.error }

// clientAllows takes a token from the bucket of ctx's client.
func (in *Ingest) clientAllows(ctx context.Context) error {
	if in.clients == nil {
		return nil // no per-client limit: the client's name is not looked up
	}
	client := ports.ClientOf(ctx)
	if client == "" {
		return nil
	}
	l, ok := in.clients.Get(client)
	if !ok {
		fresh := rate.NewLimiter(rate.Limit(in.cfg.ClientRate), burstOf(in.cfg.ClientRate, in.cfg.ClientBurst))
		if prev, found, _ := in.clients.PeekOrAdd(client, fresh); found {
			l = prev
		} else {
			l = fresh
		}
	}
	if ok, err := in.take(ctx, l); ok || err != nil {
		return err
	}
	return clientRateError{domain.Overloaded("this client may send at most %.0f rides per second; retry after the Retry-After header", in.cfg.ClientRate)}
}

// serverAllows takes a token from the process's bucket.
func (in *Ingest) serverAllows(ctx context.Context) error {
	if in.limiter == nil {
		return nil
	}
	if ok, err := in.take(ctx, in.limiter); ok || err != nil {
		return err
	}
	return domain.Overloaded("this server takes at most %.0f rides per second now; retry after the Retry-After header", float64(in.limiter.Limit()))
}

// take takes a token from l, waiting for it up to MaxWait. It answers
// false, having taken nothing, when the token is further off than that, and
// ctx's error when ctx ends during the wait (the token goes back).
func (in *Ingest) take(ctx context.Context, l *rate.Limiter) (bool, error) {
	now := in.now()
	r := l.ReserveN(now, 1)
	if !r.OK() {
		return false, nil
	}
	wait := r.DelayFrom(now)
	if wait == 0 {
		return true, nil
	}
	if wait > in.cfg.MaxWait {
		r.CancelAt(now)
		return false, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		r.CancelAt(in.now())
		return false, ctx.Err()
	}
}

// AddRide implements ports.RideIngester.
func (in *Ingest) AddRide(ctx context.Context, ride domain.LiftRide) error {
	err := in.addRide(ctx, ride)
	if err != nil {
		in.metrics.RideRejected(rejectionReason(err))
	}
	return err
}

func (in *Ingest) addRide(ctx context.Context, ride domain.LiftRide) error {
	if in.cfg.HardLimit > 0 {
		if d := in.depth.Load(); d >= in.cfg.HardLimit {
			return errQueueAtCeiling(d, in.cfg.HardLimit)
		}
	}
	// The catalogue (memory) before the buckets: a ride to a resort or
	// season that does not exist makes no client's bucket, so such rides
	// cannot push real clients out of the LRU, and takes no token.
	if err := in.catalog.CheckRide(ctx, ride.ResortID(), ride.SeasonID()); err != nil {
		return err
	}
	if err := in.clientAllows(ctx); err != nil {
		return err
	}
	if err := in.serverAllows(ctx); err != nil {
		return err
	}
	return in.group.publish(ctx, ride)
}

// errQueueAtCeiling is admission's own "queue full": backpressure
// (ports.ErrQueueFull) that the caller should retry (domain.ErrUnavailable).
func errQueueAtCeiling(depth, ceiling int64) error {
	return fmt.Errorf("%w: %w: the queue holds %d rides, at its ceiling of %d", domain.ErrUnavailable, ports.ErrQueueFull, depth, ceiling)
}

// rejectionReason names why a ride was refused, for RideRejected.
func rejectionReason(err error) string {
	switch {
	case errors.Is(err, ports.ErrQueueFull):
		return rejectQueueFull
	case errors.Is(err, ports.ErrPublishPaused):
		return rejectBreakerOpen
	case errors.As(err, new(clientRateError)):
		return rejectClientRate
	case errors.Is(err, domain.ErrOverloaded):
		return rejectRate
	case errors.Is(err, domain.ErrNotFound):
		return rejectNotFound
	case errors.Is(err, domain.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return rejectUnavailable
	case errors.Is(err, context.Canceled):
		return rejectCanceled
	default:
		return rejectError
	}
}

// sampleDepth reads the queue depth until ctx ends.
func (in *Ingest) sampleDepth(ctx context.Context) {
	t := time.NewTicker(depthSampleEvery)
	defer t.Stop()
	for {
		in.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads the depth once, publishes it to the metrics and retunes the
// limiter. A failed read keeps the last depth: admission neither opens the
// gates nor closes them on a blip of the depth query.
func (in *Ingest) sample(ctx context.Context) {
	d, err := in.queue.Depth(ctx)
	if err != nil {
		if ctx.Err() == nil {
			in.log.Warn("queue depth sample failed; admission keeps the last depth", "last_depth", in.depth.Load(), "err", err)
		}
		return
	}
	in.depth.Store(d.Rides)
	in.metrics.SetQueueDepth(d)
	if in.limiter != nil {
		if r := rate.Limit(in.rateFor(d.Rides)); r != in.limiter.Limit() {
			in.limiter.SetLimit(r)
		}
	}
}

// rateFor is the refill rate at queue depth d: the configured rate up to the
// soft limit, then falling linearly to minRateFraction of it at the hard
// limit.
func (in *Ingest) rateFor(d int64) float64 {
	soft, hard := in.cfg.SoftLimit, in.cfg.HardLimit
	if soft <= 0 || d <= soft {
		return in.cfg.Rate
	}
	frac := 1 - float64(d-soft)/float64(hard-soft)
	return in.cfg.Rate * max(frac, minRateFraction)
}

// instrumentedPublisher counts the messages the queue takes, with their
// rides, and counts and logs every message it refuses:
// one log line per failure, with its cause (the log handler drops repeats
// under a storm). A refusal by the circuit breaker is not a queue failure
// and is not counted here.
type instrumentedPublisher struct {
	next    ports.Publisher
	metrics ports.Metrics
	log     *slog.Logger
}

func (p instrumentedPublisher) Publish(ctx context.Context, rides []domain.LiftRide) error {
	err := p.next.Publish(ctx, rides)
	switch {
	case err == nil:
		p.metrics.MessagePublished(len(rides))
	case !errors.Is(err, context.Canceled) && !errors.Is(err, ports.ErrPublishPaused):
		p.metrics.PublishFailed(len(rides))
		p.log.Warn("publish failed", "rides", len(rides), "err", err)
	}
	return err
}
