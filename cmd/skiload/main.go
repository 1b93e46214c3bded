// Command skiload is the load client of the Ski Data API: it POSTs random
// lift rides in two phases of workers or open-loop at a fixed rate (--rate),
// drives the three GET test cases (--mode get, all), and reports
// throughput and latency. The logic lives in
// internal/loadgen; this main reads flags, wires signals and returns the
// exit code: 0 all good, 1 failures or lost rides, 2 bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/skidata/skidata/cmd/internal/cpuclock"
	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
	"github.com/skidata/skidata/cmd/skiload/internal/nemesis"
)

func main() {
	loadgen.ServeBaselineIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	if len(args) > 0 && args[0] == "sweep" {
		return sweep(ctx, args[1:], stdout, stderr, tty)
	}
	if len(args) > 0 && args[0] == "nemesis" {
		return runNemesis(ctx, args[1:], stdout, stderr, tty)
	}
	cfg := loadgen.DefaultConfig()
	o, code, ok := parse("skiload", runUsage, cfg.RegisterFlags, func() error { return cfg.Validate() }, args, stderr, tty)
	if !ok {
		return code
	}
	return o.profiled(stderr, func() int { return loadgen.Run(ctx, cfg, stdout, o.progress) })
}

// options are the flags every skiload command has.
type options struct {
	progress   *loadgen.Progress
	cpuProfile string
}

// profiled runs f, writing a CPU profile of this process to o.cpuProfile
// while it runs when that is set.
func (o options) profiled(stderr io.Writer, f func() int) int {
	if o.cpuProfile == "" {
		return f()
	}
	file, err := os.Create(o.cpuProfile)
	if err == nil {
		if err = pprof.StartCPUProfile(file); err != nil {
			file.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiload: --cpu-profile: %v\n", err)
		return loadgen.ExitUsage
	}
	code := f()
	pprof.StopCPUProfile()
	if err := file.Close(); err != nil {
		fmt.Fprintf(stderr, "skiload: --cpu-profile: %v\n", err)
		return max(code, loadgen.ExitFailed)
	}
	return code
}

// parse parses args into the flags register binds and validates them; when
// the command should not run, it returns its exit code (0 after --help, 2
// for bad usage, said on stderr). Otherwise it returns the options every
// command has: the progress reporter (silent with --quiet) and where to
// write a CPU profile. --help prints usage, then the flags.
func parse(name, usage string, register func(*flag.FlagSet), validate func() error, args []string, stderr io.Writer, tty bool) (options, int, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	profile := fs.String("cpu-profile", "", "write a CPU profile of skiload itself to this file while it runs (go tool pprof reads it): where the load client's own CPU goes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, loadgen.ExitOK, false
		}
		return options{}, loadgen.ExitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return options{}, loadgen.ExitUsage, false
	}
	if err := validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return options{}, loadgen.ExitUsage, false
	}
	p := &loadgen.Progress{Out: stderr, TTY: tty, Every: 2 * time.Second}
	if *quiet {
		p.Out = nil
	}
	return options{progress: p, cpuProfile: *profile}, 0, true
}

// sweep runs `skiload sweep`: the batching study.
func sweep(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	cfg := loadgen.DefaultSweepConfig()
	o, code, ok := parse("skiload sweep", sweepUsage, cfg.RegisterFlags, func() error { return cfg.Validate() }, args, stderr, tty)
	if !ok {
		return code
	}
	return o.profiled(stderr, func() int { return loadgen.RunSweep(ctx, cfg, stdout, o.progress) })
}

// runNemesis runs `skiload nemesis`: the service under random faults,
// every ride accounted for afterwards.
func runNemesis(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	cfg := nemesis.DefaultConfig()
	o, code, ok := parse("skiload nemesis", nemesisUsage, cfg.RegisterFlags, func() error { return cfg.Validate() }, args, stderr, tty)
	if !ok {
		return code
	}
	progress := io.Writer(stderr)
	if o.progress.Out == nil { // --quiet
		progress = io.Discard
	}
	return o.profiled(stderr, func() int { return nemesis.Run(ctx, cfg, stdout, progress) })
}

