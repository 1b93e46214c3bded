package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// trafficFlags registers the flags that state a Traffic.
func trafficFlags(fs *flag.FlagSet) func() (Traffic, error) {
	peak := fs.String("peak-rides", "5000", "rides a second at the peak (5000, 5k)")
	month := fs.String("rides-per-month", "100M", "rides a month (100M)")
	mix := fs.String("queries-per-month", "all=1M", "queries a month of each kind: kind=count,... (kinds: "+strings.Join(Kinds, ", ")+"; all=N for every kind)")
	peakQ := fs.String("peak-queries", "0", "queries a second at the peak, in the month's mix; 0: the month's average query rate × the rides' peak-to-average ratio")
	return func() (Traffic, error) {
		var t Traffic
		var err error
		if t.PeakRides, err = ParseCount(*peak); err != nil {
			return t, fmt.Errorf("--peak-rides: %w", err)
		}
		if t.RidesPerMonth, err = ParseCount(*month); err != nil {
			return t, fmt.Errorf("--rides-per-month: %w", err)
		}
		if t.QueriesPerMonth, err = ParseQueryMix(*mix); err != nil {
			return t, fmt.Errorf("--queries-per-month: %w", err)
		}
		if t.PeakQueries, err = ParseCount(*peakQ); err != nil {
			return t, fmt.Errorf("--peak-queries: %w", err)
		}
		if t.PeakRides <= 0 || t.RidesPerMonth <= 0 {
			return t, fmt.Errorf("--peak-rides and --rides-per-month must be positive")
		}
		if t.avgRides() > t.PeakRides {
			return t, fmt.Errorf("--rides-per-month %s averages %.0f rides/s, above --peak-rides %s", *month, t.avgRides(), *peak)
		}
		return t, nil
	}
}

// ReadReports reads the reports saved by --save (or printed by --json),
// comma-separated paths, and merges those of one data set (runs of one
// store each, say) into one report, in the order first read.
func ReadReports(paths string) ([]Report, error) {
	var out []Report
	for _, p := range strings.Split(paths, ",") {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(r.Results) == 0 {
			return nil, fmt.Errorf("%s: no results", p)
		}
		merged := false
		for i := range out {
			if out[i].DataSet == r.DataSet && out[i].QueriesPer == r.QueriesPer {
				out[i].Results = append(out[i].Results, r.Results...)
				out[i].Command += "; " + r.Command
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, r)
		}
	}
	return out, nil
}

// planMain is `skibench plan`: it prices the models of saved reports for a
// traffic, with no run.
func planMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skibench plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	units := fs.String("units", "", "reports saved by skibench --save FILE, comma-separated (one per workload)")
	pgRide := fs.Duration("pg-cpu-per-ride", 0, "PostgreSQL server CPU a ride (e.g. 27us); 0: the saved run's measurement")
	pgQuery := fs.Duration("pg-cpu-per-query", 0, "PostgreSQL server CPU a query; 0: the saved run's measurement")
	traffic := trafficFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	t, err := traffic()
	if err == nil && *units == "" {
		err = fmt.Errorf("--units is required: save a run with skibench --save FILE")
	}
	if err != nil {
		fmt.Fprintf(stderr, "skibench plan: %v\n", err)
		return 2
	}
	reports, err := ReadReports(*units)
	if err != nil {
		fmt.Fprintf(stderr, "skibench plan: %v\n", err)
		return 1
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		WritePlan(stdout, r, t, Plan(r, t, *pgRide, *pgQuery))
	}
	return 0
}

func usd(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "—"
	case f >= 1000:
		return fmt.Sprintf("$%s", thousands(f))
	default:
		return fmt.Sprintf("$%.2f", f)
	}
}

// thousands writes 12345.6 as 12,346.
func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func rate(f float64) string {
	if math.IsInf(f, 1) {
		return "no limit"
	}
	return thousands(f) + " rides/s"
}

