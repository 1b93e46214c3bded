package app

import (
	"testing"
	"time"

	"github.com/skidata/skidata/ports"
)

// TestObservingARouteSeenBeforeAllocatesNothing: Observe runs on every
// request; once a route is known it must not allocate.
func TestObservingARouteSeenBeforeAllocatesNothing(t *testing.T) {
	s := NewEndpointStats(ports.NopMetrics{})
	route, method := "/skiers/{skierID}/vertical", "GET"
	s.Observe(route, method, 200, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { s.Observe(route, method, 200, time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %.1f times per call; want 0", n)
	}
}
