package nemesis

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// The kinds of request the load sends.
const (
	OpPost   = "post"   // a ride
	OpDay    = "day"    // a skier's day vertical
	OpSeason = "season" // a skier's season total at the resort
	// OpSkiers is a resort-day's unique skiers: asked once each after the
	// drain, not by the load.
	OpSkiers = "skiers"
)

// Op is one request of the load and what came back. Times are since the
// start of the load.
type Op struct {
	Kind string
	// N is a POST's ride number (its place in the load).
	N int
	// Ride is a POST's ride; for a GET what it asked about: the skier-day
	// (time and lift 0), or the skier's resort and season (day 0 too).
	Ride loadgen.Ride
	// Start is when the open loop meant to send it, Sent when it went
	// out, End when the answer (or the error) came.
	Start, Sent, End time.Duration
	// Status is the answer's; 0 when there was none (refused, reset, or
	// the client's timeout).
	Status int
	Err    string
	// Value is the vertical a GET read (0 for a 404: nothing stored).
	Value int64
}

// Answered reports whether the service answered (any status).
func (o Op) Answered() bool { return o.Status != 0 }

// Read reports whether o is a GET whose answer says what the store holds
// (200, or 404 for nothing).
func (o Op) Read() bool { return o.Kind != OpPost && (o.Status == 200 || o.Status == 404) }

// Fault is one fault the nemesis injected: from Start, when it was
// injected, to End, when what it did was undone (the link healed, the
// process continued, or the process or server killed or stopped was
// serving again).
type Fault struct {
	Kind   string
	Target string
	// Detail is what exactly was done ("stop -m immediate", "latency
	// 400ms ± 100ms").
	Detail     string
	Start, End time.Duration
	// Err is why the fault could not be injected or undone, if so.
	Err string
}

// Active reports whether f was in force at some moment of [from, to].
func (f Fault) Active(from, to time.Duration) bool { return f.Start <= to && f.End >= from }

// Exit is a skiapi process ending, planned (the nemesis killed or stopped
// it) or not.
type Exit struct {
	Process string
	At      time.Duration
	// Incarnation counts the process's starts, from 1.
	Incarnation int
	Status      string
	Planned     bool
	// Tail is the end of what the incarnation logged, for an unplanned
	// exit.
	Tail string
}

// History is everything that happened in a run.
type History struct {
	Ops    []Op
	Faults []Fault
	Exits  []Exit
}

// seconds is a duration as JSON: seconds, to the microsecond.
type seconds time.Duration

func (s seconds) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%.6f", time.Duration(s).Seconds()), nil
}

// MarshalJSON writes o as history.jsonl has it: "op" (post, day or
// season), a POST's "n" and "ride", a GET's "skier", "day" and "value"
// (what it read), "t" the intended start, "sent" and "end" in seconds
// since the run's start, "latency" (end - t, seconds: the open loop's
// latency, from the intended start), "status" (0: no answer) and "err".
func (o Op) MarshalJSON() ([]byte, error) {
	l := struct {
		Op      string        `json:"op"`
		N       *int          `json:"n,omitempty"`
		Ride    *loadgen.Ride `json:"ride,omitempty"`
		Skier   int32         `json:"skier,omitempty"`
		Day     int32         `json:"day,omitempty"`
		Start   seconds       `json:"t"`
		Sent    seconds       `json:"sent"`
		End     seconds       `json:"end"`
		Latency seconds       `json:"latency"`
		Status  int           `json:"status"`
		Err     string        `json:"err,omitempty"`
		Value   *int64        `json:"value,omitempty"`
	}{Op: o.Kind, Start: seconds(o.Start), Sent: seconds(o.Sent), End: seconds(o.End), Latency: seconds(o.End - o.Start), Status: o.Status, Err: o.Err}
	if o.Kind == OpPost {
		l.N, l.Ride = &o.N, &o.Ride
	} else {
		l.Skier, l.Day = o.Ride.SkierID, o.Ride.Day
		if o.Read() {
			l.Value = &o.Value
		}
	}
	return json.Marshal(l)
}

// MarshalJSON writes f as history.jsonl has it ("op":"fault", times in
// seconds since the run's start).
func (f Fault) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Op     string  `json:"op"`
		Kind   string  `json:"kind"`
		Target string  `json:"target"`
		Detail string  `json:"detail,omitempty"`
		Start  seconds `json:"t"`
		End    seconds `json:"end"`
		Err    string  `json:"err,omitempty"`
	}{"fault", f.Kind, f.Target, f.Detail, seconds(f.Start), seconds(f.End), f.Err})
}

// MarshalJSON writes e as history.jsonl has it ("op":"exit").
func (e Exit) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Op          string  `json:"op"`
		Process     string  `json:"process"`
		At          seconds `json:"t"`
		Incarnation int     `json:"incarnation"`
		Status      string  `json:"status"`
		Planned     bool    `json:"planned"`
		Tail        string  `json:"tail,omitempty"`
	}{"exit", e.Process, seconds(e.At), e.Incarnation, e.Status, e.Planned, e.Tail})
}

// WriteHistory writes h as JSON lines: every request in the order the
// load scheduled them, then every fault by its start, then every process
// exit.
func WriteHistory(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	faults := slices.Clone(h.Faults)
	slices.SortStableFunc(faults, func(a, b Fault) int { return cmp.Compare(a.Start, b.Start) })
	for _, v := range slices.Concat(anys(h.Ops), anys(faults), anys(h.Exits)) {
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
