package nemesis

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// Report is what a mode's run found: report.json, and the text Print
// writes.
type Report struct {
	Mode     string  `json:"mode"`
	Seed     uint64  `json:"seed"`
	Duration string  `json:"duration"`
	Rate     float64 `json:"rate"`
	// Faults counts the faults injected, by kind; FaultList is each, with
	// its recovery, and those that could not be injected (with Err).
	Faults    map[string]int `json:"faults"`
	FaultList []FaultReport  `json:"faultList"`
	// NotInjected are the mode's fault kinds the run never reached.
	NotInjected []string `json:"notInjected,omitempty"`
	Sent        int      `json:"sent"`
	Created     int      `json:"created"`
	Refused     int      `json:"refused"`
	Stored      int      `json:"stored"`
	Lost        int      `json:"lost"`
	Duplicated  int      `json:"duplicated"`
	Phantom     int      `json:"phantom"`
	// PostAnswers and GetAnswers count the answers by status ("error":
	// none, the client's timeout or a refused or reset connection).
	PostAnswers map[string]int `json:"postAnswers"`
	GetAnswers  map[string]int `json:"getAnswers"`
	// LongestRecovery is the longest time, in seconds, from the end of a
	// fault to the first 201 of a ride sent after it, over the faults
	// with no other fault active in between (another would have delayed
	// the 201); RecoveryAfter names that fault.
	LongestRecovery float64 `json:"longestRecoverySeconds"`
	RecoveryAfter   string  `json:"recoveryAfter,omitempty"`
	// Quiet and Faulted are the POSTs' latencies (answered ones) in the
	// seconds of the run no fault touched and in the others.
	Quiet   LatencyReport `json:"quiet"`
	Faulted LatencyReport `json:"faulted"`
	// BackwardReads counts reads lower than an earlier read of the same
	// total, StaleReads reads that missed a ride answered 201 before them;
	// violations where the mode's reads promise otherwise (ReadsHeld).
	BackwardReads int    `json:"backwardReads"`
	StaleReads    int    `json:"staleReads"`
	ReadsHeld     bool   `json:"readsHeld"`
	Exits         []Exit `json:"unplannedExits,omitempty"`
	PlannedExits  int    `json:"plannedExits"`
	// Violations are every broken promise, each with the requests and
	// faults around it.
	Violations []Violation `json:"violations"`
	// Error is why the run could not be carried out, if so.
	Error string   `json:"error,omitempty"`
	Files []string `json:"-"`
}

// FaultReport is one fault and how long the service took to take rides
// again after it.
type FaultReport struct {
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	Detail string  `json:"detail"`
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Err    string  `json:"error,omitempty"`
	// Recovery is the seconds from End to the first 201 of a ride sent
	// after it (-1: none came); Alone that no other fault was active
	// between the two.
	Recovery float64 `json:"recoverySeconds"`
	Alone    bool    `json:"alone"`
}

