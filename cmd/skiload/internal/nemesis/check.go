package nemesis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// Stored is what the store holds once the queue has drained, read from
// its rows directly (not through the API): how many times each ride is
// there.
type Stored map[loadgen.Ride]int

// SkierDay is what a day-vertical GET asks about.
type SkierDay struct{ Resort, Season, Day, Skier int32 }

// SkierSeason is what a season-totals GET asks about.
type SkierSeason struct{ Resort, Season, Skier int32 }

// ResortDay is what a resort-day unique-skiers GET asks about.
type ResortDay struct{ Resort, Season, Day int32 }

// Totals is what the API answered, after the drain, about every skier-day,
// skier-season and resort-day the load posted rides for.
type Totals struct {
	Day    map[SkierDay]int64
	Season map[SkierSeason]int64
	// Skiers is each resort-day's unique skiers.
	Skiers map[ResortDay]int64
}

// Kinds of violation.
const (
	Lost       = "lost"       // answered 201, not stored
	Duplicated = "duplicated" // stored more than once
	Phantom    = "phantom"    // stored, never sent
	// A total the API answered after the drain, short of or over the sum
	// of the stored rides (or a resort-day's unique skiers, of the
	// distinct skiers of its stored rides): a stored ride the read path
	// does not count, or counts twice.
	TotalShort = "total-short"
	TotalOver  = "total-over"
	// A read during the run above the final sum: it counted a ride that
	// is not stored, or one twice (rides are never deleted, so a total
	// can only grow).
	ReadOver = "read-over"
	// Where the mode's reads promise it (AfterCommit): a read during the
	// run that missed a ride answered 201 before it was sent, or answered
	// less than a read of the same total that had ended before it was
	// sent.
	ReadStale    = "read-stale"
	ReadBackward = "read-backward"
	// The run's own findings about the processes: not serving or ready
	// again by the deadline after the faults healed, no exit within the
	// shutdown budget of a SIGTERM, or a crash (Go panic or runtime
	// fatal error) in a process's log.
	NotRecovered = "not-recovered"
	Hang         = "hang"
	Crash        = "crash"
)

// Violation is one broken promise, with what the checker knows about it.
type Violation struct {
	Kind string `json:"kind"`
	// What names the ride, the skier-day or the process.
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
	// Ops are the requests about it (for a total, the last reads of it).
	Ops []Op `json:"ops,omitempty"`
	// Faults are those active while its requests were in flight, or in
	// the few seconds after, when a ride answered 201 was still on its
	// way to the store.
	Faults []Fault `json:"faults,omitempty"`
}

func (v Violation) String() string {
	s := v.Kind + ": " + v.What
	if v.Detail != "" {
		s += " (" + v.Detail + ")"
	}
	for _, o := range v.Ops {
		s += fmt.Sprintf("\n    %s sent %.3fs answered %.3fs: status %d %s", o.Kind, o.Sent.Seconds(), o.End.Seconds(), o.Status, o.Err)
		if o.Read() {
			s += fmt.Sprintf(" value %d", o.Value)
		}
	}
	for _, f := range v.Faults {
		s += fmt.Sprintf("\n    fault %s %s %s from %.3fs to %.3fs", f.Kind, f.Target, f.Detail, f.Start.Seconds(), f.End.Seconds())
	}
	return s
}

// Verdict is what the checker found.
type Verdict struct {
	// Sent is the rides posted; Created those answered 201; Refused those
	// answered anything else or nothing; Stored the rides in the store
	// (each counted once).
	Sent, Created, Refused, Stored int
	// Lost counts rides answered 201 and not stored, and totals short of
	// the stored rides; Duplicated rides stored more than once, and
	// totals or reads over them; Phantom rides stored but never sent.
	Lost, Duplicated, Phantom int
	Violations                []Violation
	// BackwardReads counts reads of a skier-day or skier-season that
	// answered less than a read of it that had ended before they were
	// sent; StaleReads those that missed a ride of it answered 201 before
	// they were sent. Violations only where the mode's Reads promise
	// otherwise; counted in every mode.
	BackwardReads, StaleReads int
}

