package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Report is a whole run: what was loaded and each store's result.
type Report struct {
	Command    string   `json:"command"`
	DataSet    DataSet  `json:"data_set"`
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
			fmt.Fprintf(w, "| ride rate at which it throttles on AWS² | %s rides/s |\n", num(res.ThrottleRideRate))
			if res.Throttled > 0 {
				fmt.Fprintf(w, "| requests throttled by the throughput model | %d |\n", res.Throttled)
			}
		}
		fmt.Fprintf(w, "| stored | %d %s |\n", res.Stored, res.StoredUnit)
		fmt.Fprintf(w, "| answers differing from memory | %d |\n", res.Mismatches)
		for _, k := range Kinds {
			l := res.Latencies[k]
			fmt.Fprintf(w, "| %s p50 / p99 | %s / %s ms |\n", k, num(l.P50ms), num(l.P99ms))
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
	fmt.Fprintf(w, "\n### Comparison: query latency p50 / p99 (ms)\n\n| store |")
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
	fmt.Fprintf(w, "\n¹ Write units as the DynamoDB simulation (adapters/dynamo/dynamosim) accounts them per partition key value: 1 a KB of item "+
		"on the table's partition, and 1 a KB of projected entry on each index partition the item is newly indexed under "+
		"(dynalite itself reports the table's units only). A failed conditional write is charged 1 unit.\n"+
		"² AWS serves at most 1,000 write units a second per partition key value: the ride rate, in this data set's mix "+
		"of resorts and days, at which the hottest key reaches that.\n")
}

// List prices, us-east-1, after AWS's November 2024 on-demand price cut
// (aws.amazon.com/dynamodb/pricing); check the current ones.
const (
	onDemandWritePerMillion = 0.625   // $ per million write request units
	onDemandReadPerMillion  = 0.125   // $ per million read request units
	provisionedWCUHour      = 0.00065 // $ per WCU-hour
	provisionedRCUHour      = 0.00013 // $ per RCU-hour
)

// BreakEvenUtilisation is the average use of provisioned write capacity
// above which it costs less than on demand: a WCU-hour buys 3,600 writes
// a second's worth, on demand those cost 3,600 × the unit price.
func BreakEvenUtilisation() float64 {
	return provisionedWCUHour / (3600 * onDemandWritePerMillion / 1e6)
}

func (r Report) writeHotKeysAndCost(w io.Writer) {
	var any bool
	for _, res := range r.Results {
		any = any || res.Dynamo
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\n### Comparison: hot keys and cost (DynamoDB)\n\n")
	fmt.Fprintf(w, "| store | write units a ride¹ | read units a query | hottest partition key | its share of writes | throttles on AWS at² | $ a million rides (writes, on demand) | $ a month for 100M rides (on demand) | provisioned WCU for 100M rides/month at 100%% use, $ a month |\n")
	fmt.Fprintf(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		if !res.Dynamo {
			continue
		}
		perMillion := res.WriteCUPerRide * onDemandWritePerMillion
		wcu := 100e6 * res.WriteCUPerRide / (30 * 24 * 3600)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f%% | %s rides/s | %s | %s | %s WCU, %s |\n",
			res.Store, num(res.WriteCUPerRide), num(res.ReadCUPerQuery), res.HotKey, 100*res.HotShare, num(res.ThrottleRideRate),
			num(perMillion), num(100*perMillion), num(wcu), num(wcu*provisionedWCUHour*30*24))
	}
	fmt.Fprintf(w, "\nPrices: on demand $%.3f a million write units, $%.3f a million read units; provisioned $%.5f a WCU-hour, $%.5f an RCU-hour "+
		"(us-east-1 list prices after the November 2024 cut, aws.amazon.com/dynamodb/pricing: list prices, check current). "+
		"Provisioned capacity costs less than on demand above %.0f%% average use of what is provisioned, whatever the model; "+
		"a month is 30 days; storage, backups and data transfer are not included.\n",
		onDemandWritePerMillion, onDemandReadPerMillion, provisionedWCUHour, provisionedRCUHour, 100*BreakEvenUtilisation())
}

// WriteSVG draws two panels: write throughput per store, and p99 latency
// per query kind grouped by store.
func (r Report) WriteSVG(w io.Writer) {
	const (
		width   = 900
		panelH  = 260
		left    = 70
		top     = 40
		plotW   = width - left - 20
		gap     = 70
		height  = top + panelH + gap + panelH + 80
		barFont = 11
	)
	colors := []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1"}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")

	// Panel 1: write throughput.
	maxT := 0.0
	for _, res := range r.Results {
		maxT = math.Max(maxT, res.RidesPerSec)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="14" font-weight="bold">Write throughput (rides/s, higher is better)</text>`+"\n", left, top-15)
	n := max(len(r.Results), 1)
	slot := float64(plotW) / float64(n)
	for i, res := range r.Results {
		h := 0.0
		if maxT > 0 {
			h = res.RidesPerSec / maxT * (panelH - 20)
		}
		x := float64(left) + float64(i)*slot + slot*0.2
		y := float64(top+panelH) - h
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, slot*0.6, h, colors[i%len(colors)])
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%d">%s</text>`+"\n", x+slot*0.3, y-4, barFont, num(res.RidesPerSec))
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x+slot*0.3, top+panelH+16, html.EscapeString(res.Store))
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top+panelH, left+plotW, top+panelH)

	// Panel 2: p99 per query kind, log scale (the stores differ by orders
	// of magnitude).
	top2 := top + panelH + gap
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="14" font-weight="bold">Query latency p99 (ms, log scale, lower is better)</text>`+"\n", left, top2-15)
	lo, hi := math.Inf(1), 0.0
	for _, res := range r.Results {
		for _, l := range res.Latencies {
			if l.P99ms > 0 {
				lo, hi = math.Min(lo, l.P99ms), math.Max(hi, l.P99ms)
			}
		}
	}
	if hi == 0 {
		lo, hi = 0.01, 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	scale := func(v float64) float64 {
		if v <= lo {
			return 0
		}
		return (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo)) * (panelH - 20)
	}
	for d := lo; d <= hi*1.001; d *= 10 {
		y := float64(top2+panelH) - scale(d)
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left-4, y+4, d)
	}
	kslot := float64(plotW) / float64(len(Kinds))
	bw := kslot * 0.8 / float64(n)
	for ki, k := range Kinds {
		for i, res := range r.Results {
			h := scale(res.Latencies[k].P99ms)
			x := float64(left) + float64(ki)*kslot + kslot*0.1 + float64(i)*bw
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s p99 %s ms</title></rect>`+"\n",
				x, float64(top2+panelH)-h, bw*0.9, h, colors[i%len(colors)], html.EscapeString(res.Store), k, num(res.Latencies[k].P99ms))
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", float64(left)+float64(ki)*kslot+kslot/2, top2+panelH+16, k)
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top2+panelH, left+plotW, top2+panelH)
	for i, res := range r.Results {
		x := left + i*150
		y := top2 + panelH + 40
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y, colors[i%len(colors)], x+16, y+11, html.EscapeString(res.Store))
	}
	fmt.Fprintln(w, "</svg>")
}
