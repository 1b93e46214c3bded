package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Progress shows how far a run is on stderr: a bar redrawn in place on a
// terminal, a plain line every few seconds otherwise (logs, CI).
type Progress struct {
	Out   io.Writer
	TTY   bool
	Every time.Duration // between plain lines

	done, failed atomic.Int64
}

// Observe counts one finished request.
func (p *Progress) Observe(r Result) {
	p.done.Add(1)
	if r.Err != nil {
		p.failed.Add(1)
	}
}

// Start shows progress towards total until the returned stop is called.
func (p *Progress) Start(ctx context.Context, label string, total int) (stop func()) {
	p.done.Store(0)
	p.failed.Store(0)
	if p.Out == nil {
		return func() {}
	}
	every := p.Every
	if p.TTY {
		every = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				p.draw(label, total, start, true)
				return
			case <-t.C:
				p.draw(label, total, start, false)
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func (p *Progress) draw(label string, total int, start time.Time, final bool) {
	done, failed := p.done.Load(), p.failed.Load()
	elapsed := time.Since(start)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	if !p.TTY {
		if !final {
			fmt.Fprintf(p.Out, "%s: %d/%d done, %d failed, %.0f req/s, %s\n", label, done, total, failed, rate, elapsed.Round(time.Second))
		}
		return
	}
	const width = 40
	filled := 0
	if total > 0 {
		filled = int(int64(width) * done / int64(total))
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	fmt.Fprintf(p.Out, "\r%s [%s] %d/%d  %d failed  %.0f req/s ", label, bar, done, total, failed, rate)
	if final {
		fmt.Fprintln(p.Out)
	}
}
