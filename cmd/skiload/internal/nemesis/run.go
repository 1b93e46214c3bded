package nemesis

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The drain budget the run gives every process (--shutdown-timeout), and
// how long a process may take to exit after SIGTERM before it counts as
// hung: the HTTP shutdown budget (--http-shutdown-timeout, 5 s by
// default), the drain's, and a margin, as systemd's TimeoutStopSec is
// set in deploy/systemd.
const (
	shutdownTimeout = 10 * time.Second
	stopBudget      = 5*time.Second + shutdownTimeout + 10*time.Second
)

// Run runs every mode c selects, one after the other, and returns the exit
// code: 0 when every mode held, 1 when any found a violation or could not
// run. Each mode ends with its line (Report.Line) on stdout; progress
// goes to progress.
func Run(ctx context.Context, c Config, stdout, progress io.Writer) int {
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
		fmt.Fprintf(stdout, "seed %d (--seed %d, or SOAK_SEED=%d with make soak, repeats these draws)\n", c.Seed, c.Seed, c.Seed)
	}
	code := 0
	for _, m := range c.selected() {
		rep := RunMode(ctx, c, m, progress)
		rep.Print(stdout)
		if !rep.OK() {
			code = 1
		}
		if ctx.Err() != nil {
			return 1
		}
	}
	return code
}

// modeSeed is the seed of one mode's draws: the run's seed and the mode's
// name, so that a mode run alone draws what it drew among the others.
func modeSeed(seed uint64, mode string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(mode))
	return seed ^ h.Sum64()
}

// run is one mode's run in progress.
type run struct {
	c    Config
	m    Mode
	logs string
	say  func(format string, args ...any)
	zero time.Time

	mu         sync.Mutex
	hist       History
	violations []Violation
}

func (r *run) since() time.Duration { return time.Since(r.zero) }

func (r *run) exit(e Exit) {
	r.mu.Lock()
	r.hist.Exits = append(r.hist.Exits, e)
	r.mu.Unlock()
	if !e.Planned {
		r.say("%s incarnation %d exited by itself at %.1fs: %s", e.Process, e.Incarnation, e.At.Seconds(), e.Status)
	}
}

func (r *run) violation(v Violation) {
	r.mu.Lock()
	r.violations = append(r.violations, v)
	r.mu.Unlock()
	r.say("VIOLATION %s", v)
}

// RunMode runs mode m: servers, links, processes, load and faults, then
// the drain and the check. It writes the history, the report and the
// chart into c.Out/<mode> and returns the report; a run that could not be
// carried out has its Error set.
func RunMode(ctx context.Context, c Config, m Mode, progress io.Writer) Report {
	seed := modeSeed(c.Seed, m.Name)
	rep := Report{Mode: m.Name, Seed: c.Seed, Duration: c.Duration.String(), Rate: c.Rate, ReadsHeld: m.Reads == AfterCommit}
	dir := filepath.Join(c.Out, m.Name)
	r := &run{c: c, m: m, logs: filepath.Join(dir, "logs"), zero: time.Now()}
	r.say = func(format string, args ...any) {
		fmt.Fprintf(progress, "%s %6.1fs: %s\n", m.Name, r.since().Seconds(), fmt.Sprintf(format, args...))
	}
	if err := os.MkdirAll(r.logs, 0o755); err != nil {
		rep.Error = err.Error()
		return rep
	}
	stored, totals, notInjected, err := r.do(ctx, rand.New(rand.NewPCG(seed, seed^0x6e656d65736973)))
	r.mu.Lock()
	hist, violations := r.hist, r.violations
	r.mu.Unlock()
	// A run that could not be carried out to the end is not checked: what
	// it read of the store, if anything, is no verdict.
	var v Verdict
	if err == nil {
		v = Check(hist, stored, totals, m.Reads)
	} else {
		rep.Error = err.Error()
		v.Sent, v.Created, v.Refused = tally(hist.Ops)
	}
	rep.fill(hist, v, violations, notInjected)
	if err := r.write(dir, hist, &rep); err != nil && rep.Error == "" {
		rep.Error = err.Error()
	}
	return rep
}

