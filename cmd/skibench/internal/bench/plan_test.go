package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// adoptedLike is a DynamoDB result with round numbers: 2 write units a
// ride (1 on the table, 1 on its index), the hottest key taking 0.1 of
// them, and per-kind read units.
var adoptedLike = Result{
	Store: "dynamo-adopted", Dynamo: true, Rides: 1000, WriteCUPerRide: 2, HotUnitsPerRide: 0.1, HotShare: 0.05, HotKey: "skierTable/resort-index 8",
	WriteUnitsBy:    map[string]float64{"skierTable": 1, "skierTable/resort-index": 1},
	ReadUnitsByKind: map[string]float64{KindUniqueSkiers: 25, KindDayVertical: 0.5, KindSeasonVertical: 4, KindSkierDays: 2, KindDayRides: 0.5},
}

var handTraffic = Traffic{PeakRides: 5000, RidesPerMonth: 100e6, QueriesPerMonth: map[string]float64{KindUniqueSkiers: 1e6, KindDayRides: 10e6}}

// TestPlanMatchesTheHandComputation checks one DynamoDB model and the
// PostgreSQL sizing against this computation by hand, for a peak of 5,000
// rides/s, 100M rides a month, 1M UniqueSkiers and 10M SkierDayRides
// queries a month (a month: 30 days = 2,592,000 s):
//
//	on demand, writes: 100M rides × 2 units = 200M units × $0.625/M = $125.00
//	on demand, reads:  1M × 25 + 10M × 0.5 = 30M units × $0.125/M   = $3.75
//	on demand:                                                       $128.75
//	average rate: 100M / 2,592,000 s = 38.58 rides/s: 0.772 % of the peak
//	provisioned WCU: 5,000 rides/s × 2 = 10,000
//	peak reads: the month's 30M units at the rides' peak-to-average
//	  ratio: 30M × 5,000 / 100M = 1,500 RCU (550 queries/s)
//	provisioned: (10,000 × $0.00065 + 1,500 × $0.00013) × 720 h
//	  = (6.5 + 0.195) × 720 = $4,820.40 → on demand is cheaper
//	  (0.77 % average use, against a break-even of 28.9 %)
//	hottest key: 1,000 WCU/s / 0.1 units a ride = 10,000 rides/s
//	quota: busiest table 1 unit a ride → 40,000 / 1 = 40,000 rides/s
//	ceiling: 10,000 rides/s, set by the hottest key; new table 4,000
//
//	PostgreSQL at 27 µs a ride and 100 µs a query:
//	  (5,000 × 27 µs + 550 × 100 µs) / 0.7 = (0.135 + 0.055) / 0.7
//	  = 0.2714 vCPU → db.t4g.medium (0.4 vCPU sustained, 2 × 20 %)
//	  at $0.065 × 720 h = $46.80; it takes 5,000 × 0.4 / 0.2714
//	  = 7,368 rides/s; so PostgreSQL is the cheapest that takes the peak.
func TestPlanMatchesTheHandComputation(t *testing.T) {
	p := PlanDynamo(adoptedLike, handTraffic)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"on-demand writes $", p.OnDemandWrites, 125},
		{"on-demand reads $", p.OnDemandReads, 3.75},
		{"on demand $", p.OnDemand(), 128.75},
		{"provisioned WCU", p.ProvisionedWCU, 10000},
		{"provisioned RCU", p.ProvisionedRCU, 1500},
		{"provisioned $", p.Provisioned, 4820.40},
		{"utilisation", p.Utilisation, 100e6 / 2592000.0 / 5000},
		{"break-even", BreakEvenUtilisation(), 0.28889},
		{"hot-key limit", p.Limits.HotKey, 10000},
		{"quota limit", p.Limits.Quota, 40000},
		{"new-table limit", p.Limits.NewTable, 4000},
		{"monthly (cheaper mode)", p.Monthly(), 128.75},
	} {
		if math.Abs(c.got-c.want) > 1e-4*math.Max(1, c.want) {
			t.Errorf("%s = %v; want %v", c.name, c.got, c.want)
		}
	}
	if ceil, what := p.Ceiling(); ceil != 10000 || !strings.Contains(what, "hottest key") {
		t.Errorf("ceiling = %v (%s); want 10,000 set by the hottest key", ceil, what)
	}

	pg := PlanPostgres("postgres", 27*time.Microsecond, 100*time.Microsecond, handTraffic)
	if pg.Instance != "db.t4g.medium" || math.Abs(pg.InstanceUSD-46.80) > 1e-9 || math.Abs(pg.VCPUs-0.19/0.7) > 1e-9 || math.Abs(pg.InstancePeak-5000*0.4/(0.19/0.7)) > 1e-6 {
		t.Errorf("postgres: %s $%v, %v vCPU, takes %v rides/s; want db.t4g.medium $46.80, 0.2714 vCPU, 7,368 rides/s", pg.Instance, pg.InstanceUSD, pg.VCPUs, pg.InstancePeak)
	}
	if best, ok := Cheapest([]ModelPlan{p, pg}, handTraffic); !ok || best.Store != "postgres" {
		t.Errorf("cheapest = %s, %v; want postgres", best.Store, ok)
	}
	// Past the hottest key's limit the model no longer takes the peak.
	if _, ok := Cheapest([]ModelPlan{PlanDynamo(adoptedLike, Traffic{PeakRides: 20000, RidesPerMonth: 100e6})}, handTraffic); !ok {
		t.Error("a plan made for a 20,000 rides/s peak was judged against the 5,000 one")
	}
	if _, ok := Cheapest([]ModelPlan{p}, Traffic{PeakRides: 20000, RidesPerMonth: 100e6}); ok {
		t.Error("a model with a 10,000 rides/s ceiling was chosen for a 20,000 rides/s peak")
	}
}

