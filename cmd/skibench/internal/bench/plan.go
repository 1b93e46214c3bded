package bench

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Traffic is what a resort expects: the peak ride rate, the rides and the
// queries of each kind in a month.
type Traffic struct {
	PeakRides       float64            // rides a second at the peak
	RidesPerMonth   float64            //
	QueriesPerMonth map[string]float64 // per query kind
	// PeakQueries is queries a second at the peak, in the month's mix; 0:
	// the month's average query rate scaled by the rides' peak-to-average
	// ratio.
	PeakQueries float64
}

// avgRides is the month's average ride rate.
func (t Traffic) avgRides() float64 { return t.RidesPerMonth / secondsPerMonth }

func (t Traffic) queriesPerMonth() float64 {
	var n float64
	for _, q := range t.QueriesPerMonth {
		n += q
	}
	return n
}

// peakQueries is PeakQueries or its default.
func (t Traffic) peakQueries() float64 {
	if t.PeakQueries > 0 || t.RidesPerMonth <= 0 {
		return t.PeakQueries
	}
	return t.queriesPerMonth() * t.PeakRides / t.RidesPerMonth
}

// String states the traffic in one line.
func (t Traffic) String() string {
	kinds := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		if q := t.QueriesPerMonth[k]; q > 0 {
			kinds = append(kinds, k+" "+count(q))
		}
	}
	qs := "no queries"
	if len(kinds) > 0 {
		qs = strings.Join(kinds, ", ") + " queries"
	}
	return fmt.Sprintf("peak %s rides/s, %s rides and %s a month", count(t.PeakRides), count(t.RidesPerMonth), qs)
}

// count writes 1500 as 1.5k, 2e6 as 2M.
func count(f float64) string {
	for _, u := range []struct {
		div float64
		s   string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if f >= u.div {
			return strconv.FormatFloat(f/u.div, 'g', 4, 64) + u.s
		}
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// ParseCount reads 5000, 5k, 100M, 1.5G.
func ParseCount(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult = 1e3
	case strings.HasSuffix(s, "M"):
		mult = 1e6
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "B"):
		mult = 1e9
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("not a count: %q (e.g. 5000, 5k, 100M)", s)
	}
	return f * mult, nil
}

// ParseQueryMix reads "SkierDayRides=30M,UniqueSkiers=1M": queries of each
// kind a month; "all=1M" sets every kind.
func ParseQueryMix(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("query mix %q: want kind=count", part)
		}
		n, err := ParseCount(v)
		if err != nil {
			return nil, fmt.Errorf("query mix %q: %w", part, err)
		}
		switch {
		case k == "all":
			for _, kind := range Kinds {
				out[kind] = n
			}
		case slices.Contains(Kinds, k):
			out[k] = n
		default:
			return nil, fmt.Errorf("query mix: unknown kind %q (known: all, %s)", k, strings.Join(Kinds, ", "))
		}
	}
	return out, nil
}

// Limits are the rates, in rides a second, at which a DynamoDB model meets
// each of AWS's limits, from its measured units a ride.
type Limits struct {
	// HotKey: its hottest partition key value reaches 1,000 WCU/s (in the
	// measured data set's mix of resorts and days).
	HotKey float64
	// Quota: the busiest table or index reaches the 40,000 WCU/s
	// table-level quota; QuotaTable names it.
	Quota      float64
	QuotaTable string
	// NewTable: the busiest table or index reaches the 4,000 writes a
	// second a new on-demand table takes at once.
	NewTable float64
}

// Ceiling is the lower of the hot-key and quota limits, and what it is.
func (l Limits) Ceiling() (float64, string) {
	if l.HotKey <= l.Quota {
		return l.HotKey, "hottest key at 1,000 WCU/s"
	}
	return l.Quota, "table quota 40,000 WCU/s on " + l.QuotaTable
}

