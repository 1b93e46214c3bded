package breaker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Config tunes the breaker.
type Config struct {
	// Failures is how many publishes in a row must fail with
	// ErrUnavailable before the breaker opens; 0 turns the breaker off.
	Failures uint32
	// OpenFor is how long the breaker stays open before it lets a probe
	// through.
	OpenFor time.Duration
	// OnStateChange, if set, hears every transition ("closed", "half-open",
	// "open"): for metrics and the log.
	OnStateChange func(from, to string)
}

// publisher is a ports.Publisher behind a circuit breaker.
type publisher struct {
	next    ports.Publisher
	cb      *gobreaker.CircuitBreaker[struct{}]
	openFor time.Duration
}

var _ ports.Publisher = (*publisher)(nil)

// New wraps next. With cfg.Failures 0 it returns next unchanged.
func New(next ports.Publisher, cfg Config) ports.Publisher {
	if cfg.Failures == 0 {
		return next
	}
	return wrap(next, cfg)
}

// wrap wraps next in a breaker whatever cfg.Failures says (at least one
// failure trips it).
func wrap(next ports.Publisher, cfg Config) *publisher {
	failures := max(cfg.Failures, 1)
	st := gobreaker.Settings{
		Name: "publish",
		// One probe at a time while half-open: a queue that just came back
		// should not be hit by every waiting request at once.
		MaxRequests: 1,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// Only the queue's unavailability counts against it: a cancelled
		// request or any other error says nothing about the queue's
		// health, and a full queue is backpressure from a queue that
		// works: it must not pause publishing once it has room again.
		IsSuccessful: func(err error) bool {
			return err == nil || !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, ports.ErrQueueFull)
		},
	}
	if cfg.OnStateChange != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) { cfg.OnStateChange(from.String(), to.String()) }
	}
	return &publisher{next: next, cb: gobreaker.NewCircuitBreaker[struct{}](st), openFor: cfg.OpenFor}
}

// Publish implements ports.Publisher.
func (p *publisher) Publish(ctx context.Context, rides []domain.LiftRide) error {
	_, err := p.cb.Execute(func() (struct{}, error) { return struct{}{}, p.next.Publish(ctx, rides) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return fmt.Errorf("%w: %w: the queue failed repeatedly, so publishing is paused for up to %s (%w)", domain.ErrUnavailable, ports.ErrPublishPaused, p.openFor, err)
	}
	return err
}

// state is the breaker's current state: "closed", "half-open" or "open".
func (p *publisher) state() string { return p.cb.State().String() }
