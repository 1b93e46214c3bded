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
	// OnReject, if set, is called for every publish refused while open.
	OnReject func()
}

// Publisher is a ports.Publisher behind a circuit breaker.
type Publisher struct {
	next     ports.Publisher
	cb       *gobreaker.CircuitBreaker[struct{}]
	openFor  time.Duration
	onReject func()
}

var _ ports.Publisher = (*Publisher)(nil)

// New wraps next. With cfg.Failures 0 it returns next unchanged.
func New(next ports.Publisher, cfg Config) ports.Publisher {
	if cfg.Failures == 0 {
		return next
	}
	return Wrap(next, cfg)
}

// Wrap wraps next in a breaker whatever cfg.Failures says (at least one
// failure trips it); tests use it to reach State.
func Wrap(next ports.Publisher, cfg Config) *Publisher {
	failures := max(cfg.Failures, 1)
	st := gobreaker.Settings{
		Name: "publish",
		// One probe at a time while half-open: a queue that just came back
		// should not be hit by every waiting request at once.
		MaxRequests: 1,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		// Only the queue's unavailability counts against it: a cancelled
		// request or any other error says nothing about the queue's health.
		IsSuccessful: func(err error) bool { return err == nil || !errors.Is(err, domain.ErrUnavailable) },
	}
	if cfg.OnStateChange != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) { cfg.OnStateChange(from.String(), to.String()) }
	}
	onReject := cfg.OnReject
	if onReject == nil {
		onReject = func() {}
	}
	return &Publisher{next: next, cb: gobreaker.NewCircuitBreaker[struct{}](st), openFor: cfg.OpenFor, onReject: onReject}
}

// Publish implements ports.Publisher.
func (p *Publisher) Publish(ctx context.Context, ride domain.LiftRide) error {
	_, err := p.cb.Execute(func() (struct{}, error) { return struct{}{}, p.next.Publish(ctx, ride) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		p.onReject()
		return fmt.Errorf("%w: the queue failed repeatedly, so publishing is paused for up to %s (%w)", domain.ErrUnavailable, p.openFor, err)
	}
	return err
}

// State is the breaker's current state: "closed", "half-open" or "open".
func (p *Publisher) State() string { return p.cb.State().String() }