// LimitsOf computes a DynamoDB result's limits; ok is false for a store
// with no write units.
func LimitsOf(res Result) (l Limits, ok bool) {
	if !res.Dynamo || res.WriteCUPerRide <= 0 {
		return l, false
	}
	l.HotKey = math.Inf(1)
	if res.HotUnitsPerRide > 0 {
		l.HotKey = PartitionWriteUnitsPerSec / res.HotUnitsPerRide
	}
	// The busiest table or index; a report without the breakdown counts
	// the whole ride against one table.
	by := res.WriteUnitsBy
	if len(by) == 0 {
		by = map[string]float64{"all tables": res.WriteCUPerRide}
	}
	busiest := 0.0
	for _, name := range slices.Sorted(maps.Keys(by)) {
		if by[name] > busiest {
			busiest, l.QuotaTable = by[name], name
		}
	}
	l.Quota = TableQuotaWriteUnitsPerSec / busiest
	l.NewTable = NewTableWriteUnitsPerSec / busiest
	return l, true
}

// ModelPlan is one model's answer for a Traffic.
type ModelPlan struct {
	Store string
	// DynamoDB: $ a month on demand (writes, reads) and provisioned for the
	// peak (WCU and RCU held all month).
	OnDemandWrites, OnDemandReads  float64
	ProvisionedWCU, ProvisionedRCU float64
	Provisioned                    float64
	// Utilisation is the average use of the provisioned capacity (the
	// month's average rate over the peak); provisioned is cheaper above
	// BreakEvenUtilisation.
	Utilisation float64
	Limits      Limits
	// PostgreSQL: the smallest instance whose sustained vCPUs take the
	// peak at RDSHeadroom, its $ a month, the vCPUs the peak needs and the
	// peak that instance takes. Instance is "" when none listed does.
	Instance                string
	InstanceUSD             float64
	VCPUs                   float64
	InstancePeak            float64
	CPUPerRide, CPUPerQuery time.Duration
	// QueryCPUNot says why the queries' CPU is left out of the sizing.
	QueryCPUNot string
	// Unpriced says why a model has no figures (PostgreSQL without a CPU
	// a ride to size an instance from); its row says so.
	Unpriced string
}

// OnDemand is the month's on-demand bill.
func (p ModelPlan) OnDemand() float64 { return p.OnDemandWrites + p.OnDemandReads }

// Monthly is what the model costs a month in its cheaper mode (DynamoDB)
// or on its instance (PostgreSQL); +Inf when no listed instance fits.
func (p ModelPlan) Monthly() float64 {
	if p.Unpriced != "" {
		return math.Inf(1)
	}
	if p.CPUPerRide > 0 || p.Instance != "" {
		if p.Instance == "" {
			return math.Inf(1)
		}
		return p.InstanceUSD
	}
	return math.Min(p.OnDemand(), p.Provisioned)
}

// Ceiling is the peak rate it takes before throttling (DynamoDB) or before
// the chosen instance passes RDSHeadroom (PostgreSQL).
func (p ModelPlan) Ceiling() (float64, string) {
	if p.Unpriced != "" {
		return 0, "not priced"
	}
	if p.CPUPerRide > 0 {
		if p.Instance == "" {
			return 0, "no listed instance"
		}
		return p.InstancePeak, p.Instance + " CPU at " + fmt.Sprintf("%.0f%%", 100*RDSHeadroom)
	}
	return p.Limits.Ceiling()
}

// PlanDynamo prices a DynamoDB result for t.
func PlanDynamo(res Result, t Traffic) ModelPlan {
	p := ModelPlan{Store: res.Store}
	p.Limits, _ = LimitsOf(res)
	p.OnDemandWrites = t.RidesPerMonth * res.WriteCUPerRide * onDemandWritePerMillion / 1e6
	var readUnits float64 // a month
	for kind, q := range t.QueriesPerMonth {
		readUnits += q * readUnitsOf(res, kind)
	}
	p.OnDemandReads = readUnits * onDemandReadPerMillion / 1e6
	p.ProvisionedWCU = ceilUnits(t.PeakRides * res.WriteCUPerRide)
	if t.PeakQueries > 0 {
		if nq := t.queriesPerMonth(); nq > 0 {
			p.ProvisionedRCU = ceilUnits(t.PeakQueries * readUnits / nq)
		}
	} else if t.RidesPerMonth > 0 {
		// The month's reads at the rides' peak-to-average ratio.
		p.ProvisionedRCU = ceilUnits(readUnits * t.PeakRides / t.RidesPerMonth)
	}
	p.Provisioned = (p.ProvisionedWCU*provisionedWCUHour + p.ProvisionedRCU*provisionedRCUHour) * hoursPerMonth
	if t.PeakRides > 0 {
		p.Utilisation = t.avgRides() / t.PeakRides
	}
	return p
}

