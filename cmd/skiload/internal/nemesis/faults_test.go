package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// recorder is fake fault kinds whose injections only note what is
// active.
type recorder struct {
	mu        sync.Mutex
	active    map[string]int // by busy key
	now, most int
	failFirst map[string]bool
	shared    []string
}

// fakeKinds are kinds of two targets each; the two of "restart" occupy
// the same thing, as two broker nodes do.
func (r *recorder) fakeKinds(names ...string) []kind {
	var ks []kind
	for _, n := range names {
		k := kind{name: n}
		for i := range 2 {
			busy := fmt.Sprintf("%s-%d", n, i)
			if n == "restart" {
				busy = "restart" // both targets share one: never two at once
			}
			k.targets = append(k.targets, target{name: busy, busy: busy, inject: func(ctx context.Context, d time.Duration, _ *rand.Rand) (string, error) {
				r.mu.Lock()
				r.active[busy]++
				if r.active[busy] > 1 {
					r.shared = append(r.shared, busy)
				}
				r.now++
				r.most = max(r.most, r.now)
				fail := r.failFirst[n]
				r.failFirst[n] = false
				r.mu.Unlock()
				sleep(ctx, d)
				r.mu.Lock()
				r.active[busy]--
				r.now--
				r.mu.Unlock()
				if fail {
					return "", errors.New("could not inject")
				}
				return "", nil
			}})
		}
		ks = append(ks, k)
	}
	return ks
}

// TestScheduleInjectsEveryKindOneOrTwoAtATime: over a short schedule,
// every kind is injected (one whose first injection failed is drawn
// again), never more than two faults are active, and two faults never
// share what they occupy.
func TestScheduleInjectsEveryKindOneOrTwoAtATime(t *testing.T) {
	for seed := range uint64(3) {
		r := &recorder{active: map[string]int{}, failFirst: map[string]bool{"cut": true}}
		kinds := r.fakeKinds("kill", "pause", "cut", "restart", "latency")
		p := plan{kinds: kinds, min: 5 * time.Millisecond, max: 30 * time.Millisecond, gap: 5 * time.Millisecond}
		now := time.Now()
		var (
			mu     sync.Mutex
			faults []Fault
			failed int
		)
		missing := p.schedule(context.Background(), rand.New(rand.NewPCG(seed, 1)), now.Add(300*time.Millisecond), now.Add(2*time.Second),
			func(f Fault, start, end time.Time, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
				}
				if end.Sub(start) < p.min {
					t.Errorf("fault %s on %s lasted %s; want at least %s", f.Kind, f.Target, end.Sub(start), p.min)
				}
				faults = append(faults, f)
			})
		if len(missing) > 0 {
			t.Errorf("kinds never injected: %v", missing)
		}
		if failed != 1 {
			t.Errorf("%d injections failed; want the one made to", failed)
		}
		injected := map[string]bool{}
		for _, f := range faults {
			injected[f.Kind] = true
		}
		if len(injected) != 5 {
			t.Errorf("kinds injected %v; want all five", injected)
		}
		if r.most > 2 || r.most < 1 {
			t.Errorf("at most %d faults active at once; want one or two", r.most)
		}
		if len(r.shared) > 0 {
			t.Errorf("faults shared %v at once", r.shared)
		}
	}
}
