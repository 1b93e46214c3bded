package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Report is a whole run: what was loaded and each store's result.
type Report struct {
	Command string  `json:"command"`
	DataSet DataSet `json:"data_set"`
	// Shape is the data set's realism (rides a skier-day, skiers a
	// resort-day, resorts, days), measured on its rides.
	Shape      Shape    `json:"shape"`
	Load       LoadOpts `json:"load"`
	QueriesPer int      `json:"queries_per_kind"`
	Results    []Result `json:"results"`
}

// LoadOpts is LoadOptions as reported.
type LoadOpts struct {
	BatchSize              int `json:"batch_size"`
	Writers                int `json:"writers"`
	DynamoWriteConcurrency int `json:"dynamo_write_concurrency"`
}

// Mismatches is the total over the stores.
func (r Report) Mismatches() int {
	n := 0
	for _, res := range r.Results {
		n += res.Mismatches
	}
	return n
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func num(f float64) string {
	switch {
	case f == 0:
		return "0"
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}

// cpuFigure is a CPU figure in µs, or n/a and why it was not measured.
func cpuFigure(us float64, not string) string {
	if not != "" {
		return "n/a (" + not + ")"
	}
	return num(us) + " µs"
}

func orDash(dynamo bool, s string) string {
	if !dynamo {
		return "—"
	}
	return s
}

// WriteMarkdown writes a table per store, then the comparison tables.
func (r Report) WriteMarkdown(w io.Writer) {
	ds := r.DataSet
	fmt.Fprintf(w, "Workload %s. Data set: seed %d, %d rides, skiers 1..%d, resorts 1..%d, lifts 1..%d, time 1..%d, season %s, days 1..%d. "+
		"Load: batches of %d, %d writers; DynamoDB requests in flight per batch: %d. Queries: %d of each kind, one at a time.\n\n",
		ds.Workload, ds.Seed, ds.Rides, ds.Skiers, ds.Resorts, ds.Lifts, ds.Times, ds.Season, ds.Days,
		r.Load.BatchSize, r.Load.Writers, r.Load.DynamoWriteConcurrency, r.QueriesPer)
	if r.Shape.Rides > 0 {
		fmt.Fprintf(w, "Shape: %s.\n\n", r.Shape)
	}
	for _, res := range r.Results {
		fmt.Fprintf(w, "### %s\n\n| measure | value |\n|---|---|\n", res.Store)
		fmt.Fprintf(w, "| rides loaded | %d |\n", res.Rides)
		fmt.Fprintf(w, "| write time | %.1f s |\n", res.WriteSeconds)
		fmt.Fprintf(w, "| write throughput | %s rides/s |\n", num(res.RidesPerSec))
		fmt.Fprintf(w, "| AddRides calls / queries | %d / %d |\n", res.WriteCalls, res.ReadCalls)
		if res.Dynamo {
			fmt.Fprintf(w, "| DynamoDB write / read requests | %d / %d |\n", res.WriteRequests, res.ReadRequests)
			fmt.Fprintf(w, "| write units: tables + indexes¹ = total | %s + %s = %s (%s a ride) |\n",
				num(res.TotalWriteCU-res.GSIWriteCU), num(res.GSIWriteCU), num(res.TotalWriteCU), num(res.WriteCUPerRide))
			fmt.Fprintf(w, "| read units (query mix) | %s (%s a query) |\n", num(res.ReadCU), num(res.ReadCUPerQuery))
			fmt.Fprintf(w, "| hottest partition key | %s: %.2f%% of the write units |\n", res.HotKey, 100*res.HotShare)
			if l, ok := LimitsOf(res); ok {
				ceil, what := l.Ceiling()
				fmt.Fprintf(w, "| ride rate at which the hottest key reaches 1,000 WCU/s² | %s |\n", rate(l.HotKey))
				fmt.Fprintf(w, "| ceiling on AWS (the lower of that and the table quota³) | %s (%s) |\n", rate(ceil), what)
			}
			if res.Throttled > 0 {
				fmt.Fprintf(w, "| requests throttled by the throughput model | %d |\n", res.Throttled)
			}
		}
		if res.ServerCPUPerRideUS > 0 || res.ServerCPUPerRideNot != "" || res.ServerCPUPerQueryNot != "" {
			fmt.Fprintf(w, "| server CPU a ride / a query (its processes on this machine, /proc) | %s / %s |\n",
				cpuFigure(res.ServerCPUPerRideUS, res.ServerCPUPerRideNot), cpuFigure(res.ServerCPUPerQueryUS, res.ServerCPUPerQueryNot))
		}
		if res.ClientCPUPerRideUS > 0 {
			fmt.Fprintf(w, "| skibench's CPU a ride (the adapter's side) | %s µs |\n", num(res.ClientCPUPerRideUS))
		}
		fmt.Fprintf(w, "| stored | %d %s |\n", res.Stored, res.StoredUnit)
		fmt.Fprintf(w, "| answers differing from memory | %d |\n", res.Mismatches)
		for _, k := range Kinds {
			l := res.Latencies[k]
			where := ""
			if res.Dynamo {
				where = " (dynalite, the emulator)"
			}
			fmt.Fprintf(w, "| %s p50 / p99%s | %s / %s ms |\n", k, where, num(l.P50ms), num(l.P99ms))
		}
		for _, m := range res.Mismatched {
			fmt.Fprintf(w, "\nmismatch: %s\n", m)
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "### Comparison: writes and size\n\n")
	fmt.Fprintf(w, "| store | rides | rides/s | write requests | write units (tables + indexes¹) | units a ride | read requests | read units | stored | mismatches |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %d %s | %d |\n",
			res.Store, res.Rides, num(res.RidesPerSec),
			orDash(res.Dynamo, fmt.Sprint(res.WriteRequests)),
			orDash(res.Dynamo, num(res.TotalWriteCU-res.GSIWriteCU)+" + "+num(res.GSIWriteCU)+" = "+num(res.TotalWriteCU)),
			orDash(res.Dynamo, num(res.WriteCUPerRide)),
			orDash(res.Dynamo, fmt.Sprint(res.ReadRequests)),
			orDash(res.Dynamo, num(res.ReadCU)),
			res.Stored, res.StoredUnit, res.Mismatches)
	}
	fmt.Fprintf(w, "\n### Comparison: query latency p50 / p99 (ms) on this machine: the DynamoDB stores' are dynalite's, the emulator's, not AWS's\n\n| store |")
	for _, k := range Kinds {
		fmt.Fprintf(w, " %s |", k)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", len(Kinds)))
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s |", res.Store)
		for _, k := range Kinds {
			l := res.Latencies[k]
			fmt.Fprintf(w, " %s / %s |", num(l.P50ms), num(l.P99ms))
		}
		fmt.Fprintln(w)
	}
	r.writeHotKeysAndCost(w)
	fmt.Fprintf(w, "\n¹ Write units as the DynamoDB simulation (adapters/dynamo/dynamosim) bills them per partition key value, by AWS's rules: "+
		"1 a KB of the larger of the old and new item on the table's partition; on each index, 1 a KB of projected entry put or removed, "+
		"2 when the write changes the entry's index key (dynalite itself reports the table's units only). A write whose condition fails "+
		"is charged the existing item's size.\n"+
		"² AWS serves at most 1,000 write units a second per partition key value: the ride rate, in this data set's mix "+
		"of resorts and days, at which the hottest key reaches that.\n"+
		"³ AWS's default table-level quota, 40,000 write units a second, applies to each table and index (the busiest one's "+
		"units a ride set the rate); a new on-demand table takes 4,000 writes a second at once and more as it scales "+
		"(docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html, on-demand-capacity-mode.html).\n")
}

func (r Report) writeHotKeysAndCost(w io.Writer) {
	var any bool
	for _, res := range r.Results {
		any = any || res.Dynamo
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\n### Comparison: hot keys, ceiling and cost (DynamoDB)\n\n")
	fmt.Fprintf(w, "| store | write units a ride¹ | read units a query | hottest partition key | its share of writes | hottest key at 1,000 WCU/s² | busiest table at the 40,000 WCU/s quota³ | ceiling on AWS | new on-demand table at once³ | $ a million rides (writes, on demand) | $ a month for 100M rides (on demand) | provisioned WCU for 100M rides/month at 100%% use, $ a month |\n")
	fmt.Fprintf(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		l, ok := LimitsOf(res)
		if !ok {
			continue
		}
		ceil, _ := l.Ceiling()
		perMillion := res.WriteCUPerRide * onDemandWritePerMillion
		wcu := 100e6 * res.WriteCUPerRide / secondsPerMonth
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f%% | %s | %s (%s) | **%s** | %s | %s | %s | %s WCU, %s |\n",
			res.Store, num(res.WriteCUPerRide), num(res.ReadCUPerQuery), res.HotKey, 100*res.HotShare, rate(l.HotKey),
			rate(l.Quota), l.QuotaTable, rate(ceil), rate(l.NewTable),
			num(perMillion), num(100*perMillion), num(wcu), num(wcu*provisionedWCUHour*hoursPerMonth))
	}
	fmt.Fprintf(w, "\nPrices: on demand $%.3f a million write units, $%.3f a million read units; provisioned $%.5f a WCU-hour, $%.5f an RCU-hour "+
		"(us-east-1 list prices after the November 2024 cut, aws.amazon.com/dynamodb/pricing: list prices, check current). "+
		"Provisioned capacity costs less than on demand above %.0f%% average use of what is provisioned, whatever the model; "+
		"a month is 30 days; storage, backups and data transfer are not included. `skibench plan` prices a stated traffic from a saved run.\n",
		onDemandWritePerMillion, onDemandReadPerMillion, provisionedWCUHour, provisionedRCUHour, 100*BreakEvenUtilisation())
}
