package bench

import (
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// The lab chart's colours, exported so a test can find its bars in the
// rendered image.
var (
	// TableColors colour the tables and indexes of the write-unit bars,
	// in order of first appearance.
	TableColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#edc948", "#76b7b2", "#ff9da7"}
	// KindColors colour the query kinds, in Kinds order.
	KindColors = []string{"#17becf", "#bcbd22", "#8c564b", "#e377c2", "#a05195"}
)

const (
	HotShareColor     = "#000080"
	CeilingHotColor   = "#d62728"
	CeilingQuotaColor = "#9467bd"
	CeilingCPUColor   = "#2f4f4f"
	OnDemandColor     = "#1f77b4"
	ProvisionedColor  = "#2ca02c"
	RDSColor          = "#8b0000"
)

// labRow is one model on one workload.
type labRow struct {
	label string
	res   Result
	plan  ModelPlan
}

// labRows are the rows: each model on each workload, the workloads of a
// model next to each other.
func labRows(rs []Report, t Traffic) []labRow {
	var stores []string
	perReport := make([]map[string]labRow, len(rs))
	for i, r := range rs {
		plans := map[string]ModelPlan{}
		for _, p := range Plan(r, t, 0, 0) {
			plans[p.Store] = p
		}
		perReport[i] = map[string]labRow{}
		for _, res := range r.Results {
			p, ok := plans[res.Store]
			if !ok || p.Unpriced != "" {
				continue // memory, or postgres with no CPU measured: nothing to draw
			}
			if !slices.Contains(stores, res.Store) {
				stores = append(stores, res.Store)
			}
			perReport[i][res.Store] = labRow{label: res.Store + " · " + r.DataSet.Workload, res: res, plan: p}
		}
	}
	var rows []labRow
	for _, s := range stores {
		for i := range rs {
			if row, ok := perReport[i][s]; ok {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// svgChart writes the lab chart's elements.
type svgChart struct {
	w io.Writer
	y float64 // the next free line
}

const (
	labWidth  = 1180
	labLabelW = 210
	labPlotX  = labLabelW + 10
	labPlotW  = 640 // the rest of the width holds the values
	labRowH   = 18
)

func (c *svgChart) text(x, y float64, size int, anchor, s string, extra ...string) {
	fmt.Fprintf(c.w, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" %s>%s</text>`+"\n", x, y, size, anchor, strings.Join(extra, " "), html.EscapeString(s))
}

func (c *svgChart) rect(x, y, w, h float64, fill, title string) {
	fmt.Fprintf(c.w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n", x, y, math.Max(w, 0), h, fill, html.EscapeString(title))
}

func (c *svgChart) heading(s, note string) {
	c.y += 34
	c.text(10, c.y, 14, "start", s, `font-weight="bold"`)
	if note != "" {
		c.y += 15
		c.text(10, c.y, 11, "start", note, `fill="#444"`)
	}
	c.y += 8
}

// linear and logarithmic scales onto the plot's width.
func linScale(max float64) func(float64) float64 {
	if max <= 0 {
		max = 1
	}
	return func(v float64) float64 { return math.Max(0, v) / max * labPlotW }
}

func logScale(lo, hi float64) func(float64) float64 {
	return func(v float64) float64 {
		if v <= lo {
			return 0
		}
		return math.Min(1, (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))) * labPlotW
	}
}

// decades draws the log scale's grid, lo to hi by tenfold, over height h.
func (c *svgChart) decades(lo, hi float64, scale func(float64) float64, h float64, label func(float64) string) {
	for d := lo; d <= hi*1.001; d *= 10 {
		x := labPlotX + scale(d)
		fmt.Fprintf(c.w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, c.y, x, c.y+h)
		c.text(x, c.y+h+11, 9, "middle", label(d), `fill="#666"`)
	}
}

func (c *svgChart) rowLabel(y float64, s string) {
	c.text(labLabelW, y+labRowH*0.7, 11, "end", s)
}

// legend draws coloured squares with names on one line.
func (c *svgChart) legend(names, colors []string) {
	x := float64(labPlotX)
	for i, n := range names {
		c.rect(x, c.y, 11, 11, colors[i], n)
		c.text(x+15, c.y+10, 11, "start", n)
		x += 30 + 7*float64(len(n))
	}
	c.y += 18
}

func decadeAbove(v float64) float64 { return math.Pow(10, math.Ceil(math.Log10(math.Max(v, 1e-9)))) }

// WriteLabSVG draws what decides between the models, one row per model
// and workload (reports rs, one per workload): write units a ride by table
// and index, read units a query by kind, the hottest key's share of
// writes, the ceiling in rides/s and what sets it, and the monthly cost at
// traffic t, on demand and provisioned (PostgreSQL: an RDS instance sized
// from the CPU measured). No latency is drawn: dynalite's say nothing
// about AWS.
func WriteLabSVG(w io.Writer, rs []Report, t Traffic) {
	rows := labRows(rs, t)
	var body strings.Builder
	c := &svgChart{w: &body}

	// Caption: what was measured and how realistic the data set is.
	c.y = 10
	c.heading("skidata data-model lab: which model, at what cost, up to what rate", "")
	for _, r := range rs {
		c.y += 14
		c.text(10, c.y, 11, "start", fmt.Sprintf("%s workload: %s", r.DataSet.Workload, r.Shape))
	}
	c.y += 14
	c.text(10, c.y, 11, "start", "Units as AWS bills them, measured through skibench's DynamoDB simulation (adapters/dynamo/dynamosim) on dynalite; the emulator's latencies are not shown.")
	c.y += 14
	c.text(10, c.y, 11, "start", "Limits (AWS defaults): 1,000 WCU/s a partition key value; 40,000 WCU/s a table or index (quota); a new on-demand table takes 4,000 writes/s at once.")

	// 1. Write units a ride, stacked by table and index.
	var tables []string
	maxW := 0.0
	for _, row := range rows {
		for _, n := range slices.Sorted(maps.Keys(row.res.WriteUnitsBy)) {
			if !slices.Contains(tables, n) {
				tables = append(tables, n)
			}
		}
		maxW = math.Max(maxW, row.res.WriteCUPerRide)
	}
	colorOf := func(name string) string {
		for i, n := range tables {
			if n == name {
				return TableColors[i%len(TableColors)]
			}
		}
		return "#999"
	}
	c.heading("Write units a ride, by table and index (on-demand write request units; fewer is cheaper)", "")
	c.legend(tables, mapStr(tables, colorOf))
	sx := linScale(math.Max(maxW*1.05, 1))
	for _, row := range rows {
		c.rowLabel(c.y, row.label)
		if row.res.Dynamo {
			x := float64(labPlotX)
			for _, n := range slices.Sorted(maps.Keys(row.res.WriteUnitsBy)) {
				u := row.res.WriteUnitsBy[n]
				c.rect(x, c.y+2, sx(u), labRowH-4, colorOf(n), fmt.Sprintf("%s: %s units a ride", n, num(u)))
				x += sx(u)
			}
			c.text(x+4, c.y+labRowH*0.7, 11, "start", num(row.res.WriteCUPerRide))
		} else {
			c.text(labPlotX, c.y+labRowH*0.7, 11, "start", "PostgreSQL: no units, an instance (below)", `fill="#666"`)
		}
		c.y += labRowH
	}

	// 2. Read units a query, by kind, log scale.
	maxR := 1.0
	for _, row := range rows {
		for _, u := range row.res.ReadUnitsByKind {
			maxR = math.Max(maxR, u)
		}
	}
	lo, hi := 0.1, decadeAbove(maxR)
	sr := logScale(lo, hi)
	c.heading("Read units a query, by query type (log scale; table reads strongly consistent, 1 unit a 4 KB; index reads eventually, 0.5; at least 0.5 a request)", "")
	c.legend(Kinds, KindColors)
	const sub = 6.0
	rowH := sub*float64(len(Kinds)) + 6
	top := c.y
	c.decades(lo, hi, sr, rowH*float64(len(rows)), func(d float64) string { return fmt.Sprintf("%g", d) })
	for _, row := range rows {
		c.text(labLabelW, c.y+rowH*0.6, 11, "end", row.label)
		if row.res.Dynamo {
			for i, k := range Kinds {
				u := row.res.ReadUnitsByKind[k]
				y := c.y + 3 + float64(i)*sub
				c.rect(labPlotX, y, sr(u), sub-1, KindColors[i], fmt.Sprintf("%s: %s read units a query", k, num(u)))
				c.text(labPlotX+sr(u)+3, y+sub-0.5, 7, "start", num(u))
			}
		} else {
			c.text(labPlotX, c.y+rowH*0.6, 11, "start", "PostgreSQL: CPU, not units", `fill="#666"`)
		}
		c.y += rowH
	}
	c.y = math.Max(c.y, top+rowH*float64(len(rows))) + 12

	// 3. The hottest key's share of the write units.
	maxH := 0.0
	for _, row := range rows {
		maxH = math.Max(maxH, row.res.HotShare)
	}
	c.heading("The hottest partition key's share of all write units (one key serves at most 1,000 WCU/s)", "In the data set's mix: the rows' resorts and days share the writes evenly.")
	sh := linScale(math.Max(maxH*1.15, 0.001))
	for _, row := range rows {
		c.rowLabel(c.y, row.label)
		if row.res.Dynamo {
			c.rect(labPlotX, c.y+2, sh(row.res.HotShare), labRowH-4, HotShareColor, row.res.HotKey)
			c.text(labPlotX+sh(row.res.HotShare)+4, c.y+labRowH*0.7, 11, "start", fmt.Sprintf("%.2f%% (%s)", 100*row.res.HotShare, row.res.HotKey))
		} else {
			c.text(labPlotX, c.y+labRowH*0.7, 11, "start", "—", `fill="#666"`)
		}
		c.y += labRowH
	}

	// 4. The ceiling.
	maxC := 1000.0
	for _, row := range rows {
		if ceil, _ := row.plan.Ceiling(); !math.IsInf(ceil, 1) {
			maxC = math.Max(maxC, ceil)
		}
	}
	clo, chi := 100.0, decadeAbove(maxC*1.01)
	sc := logScale(clo, chi)
	c.heading("Ceiling: rides/s before AWS throttles (log scale; red: the hottest key, purple: the table quota; | a new on-demand table at once)",
		fmt.Sprintf("PostgreSQL (grey): the RDS instance sized for the traffic below, at %.0f%% of its vCPUs, from the CPU measured locally: an estimate.", 100*RDSHeadroom))
	c.legend([]string{"hottest key", "table quota", "PostgreSQL instance CPU"}, []string{CeilingHotColor, CeilingQuotaColor, CeilingCPUColor})
	top = c.y
	c.decades(clo, chi, sc, labRowH*float64(len(rows)), func(d float64) string { return thousands(d) })
	for _, row := range rows {
		c.rowLabel(c.y, row.label)
		ceil, what := row.plan.Ceiling()
		color := CeilingCPUColor
		if row.res.Dynamo {
			color = CeilingQuotaColor
			if row.plan.Limits.HotKey <= row.plan.Limits.Quota {
				color = CeilingHotColor
			}
		}
		c.rect(labPlotX, c.y+2, sc(ceil), labRowH-4, color, what)
		if row.res.Dynamo {
			x := labPlotX + sc(row.plan.Limits.NewTable)
			fmt.Fprintf(c.w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", x, c.y, x, c.y+labRowH)
		}
		c.text(labPlotX+sc(ceil)+4, c.y+labRowH*0.7, 11, "start", fmt.Sprintf("%s (%s)", rate(ceil), what))
		c.y += labRowH
	}
	c.y = math.Max(c.y, top+labRowH*float64(len(rows))) + 12

	// 5. Monthly cost at t, log scale (the models differ tenfold).
	minUSD, maxUSD := math.Inf(1), 1.0
	for _, row := range rows {
		for _, v := range []float64{row.plan.OnDemand(), row.plan.Provisioned, row.plan.InstanceUSD} {
			if v > 0 {
				minUSD, maxUSD = math.Min(minUSD, v), math.Max(maxUSD, v)
			}
		}
	}
	ulo := math.Min(decadeAbove(minUSD)/10, maxUSD/10)
	uhi := decadeAbove(maxUSD * 1.01)
	su := logScale(ulo, uhi)
	c.heading("Monthly cost, $ (log scale; us-east-1 list prices; storage, backups and transfer not included)", "At "+t.String()+"; provisioned held at the peak all month.")
	c.legend([]string{"DynamoDB on demand", "DynamoDB provisioned for the peak", "RDS PostgreSQL instance (estimate)"}, []string{OnDemandColor, ProvisionedColor, RDSColor})
	c.decades(ulo, uhi, su, 27*float64(len(rows)), func(d float64) string { return "$" + thousands(d) })
	for _, row := range rows {
		c.rowLabel(c.y+4, row.label)
		if row.res.Dynamo {
			c.rect(labPlotX, c.y+1, su(row.plan.OnDemand()), 11, OnDemandColor, "on demand")
			c.text(labPlotX+su(row.plan.OnDemand())+4, c.y+10, 10, "start", usd(row.plan.OnDemand())+" on demand")
			c.rect(labPlotX, c.y+13, su(row.plan.Provisioned), 11, ProvisionedColor, "provisioned")
			c.text(labPlotX+su(row.plan.Provisioned)+4, c.y+22, 10, "start", fmt.Sprintf("%s provisioned (%.0f WCU, %.0f RCU)", usd(row.plan.Provisioned), row.plan.ProvisionedWCU, row.plan.ProvisionedRCU))
		} else {
			c.rect(labPlotX, c.y+7, su(row.plan.InstanceUSD), 11, RDSColor, row.plan.Instance)
			c.text(labPlotX+su(row.plan.InstanceUSD)+4, c.y+16, 10, "start", fmt.Sprintf("%s %s", usd(row.plan.InstanceUSD), row.plan.Instance))
		}
		c.y += 27
	}
	c.y += 12
	c.y += 10
	c.text(10, c.y, 10, "start", fmt.Sprintf("Prices: DynamoDB on demand $%.3f / $%.3f a million write / read units, provisioned $%.5f / $%.5f a WCU / RCU-hour "+
		"(aws.amazon.com/dynamodb/pricing, after the Nov 2024 cut);",
		onDemandWritePerMillion, onDemandReadPerMillion, provisionedWCUHour, provisionedRCUHour), `fill="#444"`)
	c.y += 13
	c.text(10, c.y, 10, "start", fmt.Sprintf("RDS for PostgreSQL Single-AZ on demand (aws.amazon.com/rds/postgresql/pricing), sized at %.0f%% of the vCPUs; a month is 30 days. List prices: check current.", 100*RDSHeadroom), `fill="#444"`)
	c.y += 14

	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", labWidth, c.y)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	io.WriteString(w, body.String())
	fmt.Fprintln(w, "</svg>")
}

func mapStr(ss []string, f func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}