// ceilUnits rounds capacity up to whole units, ignoring float noise.
func ceilUnits(f float64) float64 { return math.Ceil(f - 1e-9) }

// readUnitsOf is a result's read units a query of kind: measured per
// kind, or the mix's mean for a report without the breakdown.
func readUnitsOf(res Result, kind string) float64 {
	if u, ok := res.ReadUnitsByKind[kind]; ok {
		return u
	}
	return res.ReadCUPerQuery
}

// PlanPostgres sizes an RDS instance for t from the CPU a ride and a query
// took the local server.
func PlanPostgres(store string, perRide, perQuery time.Duration, t Traffic) ModelPlan {
	p := ModelPlan{Store: store, CPUPerRide: perRide, CPUPerQuery: perQuery}
	p.VCPUs = (t.PeakRides*perRide.Seconds() + t.peakQueries()*perQuery.Seconds()) / RDSHeadroom
	for _, in := range RDSInstances {
		if in.Usable() >= p.VCPUs {
			p.Instance, p.InstanceUSD = in.Class, in.Hourly*hoursPerMonth
			// The ride rate it takes with the queries scaled along.
			if need := p.VCPUs; need > 0 {
				p.InstancePeak = t.PeakRides * in.Usable() / need
			}
			break
		}
	}
	return p
}

// Plan answers t for every store of a report with units (DynamoDB) or a
// server CPU measurement (PostgreSQL, or the given CPU figures when
// non-zero). A PostgreSQL run without a CPU a ride (too short to measure,
// or its server not on the measuring machine) gets a plan that says why
// it is not priced, never no plan.
func Plan(r Report, t Traffic, pgPerRide, pgPerQuery time.Duration) []ModelPlan {
	var out []ModelPlan
	for _, res := range r.Results {
		switch {
		case res.Dynamo:
			out = append(out, PlanDynamo(res, t))
		case res.Store == "postgres":
			perRide, perQuery := pgPerRide, pgPerQuery
			if perRide == 0 {
				perRide = time.Duration(res.ServerCPUPerRideUS * float64(time.Microsecond))
			}
			if perQuery == 0 {
				perQuery = time.Duration(res.ServerCPUPerQueryUS * float64(time.Microsecond))
			}
			if perRide == 0 {
				why := res.ServerCPUPerRideNot
				if why == "" {
					why = "no PostgreSQL process was on this machine during the run"
				}
				out = append(out, ModelPlan{Store: res.Store, Unpriced: "no server CPU a ride to size an instance from (" + why + "): rerun with more --rides, or give --pg-cpu-per-ride"})
				continue
			}
			p := PlanPostgres(res.Store, perRide, perQuery, t)
			if perQuery == 0 && res.ServerCPUPerQueryNot != "" {
				p.QueryCPUNot = res.ServerCPUPerQueryNot
			}
			out = append(out, p)
		}
	}
	return out
}

// Cheapest is the plan that takes the peak for the least a month; ok is
// false when none takes it.
func Cheapest(plans []ModelPlan, t Traffic) (best ModelPlan, ok bool) {
	for _, p := range plans {
		if c, _ := p.Ceiling(); c < t.PeakRides {
			continue
		}
		if !ok || p.Monthly() < best.Monthly() {
			best, ok = p, true
		}
	}
	return best, ok
}