// LatencyReport is the latency of the answered POSTs of a set of seconds.
type LatencyReport struct {
	Seconds  int     `json:"seconds"`
	Requests int     `json:"requests"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
}

// OK reports whether the run was carried out and found nothing.
func (r Report) OK() bool { return r.Error == "" && len(r.Violations) == 0 }

// Line is the run's last line: `MODE lost=N duplicated=N phantom=N
// faults=N`, or `MODE not run: WHY` for a run that could not be carried
// out, whose zero counts prove nothing.
func (r Report) Line() string {
	if r.Error != "" {
		return fmt.Sprintf("%s not run: %s", r.Mode, r.Error)
	}
	return fmt.Sprintf("%s lost=%d duplicated=%d phantom=%d faults=%d", r.Mode, r.Lost, r.Duplicated, r.Phantom, r.injected())
}

// injected is how many faults were injected.
func (r Report) injected() int {
	n := 0
	for _, c := range r.Faults {
		n += c
	}
	return n
}

// fill sums the history and the verdict up.
func (r *Report) fill(h History, v Verdict, runViolations []Violation, notInjected []string) {
	r.Sent, r.Created, r.Refused, r.Stored = v.Sent, v.Created, v.Refused, v.Stored
	r.Lost, r.Duplicated, r.Phantom = v.Lost, v.Duplicated, v.Phantom
	r.BackwardReads, r.StaleReads = v.BackwardReads, v.StaleReads
	r.Violations = slices.Concat([]Violation{}, v.Violations, runViolations)
	r.NotInjected = notInjected
	r.Faults = map[string]int{}
	r.PostAnswers, r.GetAnswers = map[string]int{}, map[string]int{}
	faults := slices.SortedFunc(slices.Values(h.Faults), func(a, b Fault) int { return cmp.Compare(a.Start, b.Start) })
	posts := make([]Op, 0, len(h.Ops))
	for _, o := range h.Ops {
		answers := r.GetAnswers
		if o.Kind == OpPost {
			answers = r.PostAnswers
			posts = append(posts, o)
		}
		answers[statusName(o.Status)]++
	}
	slices.SortFunc(posts, func(a, b Op) int { return cmp.Compare(a.Sent, b.Sent) })
	for _, f := range faults {
		if f.Err == "" {
			r.Faults[f.Kind]++
		}
		fr := FaultReport{Kind: f.Kind, Target: f.Target, Detail: f.Detail, Start: f.Start.Seconds(), End: f.End.Seconds(), Err: f.Err, Recovery: -1}
		until := time.Duration(math.MaxInt64)
		i, _ := slices.BinarySearchFunc(posts, f.End, func(o Op, t time.Duration) int { return cmp.Compare(o.Sent, t) })
		for _, o := range posts[i:] {
			if o.Status == 201 {
				fr.Recovery, until = (o.End - f.End).Seconds(), o.End
				break
			}
		}
		fr.Alone = !slices.ContainsFunc(faults, func(g Fault) bool { return g != f && g.Active(f.End, until) })
		if fr.Alone && fr.Recovery > r.LongestRecovery {
			r.LongestRecovery = fr.Recovery
			r.RecoveryAfter = fmt.Sprintf("%s %s ending at %.1fs", f.Kind, f.Target, f.End.Seconds())
		}
		r.FaultList = append(r.FaultList, fr)
	}
	var quiet, faulted []time.Duration
	quietSecs, faultedSecs := map[int]bool{}, map[int]bool{}
	for _, o := range posts {
		s := int(o.Start / time.Second)
		hit := slices.ContainsFunc(faults, func(f Fault) bool {
			return f.Active(time.Duration(s)*time.Second, time.Duration(s+1)*time.Second)
		})
		if hit {
			faultedSecs[s] = true
		} else {
			quietSecs[s] = true
		}
		if !o.Answered() {
			continue
		}
		if hit {
			faulted = append(faulted, o.End-o.Start)
		} else {
			quiet = append(quiet, o.End-o.Start)
		}
	}
	r.Quiet, r.Faulted = latency(quiet, len(quietSecs)), latency(faulted, len(faultedSecs))
	for _, e := range h.Exits {
		if e.Planned {
			r.PlannedExits++
		} else {
			r.Exits = append(r.Exits, e)
		}
	}
}

func latency(ds []time.Duration, seconds int) LatencyReport {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	l := LatencyReport{Seconds: seconds, Requests: len(ds)}
	if len(ds) > 0 {
		l.P50Ms, l.P99Ms = ms(loadgen.Percentile(ds, 50)), ms(loadgen.Percentile(ds, 99))
	}
	return l
}

func statusName(status int) string {
	if status == 0 {
		return "error"
	}
	return strconv.Itoa(status)
}

// counts is "503×12, error×3", the largest first.
func counts(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Print writes the report as text, ending with Line.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "== %s: %s at %.0f requests/s, seed %d ==\n", r.Mode, r.Duration, r.Rate, r.Seed)
	if r.Error != "" {
		fmt.Fprintf(w, "RUN FAILED: %s\n", r.Error)
	}
	fmt.Fprintf(w, "faults:      %d (%s)\n", r.injected(), counts(r.Faults))
	for _, f := range r.FaultList {
		if f.Err != "" {
			fmt.Fprintf(w, "  not injected: %s %s at %.1fs: %s\n", f.Kind, f.Target, f.Start, f.Err)
		}
	}
	if len(r.NotInjected) > 0 {
		fmt.Fprintf(w, "not reached: %s (the load ended first)\n", strings.Join(r.NotInjected, ", "))
	}
	fmt.Fprintf(w, "rides:       %d sent, %d answered 201, %d otherwise; %d stored; lost %d, duplicated %d, phantom %d\n",
		r.Sent, r.Created, r.Refused, r.Stored, r.Lost, r.Duplicated, r.Phantom)
	fmt.Fprintf(w, "POSTs:       %s\n", counts(r.PostAnswers))
	held := "counted, not held: a queue stands between the API and the store"
	if r.ReadsHeld {
		held = "each a violation: a 201 here means committed"
	}
	fmt.Fprintf(w, "GETs:        %s; %d read less than an earlier read, %d missed a ride answered 201 before it (%s)\n", counts(r.GetAnswers), r.BackwardReads, r.StaleReads, held)
	if r.RecoveryAfter != "" {
		fmt.Fprintf(w, "recovery:    longest %.1fs from the end of a fault to the first 201 after it, no other fault in between (%s)\n", r.LongestRecovery, r.RecoveryAfter)
	}
	fmt.Fprintf(w, "latency ms:  quiet seconds p50 %.1f p99 %.1f (%d POSTs in %d s); faulted seconds p50 %.1f p99 %.1f (%d POSTs in %d s)\n",
		r.Quiet.P50Ms, r.Quiet.P99Ms, r.Quiet.Requests, r.Quiet.Seconds, r.Faulted.P50Ms, r.Faulted.P99Ms, r.Faulted.Requests, r.Faulted.Seconds)
	fmt.Fprintf(w, "exits:       %d planned (kill, term, the end), %d unplanned\n", r.PlannedExits, len(r.Exits))
	for _, e := range r.Exits {
		fmt.Fprintf(w, "  %s incarnation %d at %.1fs: %s\n", e.Process, e.Incarnation, e.At.Seconds(), e.Status)
	}
	const shown = 20
	for _, v := range r.Violations[:min(len(r.Violations), shown)] {
		fmt.Fprintf(w, "VIOLATION %s\n", v)
	}
	if len(r.Violations) > shown {
		fmt.Fprintf(w, "... and %d more violations (report.json has them all)\n", len(r.Violations)-shown)
	}
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "files:       %s\n", strings.Join(r.Files, " "))
	}
	fmt.Fprintln(w, r.Line())
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