// do carries the run out and returns what the store and the API hold
// after it, and the fault kinds the schedule never reached.
func (r *run) do(ctx context.Context, rng *rand.Rand) (Stored, Totals, []string, error) {
	c, m := r.c, r.m
	var cleanups []func()
	defer func() {
		for _, f := range slices.Backward(cleanups) {
			f()
		}
	}()
	e := env{rabbitmqScript: c.RabbitMQScript, skiapi: c.Skiapi, logs: r.logs, say: r.say}
	var backends []*started
	for _, b := range []struct {
		what  string
		start backend
	}{{"the queue's", m.Queue}, {"the store's", m.Store}} {
		r.say("starting %s servers", b.what)
		s, err := b.start(ctx, e)
		if err != nil {
			return nil, Totals{}, nil, err
		}
		backends = append(backends, s)
		cleanups = append(cleanups, func() {
			if err := s.stop(r.logs); err != nil {
				r.say("%v", err)
			}
		})
	}
	queue, store := backends[0], backends[1]
	environ := slices.Concat(queue.environ, store.environ)
	for _, args := range append(slices.Clone(queue.prepare), store.prepare...) {
		pctx, cancel := context.WithTimeout(ctx, c.Deadline)
		cmd := exec.CommandContext(pctx, c.Skiapi, args...)
		cmd.Env = append(serviceEnv(), environ...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return nil, Totals{}, nil, fmt.Errorf("skiapi %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}

	toxi := proxies()
	var links []*link
	cleanups = append(cleanups, func() {
		for _, l := range links {
			l.proxy.Stop()
		}
	})
	roles := []string{"all"}
	if m.Split {
		roles = []string{"api", "consumer"}
	}
	supervise, stopSupervising := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSupervising()
	var procs []*process
	supervised := map[*process]chan error{}
	// However the run ends, the supervisors stop and then their processes.
	stopped := false
	stopAll := func() {
		if stopped {
			return
		}
		stopped = true
		stopSupervising()
		for _, p := range procs {
			if err := <-supervised[p]; err != nil {
				r.say("%v", err)
			}
			if ok, _ := p.terminate(stopBudget); !ok {
				r.violation(Violation{Kind: Hang, What: p.name, Detail: fmt.Sprintf("still running %s after the SIGTERM that ended the run; killed", stopBudget)})
			}
		}
	}
	defer stopAll()
	for _, role := range roles {
		var flags []string
		for _, b := range backends {
			addrs := make([]string, len(b.servers))
			for i, s := range b.servers {
				l, err := newLink(toxi, role+"→"+s.name(), s.addr())
				if err != nil {
					return nil, Totals{}, nil, err
				}
				links = append(links, l)
				addrs[i] = l.addr()
			}
			flags = append(flags, b.flags(addrs)...)
		}
		flags = append(append(flags, "--role", role, "--shutdown-timeout", shutdownTimeout.String()), c.ServiceFlags...)
		f, err := os.Create(filepath.Join(r.logs, role+".log"))
		if err != nil {
			return nil, Totals{}, nil, err
		}
		cleanups = append(cleanups, func() { f.Close() })
		p := newProcess(role, c.Skiapi, flags, environ, c.RestartDelay, f, r.since, r.exit)
		procs = append(procs, p)
		done := make(chan error, 1)
		supervised[p] = done
		go func() { done <- p.supervise(supervise) }()
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	r.say("starting %s", strings.Join(roles, " and "))
	if err := r.waitReady(ctx, client, procs); err != nil {
		return nil, Totals{}, nil, fmt.Errorf("the processes did not start: %w", err)
	}

	var servers []server
	for _, b := range backends {
		servers = append(servers, b.servers...)
	}
	var kinds []kind
	kinds = append(kinds, processKinds(procs, c.Deadline, stopBudget, r.violation)...)
	kinds = append(kinds, linkKinds(links)...)
	kinds = append(kinds, restartKinds(servers)...)
	for _, b := range backends {
		kinds = append(kinds, b.kinds...)
	}
	seed := rng.Uint64()
	// The load runs for Duration, and on, up to three times as long, while
	// a kind of fault the mode has is still to be injected (a broker node
	// slow to restart on a busy machine holds the one fault a draw allows):
	// every run injects every kind, then ends with a quiet tail of load
	// after its last fault.
	stopLoad := make(chan struct{})
	l := load{Rate: c.Rate, Count: int(c.Rate * 3 * c.Duration.Seconds()), GetEvery: c.GetEvery, Skiers: c.Skiers, FirstSkier: 1000, Seed: seed, Timeout: c.RequestTimeout, Stop: stopLoad}
	start := time.Now()
	end := start.Add(c.Duration)
	warm := min(5*time.Second, c.Duration/10)
	tail := max(5*time.Second, c.Duration/6)
	quiet := end.Add(-tail)
	r.say("load: %.0f requests/s for %s (up to %s until every kind of fault is injected); faults from %s", c.Rate, c.Duration, 3*c.Duration, kindNames(kinds))
	var notInjected []string
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		defer func() {
			sleep(ctx, max(time.Until(end), tail)) // the quiet tail, and at least the Duration
			close(stopLoad)
		}()
		sleep(ctx, warm)
		p := plan{kinds: kinds, min: c.FaultMin, max: c.FaultMax, gap: c.FaultGap}
		notInjected = p.schedule(ctx, rng, quiet, start.Add(3*c.Duration).Add(-tail), func(f Fault, from, to time.Time, err error) {
			f.Start, f.End = from.Sub(r.zero), to.Sub(r.zero)
			if err != nil {
				f.Err = err.Error()
			}
			r.mu.Lock()
			r.hist.Faults = append(r.hist.Faults, f)
			r.mu.Unlock()
			r.say("fault %s %s (%s) from %.1fs to %.1fs%s", f.Kind, f.Target, f.Detail, f.Start.Seconds(), f.End.Seconds(), map[bool]string{true: ": " + f.Err}[f.Err != ""])
		})
	}()
	ops := l.run(ctx, procs[0].url, r.zero)
	r.say("load done: %d requests sent; waiting for the faults to end", len(ops))
	<-scheduled
	r.mu.Lock()
	r.hist.Ops = ops
	r.mu.Unlock()
	if len(notInjected) > 0 {
		r.say("the load ended before these fault kinds were injected: %s", strings.Join(notInjected, ", "))
	}
	if ctx.Err() != nil {
		return nil, Totals{}, notInjected, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}

	// After the faults: every process serving and ready again, the queue
	// empty, the store settled.
	cctx := context.WithoutCancel(ctx)
	if err := r.waitReady(cctx, client, procs); err != nil {
		r.violation(Violation{Kind: NotRecovered, What: strings.Join(roles, " and "), Detail: fmt.Sprintf("not ready %s after the faults ended: %v", c.Deadline, err)})
	}
	if err := r.waitDrained(cctx, client, procs, queue.drained); err != nil {
		r.violation(Violation{Kind: NotRecovered, What: "the queue", Detail: err.Error()})
	}
	stored, err := r.waitStored(cctx, store, ops)
	if err != nil {
		return nil, Totals{}, notInjected, err
	}
	totals, err := r.readTotals(cctx, client, procs[0].url(), ops)
	if err != nil {
		return stored, Totals{}, notInjected, err
	}
	r.say("checked: %d rides stored; stopping", len(stored))
	stopAll()
	for _, p := range procs {
		if crash := p.crashed(); crash != "" {
			r.violation(Violation{Kind: Crash, What: p.name, Detail: crash})
		}
	}
	return stored, totals, notInjected, nil
}

func kindNames(kinds []kind) string {
	var names []string
	for _, k := range kinds {
		names = append(names, fmt.Sprintf("%s (%d targets)", k.name, len(k.targets)))
	}
	return strings.Join(names, ", ")
}

// poll calls check until it returns "" or c.Deadline passes, then returns
// what it last said as an error.
func (r *run) poll(ctx context.Context, what string, check func(context.Context) string) error {
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		last := check(ctx)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: still %s after %s", what, last, r.c.Deadline)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// waitReady waits until every process serves and answers /readyz 200.
func (r *run) waitReady(ctx context.Context, client *http.Client, procs []*process) error {
	return r.poll(ctx, "every process ready", func(ctx context.Context) string {
		for _, p := range procs {
			if ok, _, err := p.ready(ctx, client); !ok {
				return fmt.Sprintf("%s not ready (%v)", p.name, err)
			}
		}
		return ""
	})
}

// waitDrained waits until every process is ready and the queue is empty:
// as the queue's server says it itself when it can (drained not nil: a
// process's /readyz then reports a sample that may predate the load's
// end, and may still count what has gone since), else as every process's
// /readyz reports it.
func (r *run) waitDrained(ctx context.Context, client *http.Client, procs []*process, drained func(context.Context) string) error {
	return r.poll(ctx, "the queue drained", func(ctx context.Context) string {
		for _, p := range procs {
			ok, depth, err := p.ready(ctx, client)
			if !ok || (depth > 0 && drained == nil) {
				return fmt.Sprintf("%s: ready %v, queue depth %d (%v)", p.name, ok, depth, err)
			}
		}
		if drained != nil {
			if holds := drained(ctx); holds != "" {
				return "the queue holds " + holds
			}
		}
		return ""
	})
}

// settle is how long the store's rides must stay the same, once they
// include every ride answered 201, before the run reads them for the
// check: a ride answered otherwise may still be on its way.
const settle = 2 * time.Second

// waitStored reads the store until it holds every ride answered 201 and
// has not changed for settle, or the deadline passes (then the check
// finds what is missing), and returns what it holds.
func (r *run) waitStored(ctx context.Context, store *started, ops []Op) (Stored, error) {
	var created []Op
	for _, o := range ops {
		if o.Kind == OpPost && o.Status == http.StatusCreated {
			created = append(created, o)
		}
	}
	var stored Stored
	var readErr error
	var same time.Time
	err := r.poll(ctx, "every ride answered 201 stored", func(ctx context.Context) string {
		got, err := store.rides(ctx)
		if err != nil {
			readErr = err
			return err.Error()
		}
		readErr = nil
		changed := !maps.Equal(got, stored)
		stored = got
		missing := 0
		for _, o := range created {
			if got[o.Ride] == 0 {
				missing++
			}
		}
		switch {
		case missing > 0:
			return fmt.Sprintf("%d of %d missing", missing, len(created))
		case changed:
			same = time.Now()
			return "changing"
		case time.Since(same) < settle:
			return "changing"
		}
		return ""
	})
	if readErr != nil {
		return nil, readErr
	}
	if err != nil {
		r.say("%v", err)
	}
	return stored, nil
}

// readTotals asks the API for the day vertical of every skier-day, the
// season total of every skier and the unique skiers of every resort-day
// the load posted rides for.
func (r *run) readTotals(ctx context.Context, client *http.Client, base string, ops []Op) (Totals, error) {
	t := Totals{Day: map[SkierDay]int64{}, Season: map[SkierSeason]int64{}, Skiers: map[ResortDay]int64{}}
	var asks []Op
	for _, o := range ops {
		if o.Kind != OpPost {
			continue
		}
		d, s := dayOf(o.Ride), seasonOf(o.Ride)
		if _, ok := t.Day[d]; !ok {
			t.Day[d] = 0
			asks = append(asks, Op{Kind: OpDay, Ride: o.Ride})
		}
		if _, ok := t.Season[s]; !ok {
			t.Season[s] = 0
			asks = append(asks, Op{Kind: OpSeason, Ride: o.Ride})
		}
		if _, ok := t.Skiers[resortDayOf(o.Ride)]; !ok {
			t.Skiers[resortDayOf(o.Ride)] = 0
			asks = append(asks, Op{Kind: OpSkiers, Ride: o.Ride})
		}
	}
	for _, a := range asks {
		var v int64
		err := r.poll(ctx, "read "+readKey(a), func(ctx context.Context) string {
			var err error
			if v, err = readTotal(ctx, client, base, a); err != nil {
				return err.Error()
			}
			return ""
		})
		if err != nil {
			return t, err
		}
		switch a.Kind {
		case OpDay:
			t.Day[dayOf(a.Ride)] = v
		case OpSeason:
			t.Season[seasonOf(a.Ride)] = v
		default:
			t.Skiers[resortDayOf(a.Ride)] = v
		}
	}
	return t, nil
}

// write saves the history, the report and the chart in dir.
func (r *run) write(dir string, h History, rep *Report) error {
	var errs []error
	save := func(name string, write func(io.Writer) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			err = write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		errs = append(errs, err)
	}
	save("history.jsonl", func(w io.Writer) error { return WriteHistory(w, h) })
	save("report.svg", func(w io.Writer) error { return WriteChart(w, rep.Mode, h) })
	rep.Files = []string{filepath.Join(dir, "report.json"), filepath.Join(dir, "report.svg"), filepath.Join(dir, "history.jsonl"), r.logs}
	save("report.json", rep.WriteJSON)
	return errors.Join(errs...)
}