// Reads is what a mode's documentation promises of a read during the run.
type Reads int

const (
	// Eventually: a queue stands between the API and the store, so a
	// ride answered 201 is stored moments later (README, "Modes"): a read
	// may miss it, and two reads may see the store before and after a
	// batch in either order of their answers. Nothing is held.
	Eventually Reads = iota
	// AfterCommit: a 201 comes once the store committed the ride, and
	// reads ask that store (docs/postgres.md: "the 201 came once
	// PostgreSQL had committed the ride, so the read right after it sees
	// it"): a read counts every ride answered 201 before it was sent, and
	// never answers less than a read that had ended before it was sent
	// (what that read counted was committed, and rides are never deleted).
	AfterCommit
)

// OK reports whether nothing was violated.
func (v Verdict) OK() bool { return len(v.Violations) == 0 }

// aftermath is how long after a request's answer a fault still counts as
// one that may have hit it: a ride answered 201 is in a queue or a batch
// for a moment after.
const aftermath = 5 * time.Second

// Check holds the history against the rows the store holds and the totals
// the API answered after the drain: every ride answered 201 stored
// exactly once; a ride answered otherwise stored at most once; nothing
// stored that was never sent; every total equal to the sum of the stored
// rides, and every resort-day's unique skiers to the distinct skiers of
// its stored rides; no read during the run above the sum; and, where
// reads promise it (AfterCommit), no read missing a ride answered 201
// before it or below a read that ended before it.
func Check(h History, stored Stored, totals Totals, promise Reads) Verdict {
	var v Verdict
	posts := map[loadgen.Ride][]Op{}
	var order []loadgen.Ride
	for _, o := range h.Ops {
		if o.Kind != OpPost {
			continue
		}
		if posts[o.Ride] == nil {
			order = append(order, o.Ride)
		}
		posts[o.Ride] = append(posts[o.Ride], o)
	}
	faultsAround := func(ops []Op) []Fault {
		var out []Fault
		for _, f := range h.Faults {
			for _, o := range ops {
				if f.Active(o.Sent, o.End+aftermath) {
					out = append(out, f)
					break
				}
			}
		}
		return out
	}
	v.Sent, v.Created, v.Refused = tally(h.Ops)
	for _, r := range order {
		ops := posts[r]
		created := slices.ContainsFunc(ops, func(o Op) bool { return o.Status == 201 })
		switch n := stored[r]; {
		case created && n == 0:
			v.Lost++
			v.Violations = append(v.Violations, Violation{Kind: Lost, What: rideName(ops[0].N, r), Detail: "answered 201, not in the store", Ops: ops, Faults: faultsAround(ops)})
		case n > 1:
			v.Duplicated++
			v.Violations = append(v.Violations, Violation{Kind: Duplicated, What: rideName(ops[0].N, r), Detail: fmt.Sprintf("stored %d times", n), Ops: ops, Faults: faultsAround(ops)})
		}
	}
	for _, r := range slices.SortedFunc(maps.Keys(stored), compareRides) {
		if stored[r] > 0 {
			v.Stored++
		}
		if posts[r] == nil && stored[r] > 0 {
			v.Phantom++
			v.Violations = append(v.Violations, Violation{Kind: Phantom, What: rideName(-1, r), Detail: fmt.Sprintf("stored %d times, never sent", stored[r])})
		}
	}

	// The sums the API must answer: every stored row counts.
	daySum := map[SkierDay]int64{}
	seasonSum := map[SkierSeason]int64{}
	skierDays := map[SkierDay]bool{}
	for r, n := range stored {
		daySum[dayOf(r)] += int64(n) * r.Vertical()
		seasonSum[seasonOf(r)] += int64(n) * r.Vertical()
		if n > 0 {
			skierDays[dayOf(r)] = true
		}
	}
	skiers := map[ResortDay]int64{} // the distinct skiers of each resort-day's stored rides
	for d := range skierDays {
		skiers[ResortDay{d.Resort, d.Season, d.Day}]++
	}
	reads := map[string][]Op{}
	answered := answered201(h.Ops)
	for _, o := range h.Ops {
		if o.Read() {
			k := readKey(o)
			reads[k] = append(reads[k], o)
		}
	}
	final := func(kind, what string, got, want int64) {
		switch {
		case got < want:
			v.Lost++
		case got > want:
			v.Duplicated++
		default:
			return
		}
		k := map[bool]string{true: TotalShort, false: TotalOver}[got < want]
		ops := reads[kind+" "+what]
		sum := "the stored rides sum to"
		if kind == OpSkiers {
			sum = "the stored rides are of"
		}
		v.Violations = append(v.Violations, Violation{Kind: k, What: kind + " " + what,
			Detail: fmt.Sprintf("the API answered %d after the drain; %s %d", got, sum, want), Ops: ops[max(0, len(ops)-5):]})
	}
	for _, d := range slices.SortedFunc(maps.Keys(totals.Day), compareDays) {
		final(OpDay, d.String(), totals.Day[d], daySum[d])
	}
	for _, s := range slices.SortedFunc(maps.Keys(totals.Season), compareSeasons) {
		final(OpSeason, s.String(), totals.Season[s], seasonSum[s])
	}
	for _, d := range slices.SortedFunc(maps.Keys(totals.Skiers), compareResortDays) {
		final(OpSkiers, d.String(), totals.Skiers[d], skiers[d])
	}
	for _, k := range slices.Sorted(maps.Keys(reads)) {
		ops := reads[k]
		var want int64
		if ops[0].Kind == OpDay {
			want = daySum[dayOf(ops[0].Ride)]
		} else {
			want = seasonSum[seasonOf(ops[0].Ride)]
		}
		for _, o := range ops {
			if o.Value > want {
				v.Duplicated++
				v.Violations = append(v.Violations, Violation{Kind: ReadOver, What: k,
					Detail: fmt.Sprintf("read %d during the run; the stored rides sum to %d", o.Value, want), Ops: []Op{o}, Faults: faultsAround([]Op{o})})
			}
		}
		stale := staleReads(ops, answered[k])
		back := backwardReads(ops)
		v.StaleReads += len(stale)
		v.BackwardReads += len(back)
		if promise != AfterCommit {
			continue
		}
		for _, s := range stale {
			v.Violations = append(v.Violations, Violation{Kind: ReadStale, What: k,
				Detail: fmt.Sprintf("read %d; the rides of it answered 201 before it was sent sum to %d", s.read.Value, s.want),
				Ops:    []Op{s.read}, Faults: faultsAround([]Op{s.read})})
		}
		for _, b := range back {
			v.Violations = append(v.Violations, Violation{Kind: ReadBackward, What: k,
				Detail: fmt.Sprintf("read %d; a read of it that ended before it was sent read %d", b[0].Value, b[1].Value),
				Ops:    b[:], Faults: faultsAround(b[:])})
		}
	}
	return v
}

