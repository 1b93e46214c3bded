package app

import (
	"context"
	"time"

	"github.com/skidata/skidata/ports"
)

// Probe checks that one dependency is reachable.
type Probe struct {
	Name  string
	Check func(context.Context) error
}

// StoreProbe is the store's reachability check (a nil Check means nothing to
// check: the store lives in this process).
type StoreProbe Probe

// QueueProbe is the queue's.
type QueueProbe Probe

// Health answers /readyz: every probe, and the queue depth.
type Health struct {
	probes []Probe
	queue  ports.QueueStats
}

var _ ports.Health = (*Health)(nil)

// probeTimeout bounds each probe so /readyz answers even when a dependency hangs.
const probeTimeout = 2 * time.Second

// NewHealth returns the readiness checker.
func NewHealth(store StoreProbe, queue QueueProbe, stats ports.QueueStats) *Health {
	h := &Health{queue: stats}
	for _, p := range []Probe{Probe(store), Probe(queue)} {
		if p.Check != nil {
			h.probes = append(h.probes, p)
		}
	}
	return h
}

// Ready implements ports.Health.
func (h *Health) Ready(ctx context.Context) ports.Readiness {
	r := ports.Readiness{Ready: true, Checks: map[string]string{}}
	for _, p := range h.probes {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := p.Check(pctx)
		cancel()
		if err != nil {
			r.Ready = false
			r.Checks[p.Name] = err.Error()
		} else {
			r.Checks[p.Name] = "ok"
		}
	}
	depth, err := h.queue.Depth(ctx)
	if err != nil {
		r.Ready = false
		r.Checks["queue-depth"] = err.Error()
	}
	r.QueueDepth = depth
	return r
}
