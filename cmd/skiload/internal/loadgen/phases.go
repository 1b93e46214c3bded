package loadgen

import (
	"context"
	"fmt"
	"sync"
)

// Phases is the shape of the POST load: Phase1Workers workers start at
// once; as soon as any of them has sent its Phase1Requests rides, the
// Phase2Workers workers join. Every worker sends exactly its share, so the
// load is exactly Total rides.
type Phases struct {
	Phase1Workers, Phase1Requests int
	Phase2Workers, Phase2Requests int
}

// DefaultPhases: 32 workers × 1,000, then 168 × 1,000: 200,000 rides.
func DefaultPhases() Phases {
	return Phases{Phase1Workers: 32, Phase1Requests: 1000, Phase2Workers: 168, Phase2Requests: 1000}
}

// Total is the number of requests the phases send (and so the number of
// rides the generator must make: it is derived, never configured twice).
func (p Phases) Total() int {
	return p.Phase1Workers*p.Phase1Requests + p.Phase2Workers*p.Phase2Requests
}

// Workers is the most workers running at once, which sizes the HTTP client.
func (p Phases) Workers() int { return p.Phase1Workers + p.Phase2Workers }

// Validate rejects a shape that sends nothing or cannot start.
func (p Phases) Validate() error {
	if p.Phase1Workers < 1 || p.Phase1Requests < 1 {
		return fmt.Errorf("phase 1 needs at least one worker and one request each, got %d × %d", p.Phase1Workers, p.Phase1Requests)
	}
	if p.Phase2Workers < 0 || p.Phase2Requests < 0 {
		return fmt.Errorf("phase 2 cannot be negative, got %d × %d", p.Phase2Workers, p.Phase2Requests)
	}
	return nil
}

// Send sends one ride and says what came of it.
type Send func(ctx context.Context, r Ride) Result

// Run drives the phases: workers take rides from the channel and send
// them; done (may be nil) sees each result as it happens, for progress.
// It returns every result once every worker has stopped; it stops early,
// with what it has, when ctx ends or the channel closes.
func (p Phases) Run(ctx context.Context, rides <-chan Ride, send Send, done func(Result)) []Result {
	var (
		mu        sync.Mutex
		all       = make([]Result, 0, p.Total())
		wg        sync.WaitGroup
		firstDone = make(chan struct{})
		once      sync.Once
	)
	worker := func(n int, phase1 bool) {
		defer wg.Done()
		local := make([]Result, 0, n)
		defer func() {
			if phase1 {
				once.Do(func() { close(firstDone) })
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
		for range n {
			var r Ride
			var ok bool
			select {
			case r, ok = <-rides:
			case <-ctx.Done():
			}
			if !ok {
				return
			}
			res := send(ctx, r)
			res.Ride = r
			local = append(local, res)
			if done != nil {
				done(res)
			}
		}
	}
	wg.Add(p.Phase1Workers)
	for range p.Phase1Workers {
		go worker(p.Phase1Requests, true)
	}
	wg.Add(1) // the phase-2 starter, so Wait cannot return before it has added its workers
	go func() {
		defer wg.Done()
		select {
		case <-firstDone:
		case <-ctx.Done():
			return
		}
		wg.Add(p.Phase2Workers)
		for range p.Phase2Workers {
			go worker(p.Phase2Requests, false)
		}
	}()
	wg.Wait()
	return all
}

// Repeat runs total calls of one request function (the GET test cases),
// shared by workers (the first total mod workers of them make one more);
// the function gets the worker's index for its own random source.
func Repeat(ctx context.Context, workers, total int, call func(ctx context.Context, worker int) Result, done func(Result)) []Result {
	var (
		mu  sync.Mutex
		all = make([]Result, 0, total)
		wg  sync.WaitGroup
	)
	wg.Add(workers)
	for w := range workers {
		requests := total / workers
		if w < total%workers {
			requests++
		}
		go func() {
			defer wg.Done()
			local := make([]Result, 0, requests)
			for range requests {
				if ctx.Err() != nil {
					break
				}
				res := call(ctx, w)
				local = append(local, res)
				if done != nil {
					done(res)
				}
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}