// WritePlan writes the plans of one report for t as Markdown.
func WritePlan(w io.Writer, r Report, t Traffic, plans []ModelPlan) {
	fmt.Fprintf(w, "Traffic: %s (%.1f%% of the peak on average).\n", t, 100*t.avgRides()/t.PeakRides)
	shape := "its shape not recorded"
	if r.Shape.Rides > 0 {
		shape = r.Shape.String()
	}
	fmt.Fprintf(w, "Units measured by `%s` (workload %s: %s).\n\n", r.Command, r.DataSet.Workload, shape)
	fmt.Fprintf(w, "| model | on demand, $ a month (writes + reads) | provisioned for the peak, $ a month | cheaper mode | takes up to | what limits it | a new on-demand table takes at once |\n")
	fmt.Fprintf(w, "|---|---:|---:|---|---:|---|---:|\n")
	for _, p := range plans {
		ceil, what := p.Ceiling()
		if p.Unpriced != "" {
			fmt.Fprintf(w, "| %s | — | — | not priced: %s | — | — | — |\n", p.Store, p.Unpriced)
			continue
		}
		if p.CPUPerRide > 0 {
			inst := "no listed instance"
			if p.Instance != "" {
				inst = fmt.Sprintf("RDS %s %s", p.Instance, usd(p.InstanceUSD))
			}
			perQuery := p.CPUPerQuery.Round(100 * time.Nanosecond).String()
			if p.QueryCPUNot != "" {
				perQuery = "no CPU (" + p.QueryCPUNot + ": the queries left out)"
			}
			fmt.Fprintf(w, "| %s | — | — | %s (estimate: %.2g vCPU at the peak from %s a ride and %s a query of local server CPU, %.0f%% headroom) | %s | %s | — |\n",
				p.Store, inst, p.VCPUs, p.CPUPerRide.Round(100*time.Nanosecond), perQuery, 100*RDSHeadroom, rate(ceil), what)
			continue
		}
		mode := "on demand"
		if p.Provisioned < p.OnDemand() {
			mode = "provisioned"
		}
		fmt.Fprintf(w, "| %s | %s (%s + %s) | %s (%.0f WCU, %.0f RCU) | %s: %.1f%% average use, break-even %.1f%% | %s | %s | %s |\n",
			p.Store, usd(p.OnDemand()), usd(p.OnDemandWrites), usd(p.OnDemandReads), usd(p.Provisioned), p.ProvisionedWCU, p.ProvisionedRCU,
			mode, 100*p.Utilisation, 100*BreakEvenUtilisation(), rate(ceil), what, rate(p.Limits.NewTable))
	}
	if best, ok := Cheapest(plans, t); ok {
		how := "on demand"
		if best.CPUPerRide > 0 {
			how = "on RDS " + best.Instance + ", an estimate"
		} else if best.Provisioned < best.OnDemand() {
			how = "provisioned"
		}
		fmt.Fprintf(w, "\nCheapest that takes the peak: **%s**, %s a month (%s).\n", best.Store, usd(best.Monthly()), how)
	} else if slices.ContainsFunc(plans, func(p ModelPlan) bool { return p.Unpriced == "" }) {
		fmt.Fprintf(w, "\nNo model here takes a peak of %s rides/s: raise the table quota, shard the hot key or batch the peak.\n", count(t.PeakRides))
	} else {
		fmt.Fprintf(w, "\nNo model here is priced (the rows say why).\n")
	}
	fmt.Fprintf(w, "\nDynamoDB: us-east-1 list prices (on demand $%.3f a million write and $%.3f a million read units; provisioned $%.5f a WCU-hour and $%.5f an RCU-hour; "+
		"aws.amazon.com/dynamodb/pricing, after the November 2024 cut), provisioned capacity held at the peak all month, a month of 30 days; "+
		"limits: 1,000 WCU/s a partition key value (in the measured data set's mix of resorts and days), 40,000 WCU/s a table or index (default quota), "+
		"4,000 writes/s at once on a new on-demand table. PostgreSQL: RDS Single-AZ on-demand list prices, storage and I/O not included, "+
		"a vCPU of the instance counted as one core of the measuring machine. Storage, backups and transfer are not included.\n",
		onDemandWritePerMillion, onDemandReadPerMillion, provisionedWCUHour, provisionedRCUHour)
}