// answered201 is, by read key, the POSTs answered 201 of the rides each
// total counts, by the end of their answer.
func answered201(ops []Op) map[string][]Op {
	out := map[string][]Op{}
	for _, o := range ops {
		if o.Kind == OpPost && o.Status == 201 {
			for _, k := range []string{OpDay + " " + dayOf(o.Ride).String(), OpSeason + " " + seasonOf(o.Ride).String()} {
				out[k] = append(out[k], o)
			}
		}
	}
	for _, posts := range out {
		slices.SortFunc(posts, func(a, b Op) int { return cmp.Compare(a.End, b.End) })
	}
	return out
}

// stale is a read that missed rides answered 201 before it was sent:
// want is their sum.
type stale struct {
	read Op
	want int64
}

// staleReads are the reads of one total that answered less than the sum
// of its rides answered 201 before they were sent (posts by End).
func staleReads(reads, posts []Op) []stale {
	bySent := slices.Clone(reads)
	slices.SortFunc(bySent, func(a, b Op) int { return cmp.Compare(a.Sent, b.Sent) })
	var out []stale
	var sum int64
	j := 0
	for _, o := range bySent {
		for j < len(posts) && posts[j].End < o.Sent {
			sum += posts[j].Ride.Vertical()
			j++
		}
		if o.Value < sum {
			out = append(out, stale{o, sum})
		}
	}
	return out
}