// The table quota binds when no key is hot: a model with two tables is
// limited by the busier one, not by the sum.
func TestCeilingIsTheBusiestTablesQuotaWhenNoKeyIsHot(t *testing.T) {
	sharded := Result{Store: "dynamo-sharded", Dynamo: true, WriteCUPerRide: 2, HotUnitsPerRide: 0.0008,
		WriteUnitsBy: map[string]float64{"skierTable": 1, "skierDayMarkerTable": 0.99}}
	l, _ := LimitsOf(sharded)
	ceil, what := l.Ceiling()
	if ceil != 40000 || l.QuotaTable != "skierTable" || !strings.Contains(what, "quota") || l.HotKey != 1.25e6 {
		t.Errorf("ceiling %v (%s), hot key %v; want 40,000 by skierTable's quota, hot key 1,250,000", ceil, what, l.HotKey)
	}
}

func TestParseTraffic(t *testing.T) {
	for in, want := range map[string]float64{"5000": 5000, "5k": 5000, "100M": 100e6, "1.5G": 1.5e9} {
		if got, err := ParseCount(in); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseCount("lots"); err == nil {
		t.Error(`ParseCount("lots") accepted`)
	}
	mix, err := ParseQueryMix("all=1M,UniqueSkiers=10k")
	if err != nil || mix[KindUniqueSkiers] != 1e4 || mix[KindDayRides] != 1e6 || len(mix) != len(Kinds) {
		t.Errorf("ParseQueryMix = %v, %v", mix, err)
	}
	if _, err := ParseQueryMix("Bogus=1"); err == nil {
		t.Error("unknown query kind accepted")
	}
}

// skibench plan reads a saved report and prints every model's plan and
// the cheapest, with no run.
func TestPlanCommandAnswersFromASavedReport(t *testing.T) {
	dir := t.TempDir()
	r := Report{Command: "skibench --save units.json", DataSet: DefaultDataSet(), Results: []Result{
		{Store: "memory", Rides: 1000},
		adoptedLike,
		{Store: "postgres", Rides: 1000, ServerCPUPerRideUS: 27, ServerCPUPerQueryUS: 100},
	}}
	// Saved as two runs of one data set, which plan merges.
	path := dir + "/units.json"
	pgRun := r
	pgRun.Results, r.Results = r.Results[2:], r.Results[:2]
	if err := saveReport(path, r); err != nil {
		t.Fatal(err)
	}
	if err := saveReport(dir+"/pg.json", pgRun); err != nil {
		t.Fatal(err)
	}
	path += "," + dir + "/pg.json"
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"plan", "--units", path, "--peak-rides", "5k", "--rides-per-month", "100M",
		"--queries-per-month", "UniqueSkiers=1M,SkierDayRides=10M"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"| dynamo-adopted | $128.75 ($125.00 + $3.75) | $4,820 (10000 WCU, 1500 RCU) | on demand: 0.8% average use, break-even 28.9%", "10,000 rides/s | hottest key",
		"RDS db.t4g.medium $46.80", "Cheapest that takes the peak: **postgres**, $46.80"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "Traffic:") != 1 {
		t.Errorf("two runs of one data set planned apart:\n%s", out.String())
	}
	if strings.Contains(out.String(), "| memory |") {
		t.Errorf("plan prices the memory store:\n%s", out.String())
	}
	if code := Main(t.Context(), []string{"plan", "--peak-rides", "5k"}, &out, &errOut); code != 2 {
		t.Errorf("plan without --units: exit %d; want 2", code)
	}
}

