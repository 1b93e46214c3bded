package nemesis

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is a nemesis run: which modes, how long, how hard.
type Config struct {
	Skiapi string
	// Modes are the names of the modes to run (empty: every one).
	Modes    []string
	Duration time.Duration
	// Seed draws the faults and the rides (0: one from the clock, printed
	// so that the run can be repeated).
	Seed uint64
	// Rate is requests a second, POSTs and GETs together; one in GetEvery
	// is a GET.
	Rate     float64
	GetEvery int
	Skiers   int
	// FaultMin and FaultMax bound how long a fault lasts (how long a
	// process stays paused, a link partitioned, cut or slow, a server
	// down); FaultGap bounds the wait before the next is drawn.
	FaultMin, FaultMax, FaultGap time.Duration
	// RestartDelay is how long a process that exited waits before it is
	// started again (systemd's RestartSec).
	RestartDelay time.Duration
	// Deadline bounds each wait after a fault or after the load: a
	// process serving again, the queue draining, the store settling.
	Deadline       time.Duration
	RequestTimeout time.Duration
	RabbitMQScript string
	// ServiceFlags are given to every skiapi process after the run's own.
	ServiceFlags []string
	// Out is where each mode's history, report, chart and logs go (a
	// directory per mode).
	Out string
}

// DefaultConfig is `make soak`'s run: every mode for ten minutes.
func DefaultConfig() Config {
	return Config{
		Skiapi:         "skiapi",
		Duration:       10 * time.Minute,
		Rate:           200,
		GetEvery:       5,
		Skiers:         50,
		FaultMin:       time.Second,
		FaultMax:       5 * time.Second,
		FaultGap:       3 * time.Second,
		RestartDelay:   time.Second,
		Deadline:       2 * time.Minute,
		RequestTimeout: 15 * time.Second,
		RabbitMQScript: "scripts/rabbitmq-cluster.sh",
		Out:            "soak",
	}
}

// RegisterFlags binds c's fields to flags on fs.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Skiapi, "skiapi", c.Skiapi, "the skiapi executable the run starts (as every process of every mode)")
	fs.Func("modes", "comma-separated modes to run (default every one: "+strings.Join(ModeNames(), ",")+")", func(s string) error {
		c.Modes = nil
		for m := range strings.SplitSeq(s, ",") {
			if m = strings.TrimSpace(m); m != "" {
				c.Modes = append(c.Modes, m)
			}
		}
		return nil
	})
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long the load and the faults run, per mode")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "draws the faults (kinds, targets, order, durations, gaps) and the rides; 0: one from the clock, printed, so the run can be repeated")
	fs.Float64Var(&c.Rate, "rate", c.Rate, "requests a second, open loop, POSTs and GETs together")
	fs.IntVar(&c.GetEvery, "get-every", c.GetEvery, "one request in this many is a GET (day vertical or season total) of the skier just posted; 0: none")
	fs.IntVar(&c.Skiers, "skiers", c.Skiers, "skiers the rides go to")
	fs.DurationVar(&c.FaultMin, "fault-min", c.FaultMin, "shortest a fault lasts")
	fs.DurationVar(&c.FaultMax, "fault-max", c.FaultMax, "longest a fault lasts")
	fs.DurationVar(&c.FaultGap, "fault-gap", c.FaultGap, "longest wait before the next fault is drawn")
	fs.DurationVar(&c.RestartDelay, "restart-delay", c.RestartDelay, "how long a process that exited waits before it is started again (systemd's RestartSec)")
	fs.DurationVar(&c.Deadline, "deadline", c.Deadline, "how long a process gets to serve again after a kill, and the queue to drain after the load")
	fs.DurationVar(&c.RequestTimeout, "timeout", c.RequestTimeout, "the client's limit on one request")
	fs.StringVar(&c.RabbitMQScript, "rabbitmq-script", c.RabbitMQScript, "scripts/rabbitmq-cluster.sh, which runs the RabbitMQ nodes of the RabbitMQ modes")
	fs.Func("service-flags", "flags given to every skiapi process after the run's own, space-separated", func(s string) error {
		c.ServiceFlags = strings.Fields(s)
		return nil
	})
	fs.StringVar(&c.Out, "out", c.Out, "directory of the results: one directory per mode with history.jsonl, report.json, report.svg and the processes' and servers' logs")
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	for _, m := range c.Modes {
		if !slices.Contains(ModeNames(), m) {
			return fmt.Errorf("--modes: no mode %q; the modes are %s", m, strings.Join(ModeNames(), ", "))
		}
	}
	switch {
	case c.Duration <= 0:
		return errors.New("--duration must be positive")
	case c.Rate <= 0:
		return errors.New("--rate must be positive")
	case c.GetEvery == 1 || c.GetEvery < 0:
		return errors.New("--get-every must be 0 (no GETs) or at least 2 (a GET after each ride needs a ride before it)")
	case c.Skiers < 1:
		return errors.New("--skiers must be at least 1")
	case c.FaultMin <= 0 || c.FaultMax < c.FaultMin:
		return errors.New("--fault-min must be positive and at most --fault-max")
	case c.FaultGap < 0 || c.RestartDelay < 0:
		return errors.New("--fault-gap and --restart-delay cannot be negative")
	case c.Deadline <= 0 || c.RequestTimeout <= 0:
		return errors.New("--deadline and --timeout must be positive")
	case c.Out == "":
		return errors.New("--out: name a directory for the results")
	}
	return nil
}

// ModeNames are the modes' names, in order.
func ModeNames() []string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = m.Name
	}
	return names
}

// selected is the modes c runs, in the table's order.
func (c Config) selected() []Mode {
	var out []Mode
	for _, m := range Modes {
		if len(c.Modes) == 0 || slices.Contains(c.Modes, m.Name) {
			out = append(out, m)
		}
	}
	return out
}