// runUsage is what `skiload --help` prints before the flags.
var runUsage = fmt.Sprintf(`Usage: skiload [flags]

POSTs random lift rides to the Ski Data API: --phase1-workers start at once;
when the first of them finishes, --phase2-workers join (by default 200,000
rides). --rides N is a simple load instead: N rides from 32 workers (fewer
below 32 rides) sharing them in one phase, and N GETs a GET case from
--get-workers workers; it replaces the four --phase* flags and
--get-requests. Prints successes, failures, throughput, latency
percentiles, retries and status counts.
--mode get runs the three GET test cases instead, asking about the skiers
and days the POST load with the same --seed and --rides (or --phase*
flags) created, and only those (so the answers are 200s); --mode all runs
the POST load, waits for the queue to drain, then the GETs. --rate N makes
every case open-loop: N requests a second at fixed times whatever the
answers do, latency from each request's intended start (corrected for
coordinated omission) in an HDR histogram. --baseline runs every case
against a trivial net/http server too (skiload starts it as a process of
its own), for this machine's ceiling; a closed-loop pair of runs is called
a share of that ceiling only when each lasted %s or more. Every case
reports the CPU each request cost the service (from its /metrics) and the
baseline, and any process --cpu-of or --cpu-metrics names; measure it open
loop at a rate below saturation. /proc counts CPU in %s ticks, so a
case whose CPU difference is under %d ticks (a figure not within %.0f%%)
prints "n/a (too short to measure: ...)" instead of a number. --verify
checks afterwards that the store holds every ride answered 201 (exact
only on a fresh service: rides already there show as "extra", never as
lost). Exit 0 all good, 1 failures, requests not sent or lost rides, 2
bad usage.

Flags:
`, loadgen.MinCeilingWall, cpuclock.Tick, cpuclock.MinTicks, 100.0/cpuclock.MinTicks)

// sweepUsage is what `skiload sweep --help` prints before the flags.
const sweepUsage = `Usage: skiload sweep --vary flag=v1,v2 [--vary flag=v1,v2 ...] [flags]

A batching study. For every combination of the values --vary gives
skiapi's flags, starts skiapi afresh (with --service-flags; the API and
the consumer as two processes unless --split=false), sends the same
open-loop POST load, waits for the queue to drain, and reports rides/s,
p50 and p99 of the POST, CPU µs per ride in every process (and --cpu-of
programs), messages published (broker confirms) and store writes per
ride; --json and --chart write them.

Example (RabbitMQ quorum + PostgreSQL):
  skiload sweep --skiapi bin/skiapi --cpu-of beam.smp,postgres \
    --service-flags "--store postgres --database-url postgres://postgres@127.0.0.1:5432/test --queue rabbitmq" \
    --vary batch-size=100,500,2000 --vary batch-linger=5ms,20ms \
    --vary publish-linger=0s,5ms --chart /tmp/sweep.svg --json /tmp/sweep.json

Flags:
`

// nemesisUsage is what `skiload nemesis --help` prints before the flags.
const nemesisUsage = `Usage: skiload nemesis [flags]

Runs the service under random faults, mode after mode (--modes), and
accounts for every ride afterwards (docs/reliability.md). For each mode it
starts servers of its own (a PostgreSQL in a temporary directory, RabbitMQ
nodes through --rabbitmq-script, the SQS and DynamoDB stand-ins the tests
use; never the machine's), an in-process
toxiproxy proxy on every link from a skiapi process to a server, and
--skiapi as the mode's processes, started again whenever they exit. For
--duration it sends --rate requests a second (POSTs of unique, numbered
rides; one in --get-every a GET of the same skier) while it injects
faults drawn from --seed, one or two at a time: kill, term and pause of
each process; partition, cut and latency of each link; a restart of the
database and of a broker node; SQS throttling and delivering messages
twice. Then it waits for the processes to be
ready and the queue to drain, reads the store's rows and the API's
totals, and checks: every ride answered 201 stored exactly once, no
other ride stored twice, nothing stored that was never sent, every total
equal to the stored rides' sum; in inproc-postgres, where a 201 means
committed, every read during the run counting the rides answered 201
before it and no lower than a read that ended before it. Each mode's history.jsonl, report.json,
report.svg and logs go to --out/<mode>; each mode ends with the line
"MODE lost=N duplicated=N phantom=N faults=N" ("MODE not run: WHY" when
its servers could not be started). Run as root (as make soak
is) it starts PostgreSQL as the postgres user. Exit 0 when every mode
held, 1 on any violation or a run that could not be carried out, 2 bad
usage.

Flags:
`
