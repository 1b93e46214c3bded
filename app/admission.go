package app

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// AdmissionConfig tunes the admission control in front of ingest (see
// Admission and docs/admission.md).
type AdmissionConfig struct {
	// Rate is the most rides per second this process accepts; 0 is no limit.
	Rate float64
	// Burst is how many rides may arrive at once above the rate; 0 means one
	// second's worth of Rate.
	Burst int
	// SoftLimit is the queue depth above which the rate is scaled down
	// linearly, reaching a trickle at HardLimit; 0 is off.
	SoftLimit int64
	// HardLimit is the queue depth at which every POST is answered 503 at
	// once; 0 is off.
	HardLimit int64
}

// depthSampleEvery is how often the queue depth is read: often enough that
// the limiter follows a spike within a fraction of a second, rarely enough
// that a broker's depth query (a network round trip) costs nothing.
const depthSampleEvery = 100 * time.Millisecond

// minRateFraction is the floor of the adaptive rate, as a fraction of the
// configured rate: just below the hard ceiling the service still admits a
// trickle, so clients that retry see progress rather than a wall.
const minRateFraction = 0.05

// Rejection reasons reported to ports.Metrics.Rejected.
const (
	rejectRate      = "rate"
	rejectQueueFull = "queue_full"
)

// Admission decides, before any work is done, whether a POSTed ride may
// enter: a token bucket (golang.org/x/time/rate) caps the rate (over it:
// ErrOverloaded, 429), the bucket's refill rate follows the queue depth
// (full rate below the soft limit, scaled down linearly to 5% at the hard
// limit), and past the hard limit every ride is refused at once with
// ErrUnavailable (503).
//
// It decorates ports.RideIngester rather than ports.Publisher because
// admission is the API's decision about its callers: a refused ride costs
// nothing (no catalog lookup, no publish), the rejection is counted by reason
// at the one place that knows the reason, and the persister or any other
// publisher of rides is never throttled by the API's limits.
//
// The depth is sampled by one background goroutine (Run), not per request:
// a broker's depth is a network call, and a request must not wait for it.
type Admission struct {
	next    ports.RideIngester
	queue   ports.QueueStats
	cfg     AdmissionConfig
	metrics ports.Metrics
	log     *slog.Logger
	limiter *rate.Limiter // nil: no rate limit
	depth   atomic.Int64  // the last sampled queue depth
}

var _ ports.RideIngester = (*Admission)(nil)

// NewAdmission wraps the ingest service and starts the depth sampler, which
// stops when ctx ends or the returned cleanup is called.
func NewAdmission(ctx context.Context, next *Ingest, queue ports.QueueStats, cfg AdmissionConfig, m ports.Metrics, log *slog.Logger) (*Admission, func()) {
	a := newAdmission(next, queue, cfg, m, log)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.run(ctx) }()
	return a, func() { cancel(); <-done }
}

func newAdmission(next ports.RideIngester, queue ports.QueueStats, cfg AdmissionConfig, m ports.Metrics, log *slog.Logger) *Admission {
	a := &Admission{next: next, queue: queue, cfg: cfg, metrics: m, log: log}
	if cfg.Rate > 0 {
		burst := cfg.Burst
		if burst == 0 {
			burst = int(math.Ceil(cfg.Rate))
		}
		a.limiter = rate.NewLimiter(rate.Limit(cfg.Rate), burst)
	}
	return a
}

// AddRide implements ports.RideIngester. Every valid ride the API takes
// passes here, so this is where a refused one is counted, by reason.
func (a *Admission) AddRide(ctx context.Context, ride domain.LiftRide) error {
	if a.cfg.HardLimit > 0 {
		if d := a.depth.Load(); d >= a.cfg.HardLimit {
			a.metrics.Rejected(rejectQueueFull)
			a.metrics.RideRejected(rejectQueueFull)
			return domain.Unavailable("the queue holds %d rides, at its ceiling of %d; retry after the Retry-After header", d, a.cfg.HardLimit)
		}
	}
	if a.limiter != nil && !a.limiter.Allow() {
		a.metrics.Rejected(rejectRate)
		a.metrics.RideRejected(rejectRate)
		return domain.Overloaded("this server takes at most %.0f rides per second now; retry after the Retry-After header", float64(a.limiter.Limit()))
	}
	err := a.next.AddRide(ctx, ride)
	if err != nil {
		a.metrics.RideRejected(rejectionReason(err))
	}
	return err
}

// rejectionReason names why ingest refused a ride, for RideRejected.
func rejectionReason(err error) string {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return "not_found"
	case errors.Is(err, domain.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return "unavailable"
	case errors.Is(err, domain.ErrOverloaded):
		return rejectRate
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "error"
	}
}

// Rate is the limiter's current refill rate in rides per second (+Inf when
// there is no limit).
func (a *Admission) Rate() float64 {
	if a.limiter == nil {
		return math.Inf(1)
	}
	return float64(a.limiter.Limit())
}

// run samples the queue depth until ctx ends.
func (a *Admission) run(ctx context.Context) {
	t := time.NewTicker(depthSampleEvery)
	defer t.Stop()
	for {
		a.sample(ctx)
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
func (a *Admission) sample(ctx context.Context) {
	d, err := a.queue.Depth(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("queue depth sample failed; admission keeps the last depth", "last_depth", a.depth.Load(), "err", err)
		}
		return
	}
	a.depth.Store(d)
	a.metrics.SetQueueDepth(d)
	if a.limiter != nil {
		if r := rate.Limit(a.rateFor(d)); r != a.limiter.Limit() {
			a.limiter.SetLimit(r)
		}
	}
}

// rateFor is the refill rate at queue depth d: the configured rate up to the
// soft limit, then falling linearly to minRateFraction of it at the hard
// limit.
func (a *Admission) rateFor(d int64) float64 {
	soft, hard := a.cfg.SoftLimit, a.cfg.HardLimit
	if soft <= 0 || d <= soft {
		return a.cfg.Rate
	}
	frac := 1 - float64(d-soft)/float64(hard-soft)
	return a.cfg.Rate * max(frac, minRateFraction)
}

// instrumentedPublisher counts and logs every ride the queue refuses: one log
// line per failure, with its cause (the log handler drops repeats under a
// storm). It sits under the circuit breaker, so it sees real queue failures
// only, never the breaker's own fast refusals.
type instrumentedPublisher struct {
	next    ports.Publisher
	metrics ports.Metrics
	log     *slog.Logger
}

func (p instrumentedPublisher) Publish(ctx context.Context, ride domain.LiftRide) error {
	err := p.next.Publish(ctx, ride)
	if err != nil && !errors.Is(err, context.Canceled) {
		p.metrics.PublishFailed()
		p.log.Warn("publish failed", "err", err)
	}
	return err
}

// InstrumentPublisher wraps a queue so that every refusal is counted and
// logged (composition puts the circuit breaker in front of it).
func InstrumentPublisher(next ports.Publisher, m ports.Metrics, log *slog.Logger) ports.Publisher {
	return instrumentedPublisher{next: next, metrics: m, log: log}
}
