package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/domain"
)

// DefaultDatabaseURL is the local test database; each run makes its own
// schema in it.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Main is skibench: it parses args (without the program name), runs the
// benchmark and writes the report to stdout and progress to stderr. It
// returns the exit code: 0, 1 when a store's answers differ from the
// memory store's or a store fails, 2 for bad flags.
//
// `skibench plan` and `skibench chart` answer from reports saved by an
// earlier run's --save, with no run (planMain, chartMain).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "plan":
			return planMain(args[1:], stdout, stderr)
		case "chart":
			return chartMain(args[1:], stderr)
		}
	}
	fs := flag.NewFlagSet("skibench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ds := DefaultDataSet()
	var (
		stores     = fs.String("stores", strings.Join(StoreNames, ","), "comma-separated stores to compare: "+strings.Join(StoreNames, ", "))
		dynRides   = fs.Int("dynamo-rides", 0, "rides loaded into the dynamo-* stores (the first N of the data set); 0: --rides")
		queriesPer = fs.Int("queries", 200, "queries of each kind")
		batch      = fs.Int("batch-size", 500, "rides per AddRides call")
		writers    = fs.Int("writers", 4, "AddRides calls in flight")
		jsonOut    = fs.Bool("json", false, "print the report as JSON instead of Markdown")
		chart      = fs.String("chart", "", "write the lab's SVG chart (units, hot key, ceiling, monthly cost at the --peak-rides/--rides-per-month/--queries-per-month traffic) to this file")
		save       = fs.String("save", "", "save the report as JSON to this file, for skibench plan and skibench chart")
		timeout    = fs.Duration("timeout", 2*time.Hour, "give up after this long")
		env        = Env{}
		traffic    = trafficFlags(fs)
	)
	fs.Uint64Var(&ds.Seed, "seed", ds.Seed, "seed of the data set and the query mix")
	fs.IntVar(&ds.Rides, "rides", ds.Rides, "rides in the data set")
	fs.IntVar(&ds.Days, "days", ds.Days, "days 1..N of the season the rides fall on")
	var resorts int
	fs.IntVar(&resorts, "resorts", int(ds.Resorts), "resort ids 1..N (1: a burst at one resort)")
	var skiers int
	fs.IntVar(&skiers, "skiers", int(ds.Skiers), "skier ids 1..N")
	fs.StringVar(&env.DatabaseURL, "database-url", DefaultDatabaseURL, "PostgreSQL for the postgres store; the run uses a fresh schema")
	fs.StringVar(&env.DynamoEndpoint, "dynamo-endpoint", "", "a running dynalite (each store puts its own strictness proxy in front); empty: start one from test/dynamodb for the run")
	fs.StringVar(&env.DynamoRegion, "dynamo-region", "us-west-2", "DynamoDB region")
	fs.IntVar(&env.DynamoWriteConcurrency, "dynamo-write-concurrency", 8, "DynamoDB write requests in flight per AddRides call")
	fs.BoolVar(&env.Keep, "keep", false, "keep the postgres schema and the DynamoDB tables after the run")
	fs.BoolVar(&env.Throughput, "throughput-model", false, "throttle every DynamoDB partition key value at AWS's 1,000 WCU/s and 3,000 RCU/s (adapters/dynamo/dynamosim)")
	fs.Float64Var(&env.PartitionWriteUnits, "partition-write-units", 1000, "with --throughput-model: write units a second per partition key value (lower it to stand for a burst faster than dynalite can go)")
	fs.StringVar(&ds.Workload, "workload", ds.Workload, "sparse (rides drawn independently) or dense (each skier-day's rides in time order, interleaved)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ds.Skiers, ds.Resorts = int32(skiers), int32(resorts)
	tr, err := traffic()
	if err != nil {
		fmt.Fprintf(stderr, "skibench: %v\n", err)
		return 2
	}
	names := strings.Split(*stores, ",")
	for _, n := range names {
		if !slices.Contains(StoreNames, n) {
			fmt.Fprintf(stderr, "skibench: unknown store %q (known: %s)\n", n, strings.Join(StoreNames, ", "))
			return 2
		}
	}
	if ds.Workload != WorkloadSparse && ds.Workload != WorkloadDense {
		fmt.Fprintf(stderr, "skibench: --workload must be %s or %s\n", WorkloadSparse, WorkloadDense)
		return 2
	}
	if ds.Rides <= 0 || ds.Days < domain.MinDay || ds.Days > domain.MaxDay || ds.Skiers < 1 || ds.Resorts < 1 || *batch < 1 || *writers < 1 || *queriesPer < 1 {
		fmt.Fprintln(stderr, "skibench: --rides, --days (1..366), --skiers, --resorts, --batch-size, --writers and --queries must be positive")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	env.RunID = NewRunID()

	report, err := run(ctx, &env, ds, names, *dynRides, *queriesPer, LoadOptions{BatchSize: *batch, Writers: *writers}, stderr)
	report.Command = "skibench " + strings.Join(args, " ")
	if report.Results != nil {
		if *jsonOut {
			if err := report.WriteJSON(stdout); err != nil {
				fmt.Fprintf(stderr, "skibench: %v\n", err)
				return 1
			}
		} else {
			report.WriteMarkdown(stdout)
		}
		if *save != "" {
			if err := saveReport(*save, report); err != nil {
				fmt.Fprintf(stderr, "skibench: %v\n", err)
				return 1
			}
		}
		if *chart != "" {
			if err := writeChart(*chart, []Report{report}, tr); err != nil {
				fmt.Fprintf(stderr, "skibench: %v\n", err)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "skibench: %v\n", err)
		return 1
	}
	if n := report.Mismatches(); n > 0 {
		fmt.Fprintf(stderr, "skibench: %d answers differ from the memory store's\n", n)
		return 1
	}
	fmt.Fprintln(stderr, "skibench: every store gave the memory store's answers")
	return 0
}

func writeChart(path string, rs []Report, t Traffic) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	WriteLabSVG(f, rs, t)
	if err := f.Close(); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}

func saveReport(path string, r Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	werr := r.WriteJSON(f)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	return nil
}

// chartMain is `skibench chart`: the lab's chart of saved reports (one per
// workload) at a stated traffic.
func chartMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("skibench chart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	units := fs.String("units", "", "reports saved by skibench --save FILE, comma-separated (one per workload)")
	out := fs.String("out", "", "the SVG file to write")
	traffic := trafficFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	t, err := traffic()
	if err == nil && (*units == "" || *out == "") {
		err = errors.New("--units and --out are required")
	}
	if err != nil {
		fmt.Fprintf(stderr, "skibench chart: %v\n", err)
		return 2
	}
	rs, err := ReadReports(*units)
	if err == nil {
		err = writeChart(*out, rs, t)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skibench chart: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, env *Env, ds DataSet, names []string, dynRides, queriesPer int, load LoadOptions, log io.Writer) (Report, error) {
	report := Report{DataSet: ds, QueriesPer: queriesPer,
		Load: LoadOpts{BatchSize: load.BatchSize, Writers: load.Writers, DynamoWriteConcurrency: env.DynamoWriteConcurrency}}
	rides, err := ds.Generate()
	if err != nil {
		return report, err
	}
	report.Shape = ShapeOf(rides)
	loadSize := func(name string) int {
		if strings.HasPrefix(name, "dynamo-") && dynRides > 0 {
			return min(dynRides, len(rides))
		}
		return len(rides)
	}
	// The queries are about rides every store has.
	smallest := len(rides)
	for _, n := range names {
		smallest = min(smallest, loadSize(n))
	}
	queries := ds.Queries(rides[:smallest], queriesPer)
	refs := map[int][]string{}
	for _, n := range names {
		size := loadSize(n)
		if _, ok := refs[size]; ok {
			continue
		}
		if refs[size], err = Reference(ctx, memory.NewRideStore(), rides[:size], queries); err != nil {
			return report, err
		}
	}
	if env.DynamoEndpoint == "" && slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "dynamo-") }) {
		stop, err := startDynalite(env)
		if err != nil {
			return report, err
		}
		defer stop()
		fmt.Fprintf(log, "skibench: started dynalite at %s\n", env.DynamoEndpoint)
	}
	var errs []error
	for _, name := range names {
		size := loadSize(name)
		fmt.Fprintf(log, "skibench: %s: loading %d rides, then %d queries\n", name, size, len(queries))
		res, err := runOne(ctx, env, name, rides[:size], queries, refs[size], load)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(log, "skibench: %s: %.0f rides/s, %d mismatches\n", name, res.RidesPerSec, res.Mismatches)
		report.Results = append(report.Results, res)
	}
	return report, errors.Join(errs...)
}

func runOne(ctx context.Context, env *Env, name string, rides []domain.LiftRide, queries []Query, want []string, load LoadOptions) (res Result, err error) {
	t, err := OpenTarget(ctx, env, name)
	if err != nil {
		return res, err
	}
	defer func() {
		// Clean up even when the run's context has ended.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := t.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("%s: clean up: %w", name, cerr))
		}
	}()
	return Run(ctx, t, rides, queries, want, load)
}
