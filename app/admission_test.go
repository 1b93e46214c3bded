package app

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// settableDepth is a QueueStats whose depth the test sets.
type settableDepth struct{ d atomic.Int64 }

func (s *settableDepth) Depth(context.Context) (int64, error) { return s.d.Load(), nil }

// countingIngester accepts every ride and counts them.
type countingIngester struct{ n atomic.Int64 }

func (c *countingIngester) AddRide(context.Context, domain.LiftRide) error {
	c.n.Add(1)
	return nil
}

// rejections counts Metrics.Rejected by reason.
type rejections struct {
	ports.NopMetrics
	rate, full atomic.Int64
}

func (r *rejections) Rejected(reason string) {
	switch reason {
	case rejectRate:
		r.rate.Add(1)
	case rejectQueueFull:
		r.full.Add(1)
	}
}

func startAdmission(t *testing.T, next ports.RideIngester, q ports.QueueStats, cfg AdmissionConfig, m ports.Metrics) *Admission {
	t.Helper()
	a := newAdmission(next, q, cfg, m, discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a
}

var aRide = domain.MustLiftRide(1, "2024", 1, 1, 1, 1)

func TestAdmissionOverTheRateIsOverloaded(t *testing.T) {
	next, m := &countingIngester{}, &rejections{}
	// One ride per minute, burst 3: the fourth ride at once is over the rate.
	a := startAdmission(t, next, &settableDepth{}, AdmissionConfig{Rate: 1.0 / 60, Burst: 3}, m)
	for i := range 3 {
		if err := a.AddRide(context.Background(), aRide); err != nil {
			t.Fatalf("ride %d within the burst: %v", i+1, err)
		}
	}
	err := a.AddRide(context.Background(), aRide)
	if !errors.Is(err, domain.ErrOverloaded) {
		t.Fatalf("ride over the rate = %v; want ErrOverloaded", err)
	}
	if next.n.Load() != 3 || m.rate.Load() != 1 {
		t.Errorf("ingested %d, rate rejections %d; want 3 and 1", next.n.Load(), m.rate.Load())
	}
}

func TestAdmissionZeroRateIsUnlimited(t *testing.T) {
	next := &countingIngester{}
	a := startAdmission(t, next, &settableDepth{}, AdmissionConfig{}, ports.NopMetrics{})
	for range 10_000 {
		if err := a.AddRide(context.Background(), aRide); err != nil {
			t.Fatal(err)
		}
	}
	if !math.IsInf(a.Rate(), 1) {
		t.Errorf("Rate() = %g; want +Inf", a.Rate())
	}
}

func TestAdmissionPastTheHardLimitIsUnavailable(t *testing.T) {
	next, m, q := &countingIngester{}, &rejections{}, &settableDepth{}
	a := startAdmission(t, next, q, AdmissionConfig{HardLimit: 100}, m)
	q.d.Store(100)
	waitFor(t, "a ride refused with ErrUnavailable at depth 100", func() bool {
		return errors.Is(a.AddRide(context.Background(), aRide), domain.ErrUnavailable)
	})
	if m.full.Load() == 0 {
		t.Error("no queue_full rejection counted")
	}
	q.d.Store(99)
	waitFor(t, "rides accepted again below the ceiling", func() bool {
		return a.AddRide(context.Background(), aRide) == nil
	})
}

func TestAdmissionRateFollowsQueueDepth(t *testing.T) {
	q := &settableDepth{}
	a := startAdmission(t, &countingIngester{}, q, AdmissionConfig{Rate: 1000, SoftLimit: 100, HardLimit: 200}, ports.NopMetrics{})
	for _, c := range []struct {
		depth int64
		rate  float64
	}{
		{50, 1000},  // below soft: full rate
		{100, 1000}, // at soft: still full
		{150, 500},  // half way: half the rate
		{190, 100},  // 90% of the way: a tenth
		{199, 50},   // the floor: 5%
		{0, 1000},   // drained: back to full
	} {
		q.d.Store(c.depth)
		waitFor(t, "rate "+ftoa(c.rate)+" at depth "+ftoa(float64(c.depth)), func() bool {
			return math.Abs(a.Rate()-c.rate) < 1e-9
		})
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestAdmissionSamplerStopsOnCleanup(t *testing.T) {
	_, cleanup := NewAdmission(context.Background(), nil, &settableDepth{}, AdmissionConfig{}, ports.NopMetrics{}, discard)
	done := make(chan struct{})
	go func() { cleanup(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the depth sampler did not stop within 10s of cleanup")
	}
}