// tally counts the rides sent, those answered 201 and those answered
// otherwise (or not at all). Every ride is posted once.
func tally(ops []Op) (sent, created, refused int) {
	for _, o := range ops {
		switch {
		case o.Kind != OpPost:
		case o.Status == 201:
			created++
		default:
			refused++
		}
	}
	return created + refused, created, refused
}

// backwardReads are the reads that answered less than a read which had
// ended before they were sent, each with the highest such read.
func backwardReads(ops []Op) [][2]Op {
	bySent := slices.Clone(ops)
	slices.SortFunc(bySent, func(a, b Op) int { return cmp.Compare(a.Sent, b.Sent) })
	byEnd := slices.Clone(ops)
	slices.SortFunc(byEnd, func(a, b Op) int { return cmp.Compare(a.End, b.End) })
	var out [][2]Op
	j := 0
	var best Op // the highest read among those ended before the current one was sent
	best.Value = -1
	for _, o := range bySent {
		for j < len(byEnd) && byEnd[j].End < o.Sent {
			if byEnd[j].Value > best.Value {
				best = byEnd[j]
			}
			j++
		}
		if o.Value < best.Value {
			out = append(out, [2]Op{o, best})
		}
	}
	return out
}

func dayOf(r loadgen.Ride) SkierDay {
	return SkierDay{r.ResortID, r.Season, r.Day, r.SkierID}
}

func seasonOf(r loadgen.Ride) SkierSeason {
	return SkierSeason{r.ResortID, r.Season, r.SkierID}
}

func resortDayOf(r loadgen.Ride) ResortDay {
	return ResortDay{r.ResortID, r.Season, r.Day}
}

func readKey(o Op) string {
	switch o.Kind {
	case OpDay:
		return OpDay + " " + dayOf(o.Ride).String()
	case OpSkiers:
		return OpSkiers + " " + resortDayOf(o.Ride).String()
	}
	return OpSeason + " " + seasonOf(o.Ride).String()
}

func (d SkierDay) String() string {
	return fmt.Sprintf("skier %d, resort %d, season %d, day %d", d.Skier, d.Resort, d.Season, d.Day)
}

func (d ResortDay) String() string {
	return fmt.Sprintf("resort %d, season %d, day %d", d.Resort, d.Season, d.Day)
}

func (s SkierSeason) String() string {
	return fmt.Sprintf("skier %d, resort %d, season %d", s.Skier, s.Resort, s.Season)
}

// rideName is a ride in words, with its number in the load (n < 0: none).
func rideName(n int, r loadgen.Ride) string {
	s := fmt.Sprintf("resort %d, season %d, day %d, skier %d, time %d, lift %d", r.ResortID, r.Season, r.Day, r.SkierID, r.Time, r.LiftID)
	if n >= 0 {
		s = fmt.Sprintf("ride #%d (%s)", n, s)
	}
	return s
}

func compareRides(a, b loadgen.Ride) int {
	return cmp.Or(cmp.Compare(a.ResortID, b.ResortID), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Day, b.Day),
		cmp.Compare(a.SkierID, b.SkierID), cmp.Compare(a.Time, b.Time), cmp.Compare(a.LiftID, b.LiftID))
}

func compareDays(a, b SkierDay) int {
	return cmp.Or(cmp.Compare(a.Resort, b.Resort), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Day, b.Day), cmp.Compare(a.Skier, b.Skier))
}

func compareResortDays(a, b ResortDay) int {
	return cmp.Or(cmp.Compare(a.Resort, b.Resort), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Day, b.Day))
}

func compareSeasons(a, b SkierSeason) int {
	return cmp.Or(cmp.Compare(a.Resort, b.Resort), cmp.Compare(a.Season, b.Season), cmp.Compare(a.Skier, b.Skier))
}
