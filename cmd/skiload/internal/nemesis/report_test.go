package nemesis

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// TestReportSumsTheRunUp: faults by kind, answers by status, the longest
// recovery over the faults nothing else interrupted, and latency apart in
// quiet and faulted seconds; its last line is the one make soak greps.
func TestReportSumsTheRunUp(t *testing.T) {
	h := chartHistory()
	// After the kill (20 s to 21 s) the API refuses until 23 s: a
	// recovery of 2 s. A latency fault from 25.5 s to 26 s comes in the
	// middle of a pause's recovery, which so does not count.
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Start >= 21*time.Second && o.Start < 23*time.Second {
			o.Status, o.Err = 0, "connection refused"
		}
		if o := &h.Ops[i]; o.Start >= 25*time.Second && o.Start < 28*time.Second {
			o.Status = 503
		}
	}
	h.Faults = append(h.Faults,
		Fault{Kind: Pause, Target: "consumer", Start: 24 * time.Second, End: 25 * time.Second},
		Fault{Kind: Latency, Target: "api→postgres", Start: 25500 * time.Millisecond, End: 26 * time.Second})
	stored := Stored{}
	for _, o := range h.Ops {
		if o.Status == 201 {
			stored[o.Ride] = 1
		}
	}
	var r Report
	r.Mode = "rabbitmq-postgres"
	r.fill(h, Check(h, stored, totalsOf(stored), Eventually), nil, nil)

	if r.Faults[Partition] != 1 || r.Faults[Kill] != 1 || r.Faults[Pause] != 1 || len(r.FaultList) != 4 {
		t.Errorf("faults %v (%d listed); want one partition, kill, pause and latency", r.Faults, len(r.FaultList))
	}
	if r.PostAnswers["201"] != 1500-250-150-150 || r.PostAnswers["503"] != 250+150 || r.PostAnswers["error"] != 150 {
		t.Errorf("POST answers %v", r.PostAnswers)
	}
	if math.Abs(r.LongestRecovery-2.003) > 0.001 || !strings.HasPrefix(r.RecoveryAfter, "kill api") {
		t.Errorf("longest recovery %.3fs after %q; want 2.003s after the kill (the pause's was interrupted)", r.LongestRecovery, r.RecoveryAfter)
	}
	for _, f := range r.FaultList {
		if f.Kind == Pause && (f.Alone || math.Abs(f.Recovery-3.003) > 0.001) {
			t.Errorf("the pause's recovery %.3fs, alone %v; want 3.003s, interrupted by the latency fault", f.Recovery, f.Alone)
		}
	}
	// 201s take 3 ms; the 503s of the partition a second.
	if r.Quiet.P99Ms != 3 || r.Faulted.P99Ms != 1000 || r.Quiet.Seconds+r.Faulted.Seconds != 30 {
		t.Errorf("quiet %+v, faulted %+v; want p99 3 ms and 1000 ms over the 30 s", r.Quiet, r.Faulted)
	}
	var out bytes.Buffer
	r.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != "rabbitmq-postgres lost=0 duplicated=0 phantom=0 faults=4" {
		t.Errorf("last line %q", last)
	}
}

// TestARunNotCarriedOutSaysSoInItsLastLine: a mode whose servers did not
// start has nothing lost because nothing ran; its last line must not read
// like a clean run's.
func TestARunNotCarriedOutSaysSoInItsLastLine(t *testing.T) {
	r := Report{Mode: "sqs-postgres", Error: "start the SQS stand-in: fauxqs is not installed"}
	var out bytes.Buffer
	r.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != "sqs-postgres not run: start the SQS stand-in: fauxqs is not installed" {
		t.Errorf("last line %q", last)
	}
	if r.OK() {
		t.Error("a run not carried out reports OK")
	}
}
