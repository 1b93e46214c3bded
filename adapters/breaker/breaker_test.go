package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// flakyPublisher fails with ErrUnavailable while failing is set.
type flakyPublisher struct {
	failing atomic.Bool
	calls   atomic.Int64
}

func (f *flakyPublisher) Publish(context.Context, []domain.LiftRide) error {
	f.calls.Add(1)
	if f.failing.Load() {
		return domain.Unavailable("queue is down")
	}
	return nil
}

func waitForState(t *testing.T, p *publisher, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.state() != want {
		if time.Now().After(deadline) {
			t.Fatalf("breaker state %q; want %q within 10s", p.state(), want)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func TestBreakerOpensHalfOpensAndCloses(t *testing.T) {
	ctx := context.Background()
	ride := []domain.LiftRide{domain.MustLiftRide(1, "2024", 1, 1, 1, 1)}
	pub := &flakyPublisher{}
	pub.failing.Store(true)
	var mu sync.Mutex
	var transitions []string
	p := wrap(pub, Config{Failures: 3, OpenFor: 100 * time.Millisecond,
		OnStateChange: func(from, to string) { mu.Lock(); transitions = append(transitions, from+"->"+to); mu.Unlock() },
	})

	for range 3 {
		if err := p.Publish(ctx, ride); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("failing publish = %v; want ErrUnavailable", err)
		}
	}
	if p.state() != "open" {
		t.Fatalf("after 3 failures in a row the breaker is %q; want open", p.state())
	}
	calls := pub.calls.Load()
	err := p.Publish(ctx, ride)
	if !errors.Is(err, domain.ErrUnavailable) || !errors.Is(err, ports.ErrPublishPaused) {
		t.Errorf("publish while open = %v; want ErrUnavailable and ErrPublishPaused", err)
	}
	if pub.calls.Load() != calls {
		t.Error("publish while open reached the queue; it must fail at once")
	}

	pub.failing.Store(false) // the queue recovers
	waitForState(t, p, "half-open")
	if err := p.Publish(ctx, ride); err != nil {
		t.Fatalf("probe publish after recovery: %v", err)
	}
	if p.state() != "closed" {
		t.Errorf("after a successful probe the breaker is %q; want closed", p.state())
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"closed->open", "open->half-open", "half-open->closed"}
	if len(transitions) != 3 || transitions[0] != want[0] || transitions[1] != want[1] || transitions[2] != want[2] {
		t.Errorf("transitions = %v; want %v", transitions, want)
	}
}

func TestBreakerIgnoresErrorsThatAreNotUnavailability(t *testing.T) {
	p := wrap(publishFunc(func() error { return context.Canceled }), Config{Failures: 1, OpenFor: time.Hour})
	for range 5 {
		_ = p.Publish(context.Background(), nil)
	}
	if p.state() != "closed" {
		t.Errorf("cancelled publishes opened the breaker (%q)", p.state())
	}
}

// A full queue is backpressure from a queue that works: however many
// publishes it refuses, the breaker stays closed, so the next publish after
// the queue drains is tried rather than refused for OpenFor.
func TestBreakerIgnoresAFullQueue(t *testing.T) {
	full := fmt.Errorf("%w: %w: 5 rides waiting", domain.ErrUnavailable, ports.ErrQueueFull)
	p := wrap(publishFunc(func() error { return full }), Config{Failures: 1, OpenFor: time.Hour})
	for range 5 {
		if err := p.Publish(context.Background(), nil); !errors.Is(err, ports.ErrQueueFull) {
			t.Fatalf("publish to a full queue = %v; want the queue's ErrQueueFull passed through", err)
		}
	}
	if p.state() != "closed" {
		t.Errorf("a full queue opened the breaker (%q); want closed", p.state())
	}
}

func TestNewWithZeroFailuresIsNoBreaker(t *testing.T) {
	pub := &flakyPublisher{}
	if got := New(pub, Config{}); got != pub {
		t.Errorf("New with Failures 0 = %T; want the publisher itself", got)
	}
}

type publishFunc func() error

func (f publishFunc) Publish(context.Context, []domain.LiftRide) error { return f() }
