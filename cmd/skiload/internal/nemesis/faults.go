package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The fault kinds. Every mode has the process kinds for each of its
// processes and the link kinds for each link from a process to a server;
// the restart kinds come with the servers that have them (DBRestart,
// BrokerRestart).
const (
	Kill      = "kill"      // SIGKILL; restarted after the restart delay
	Term      = "term"      // SIGTERM (a drain, then exit); restarted after the restart delay
	Pause     = "pause"     // SIGSTOP, then SIGCONT
	Partition = "partition" // every byte held both ways, then delivered
	Cut       = "cut"       // every connection closed, new ones refused
	Latency   = "latency"   // added latency each way
)

// kind is a fault kind a mode has, with what it can hit.
type kind struct {
	name    string
	targets []target
}

// target is one thing a fault can hit.
type target struct {
	name string
	// busy is what the fault occupies: two faults never share it (a
	// process is not paused while it is being killed; one broker node is
	// down at a time).
	busy string
	// inject injects the fault, keeps it for d, undoes it, and returns
	// once it is undone (a process or server killed or stopped is serving
	// again). detail says exactly what was done. It always undoes the
	// fault, whatever ctx does.
	inject func(ctx context.Context, d time.Duration, rng *rand.Rand) (detail string, err error)
}

// plan is how a run draws its faults.
type plan struct {
	kinds    []kind
	min, max time.Duration
	// gap bounds the wait between one injection and the next draw.
	gap time.Duration
}

// schedule injects faults from p until stop passes, drawing from rng:
// after a random gap, one or two at a time (it waits until fewer than a
// drawn 1 or 2 are active), a kind, a free target and a duration between
// p.min and p.max. The first faults are every kind once, in a random
// order, and a kind whose fault could not be injected is drawn again
// until one is; later faults are of any kind. No fault is drawn after
// quiet while every kind has been injected. It returns once every fault
// is undone, with the kinds never injected.
func (p plan) schedule(ctx context.Context, rng *rand.Rand, quiet, stop time.Time, record func(f Fault, start, end time.Time, err error)) []string {
	pending := slices.Clone(p.kinds)
	rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
	var (
		mu      sync.Mutex
		busy    = map[string]bool{}
		active  int
		covered = map[string]bool{}
		// done wakes a draw waiting for room; one token is enough, as
		// the waiter looks at the state again after every wake-up.
		done = make(chan struct{}, 1)
		wg   sync.WaitGroup
	)
	over := func() bool {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		return ctx.Err() != nil || now.After(stop) || (now.After(quiet) && len(pending) == 0)
	}
	for {
		sleep(ctx, time.Duration(rng.Int64N(int64(p.gap)+1)))
		if over() {
			break
		}
		limit := 1 + rng.IntN(2)
		d := p.min + time.Duration(rng.Int64N(int64(p.max-p.min)+1))
		seed1, seed2, pick := rng.Uint64(), rng.Uint64(), rng.Uint64()
		random := p.kinds[rng.IntN(len(p.kinds))]
		// Wait for room: fewer than limit active, and a target of the
		// kind free.
		var k kind
		var t target
		for {
			mu.Lock()
			k = random
			if len(pending) > 0 {
				k = pending[0]
			}
			var free []target
			for _, c := range k.targets {
				if !busy[c.busy] {
					free = append(free, c)
				}
			}
			if active < limit && len(free) > 0 {
				if len(pending) > 0 {
					pending = pending[1:]
				}
				t = free[pick%uint64(len(free))]
				busy[t.busy] = true
				active++
				mu.Unlock()
				break
			}
			mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
			}
			if over() {
				wg.Wait()
				return p.uncovered(covered)
			}
		}
		wg.Go(func() {
			start := time.Now()
			detail, err := t.inject(ctx, d, rand.New(rand.NewPCG(seed1, seed2)))
			record(Fault{Kind: k.name, Target: t.name, Detail: detail}, start, time.Now(), err)
			mu.Lock()
			busy[t.busy] = false
			active--
			if err == nil {
				covered[k.name] = true
			} else if !covered[k.name] && !slices.ContainsFunc(pending, func(q kind) bool { return q.name == k.name }) {
				pending = append(pending, k)
			}
			mu.Unlock()
			select {
			case done <- struct{}{}:
			default:
			}
		})
	}
	wg.Wait()
	return p.uncovered(covered)
}

// uncovered is the kinds of p not in covered.
func (p plan) uncovered(covered map[string]bool) []string {
	var out []string
	for _, k := range p.kinds {
		if !covered[k.name] {
			out = append(out, k.name)
		}
	}
	return out
}

