package app

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skidata/skidata/ports"
)

// EndpointStats keeps, per route template and method, the request count, the
// total and the maximum latency since start. Observing is lock-free once a
// route has been seen: it runs on every request. Every observation is also
// passed to ports.Metrics, so /statistics and /metrics are fed by the same
// call and always count the same requests.
type EndpointStats struct {
	routes  sync.Map // routeKey -> *routeStats
	metrics ports.Metrics
}

// routeKey is a struct, not method + " " + route: the concatenation
// allocated on every request.
type routeKey struct{ route, method string }

type routeStats struct {
	url, method string
	count       atomic.Int64
	totalNanos  atomic.Int64
	maxNanos    atomic.Int64
}

var _ ports.EndpointStats = (*EndpointStats)(nil)

// NewEndpointStats returns an empty recorder that forwards to m.
func NewEndpointStats(m ports.Metrics) *EndpointStats { return &EndpointStats{metrics: m} }

// Observe implements ports.EndpointStats.
func (s *EndpointStats) Observe(route, method string, status int, d time.Duration) {
	s.metrics.ObserveRequest(route, method, status, d)
	key := routeKey{route, method}
	v, ok := s.routes.Load(key)
	if !ok {
		v, _ = s.routes.LoadOrStore(key, &routeStats{url: route, method: method})
	}
	rs := v.(*routeStats)
	rs.count.Add(1)
	rs.totalNanos.Add(int64(d))
	for {
		old := rs.maxNanos.Load()
		if int64(d) <= old || rs.maxNanos.CompareAndSwap(old, int64(d)) {
			break
		}
	}
}

// Snapshot implements ports.EndpointStats, ordered by route then method.
func (s *EndpointStats) Snapshot() []ports.EndpointStat {
	var out []ports.EndpointStat
	s.routes.Range(func(_, v any) bool {
		rs := v.(*routeStats)
		n := rs.count.Load()
		if n == 0 {
			return true
		}
		out = append(out, ports.EndpointStat{
			URL: rs.url, Operation: rs.method, Count: n,
			Mean: time.Duration(rs.totalNanos.Load() / n),
			Max:  time.Duration(rs.maxNanos.Load()),
		})
		return true
	})
	slices.SortFunc(out, func(a, b ports.EndpointStat) int {
		return cmp.Or(cmp.Compare(a.URL, b.URL), cmp.Compare(a.Operation, b.Operation))
	})
	return out
}