// TestPlanShowsPostgresRowOfAShortRun: a run too short to measure
// PostgreSQL's CPU a ride (or one whose server was not on the machine)
// still gets its row, saying why it is not priced and what to do; it is
// never the cheapest. A run whose queries alone were too short is priced
// from the rides and says the queries were left out.
func TestPlanShowsPostgresRowOfAShortRun(t *testing.T) {
	short := "loading 2000 rides: too short to measure: 0 ticks of 10ms of CPU; a figure needs 20 or more, to be within 5%"
	for _, c := range []struct {
		res  Result
		want []string
	}{
		{Result{Store: "postgres", Rides: 2000, ServerCPUPerRideNot: short}, []string{"| postgres | — | — | not priced: no server CPU a ride to size an instance from (" + short + "): rerun with more --rides, or give --pg-cpu-per-ride |"}},
		{Result{Store: "postgres", Rides: 2000}, []string{"| postgres | — | — | not priced: no server CPU a ride to size an instance from (no PostgreSQL process was on this machine during the run)"}},
		{Result{Store: "postgres", Rides: 2000, ServerCPUPerRideUS: 27, ServerCPUPerQueryNot: "asking 1000 queries: too short to measure: 5 ticks"},
			[]string{"RDS db.t4g.medium", "from 27µs a ride and no CPU (asking 1000 queries: too short to measure: 5 ticks: the queries left out) a query"}},
	} {
		r := Report{Command: "skibench --rides 2000", DataSet: DefaultDataSet(), Results: []Result{{Store: "memory", Rides: 2000}, adoptedLike, c.res}}
		plans := Plan(r, handTraffic, 0, 0)
		var out bytes.Buffer
		WritePlan(&out, r, handTraffic, plans)
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("plan of %+v lacks %q:\n%s", c.res, want, out.String())
			}
		}
		if best, ok := Cheapest(plans, handTraffic); !ok || (c.res.ServerCPUPerRideUS == 0 && best.Store == "postgres") {
			t.Errorf("cheapest of %+v: %s, %v; want a priced model", c.res, best.Store, ok)
		}
	}
	r := Report{Command: "skibench --stores memory,postgres --rides 2000", DataSet: DefaultDataSet(), Results: []Result{{Store: "memory"}, {Store: "postgres", ServerCPUPerRideNot: short}}}
	var out bytes.Buffer
	WritePlan(&out, r, handTraffic, Plan(r, handTraffic, 0, 0))
	if !strings.Contains(out.String(), "not priced") || !strings.Contains(out.String(), "No model here is priced (the rows say why).") {
		t.Errorf("a report whose only model is not priced:\n%s", out.String())
	}
}