// processKinds are kill, term and pause of each process. recovered is how
// long a process killed or stopped gets to serve again; budget how long
// one has to exit after SIGTERM before it counts as hung and is killed.
func processKinds(procs []*process, recovered, budget time.Duration, violation func(Violation)) []kind {
	kill, term, pause := kind{name: Kill}, kind{name: Term}, kind{name: Pause}
	for _, p := range procs {
		// end signals the process and waits until an incarnation after
		// it serves.
		end := func(ctx context.Context, sig syscall.Signal, how string) (string, error) {
			inc, exited, err := p.signal(sig, true)
			if err != nil {
				return how, err
			}
			if sig == syscall.SIGTERM {
				select {
				case <-exited:
				case <-time.After(budget):
					violation(Violation{Kind: Hang, What: p.name, Detail: fmt.Sprintf("incarnation %d still running %s after SIGTERM; killed", inc, budget)})
					if _, exited, err := p.signal(syscall.SIGKILL, true); err == nil {
						<-exited
					}
				}
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recovered)
			defer cancel()
			if err := p.waitServing(wctx, inc); err != nil {
				violation(Violation{Kind: NotRecovered, What: p.name, Detail: fmt.Sprintf("not serving %s after %s: %v", recovered, how, err)})
				return how, err
			}
			return how, nil
		}
		kill.targets = append(kill.targets, target{name: p.name, busy: p.name, inject: func(ctx context.Context, _ time.Duration, _ *rand.Rand) (string, error) {
			return end(ctx, syscall.SIGKILL, "SIGKILL")
		}})
		term.targets = append(term.targets, target{name: p.name, busy: p.name, inject: func(ctx context.Context, _ time.Duration, _ *rand.Rand) (string, error) {
			return end(ctx, syscall.SIGTERM, "SIGTERM")
		}})
		pause.targets = append(pause.targets, target{name: p.name, busy: p.name, inject: func(ctx context.Context, d time.Duration, _ *rand.Rand) (string, error) {
			how := fmt.Sprintf("SIGSTOP for %s", d.Round(time.Millisecond))
			if _, _, err := p.signal(syscall.SIGSTOP, false); err != nil {
				return how, err
			}
			sleep(ctx, d)
			_, _, err := p.signal(syscall.SIGCONT, false)
			return how, err
		}})
	}
	return []kind{kill, term, pause}
}

// linkKinds are partition, cut and latency of each link.
func linkKinds(links []*link) []kind {
	part, cut, slow := kind{name: Partition}, kind{name: Cut}, kind{name: Latency}
	for _, l := range links {
		part.targets = append(part.targets, target{name: l.name, busy: l.name, inject: func(ctx context.Context, d time.Duration, _ *rand.Rand) (string, error) {
			how := fmt.Sprintf("held for %s", d.Round(time.Millisecond))
			if err := l.partition(); err != nil {
				l.heal()
				return how, err
			}
			sleep(ctx, d)
			l.heal()
			return how, nil
		}})
		cut.targets = append(cut.targets, target{name: l.name, busy: l.name, inject: func(ctx context.Context, d time.Duration, _ *rand.Rand) (string, error) {
			how := fmt.Sprintf("closed for %s", d.Round(time.Millisecond))
			l.cut()
			sleep(ctx, d)
			return how, l.restore()
		}})
		slow.targets = append(slow.targets, target{name: l.name, busy: l.name, inject: func(ctx context.Context, d time.Duration, rng *rand.Rand) (string, error) {
			lat := time.Duration(20+rng.IntN(780)) * time.Millisecond
			how := fmt.Sprintf("%s ± %s each way for %s", lat, lat/4, d.Round(time.Millisecond))
			if err := l.slow(lat, lat/4); err != nil {
				l.heal()
				return how, err
			}
			sleep(ctx, d)
			l.heal()
			return how, nil
		}})
	}
	return []kind{part, cut, slow}
}

// restartKinds are the restarts of the servers that have one, one kind
// per restartKind; at most one server of a kind is down at a time.
func restartKinds(servers []server) []kind {
	var kinds []kind
	for _, s := range servers {
		name := s.restartKind()
		if name == "" {
			continue
		}
		i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == name })
		if i < 0 {
			kinds = append(kinds, kind{name: name})
			i = len(kinds) - 1
		}
		kinds[i].targets = append(kinds[i].targets, target{name: s.name(), busy: name, inject: func(ctx context.Context, d time.Duration, rng *rand.Rand) (string, error) {
			how, err := s.restart(ctx, d, rng)
			return fmt.Sprintf("%s, down %s", how, d.Round(time.Millisecond)), err
		}})
	}
	return kinds
}
