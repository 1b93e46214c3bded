package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/skidata/skidata/ports"
)

// Probe checks that one dependency is reachable. A nil Check means there
// is nothing to check: the dependency lives in this process.
type Probe struct {
	Name  string
	Check func(context.Context) error
}

// Health answers /readyz: every probe, and the queue depth. A dependency is
// reported "ok" or "unavailable", nothing more: the reason names hosts,
// users and driver errors, so it goes to the log, not to whoever can reach
// /readyz.
type Health struct {
	probes   []Probe // needed: one failing makes the service unready
	optional []Probe // one failing makes it degraded
	queue    ports.QueueStats
	log      *slog.Logger
}

// The states /readyz reports per dependency.
const (
	CheckOK          = "ok"
	CheckUnavailable = "unavailable"
)

var _ ports.Health = (*Health)(nil)

// probeTimeout bounds each probe so /readyz answers even when a dependency hangs.
const probeTimeout = 2 * time.Second

// NewHealth returns the readiness checker. A required dependency that
// fails makes the service unready; an optional one (the query cache:
// queries fall back to the store) makes it degraded.
func NewHealth(stats ports.QueueStats, log *slog.Logger, required []Probe, optional ...Probe) *Health {
	h := &Health{queue: stats, log: log}
	for _, p := range required {
		if p.Check != nil {
			h.probes = append(h.probes, p)
		}
	}
	for _, p := range optional {
		if p.Check != nil {
			h.optional = append(h.optional, p)
		}
	}
	return h
}

// Ready implements ports.Health.
func (h *Health) Ready(ctx context.Context) ports.Readiness {
	r := ports.Readiness{Ready: true, Checks: map[string]string{}}
	for _, p := range h.probes {
		if !h.check(ctx, p, r.Checks) {
			r.Ready = false
		}
	}
	for _, p := range h.optional {
		if !h.check(ctx, p, r.Checks) {
			r.Degraded = true
		}
	}
	depth, err := h.queue.Depth(ctx)
	if err != nil {
		r.Ready = false
		r.Checks["queue-depth"] = CheckUnavailable
		h.log.Warn("readiness check failed", "dependency", "queue-depth", "err", err)
	}
	r.QueueDepth = depth.Rides
	return r
}

// check runs one probe, records its state and logs why it failed.
func (h *Health) check(ctx context.Context, p Probe, checks map[string]string) bool {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := p.Check(pctx)
	cancel()
	if err != nil {
		checks[p.Name] = CheckUnavailable
		h.log.Warn("readiness check failed", "dependency", p.Name, "err", err)
		return false
	}
	checks[p.Name] = CheckOK
	return true
}
