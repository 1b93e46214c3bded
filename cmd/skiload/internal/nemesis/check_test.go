package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skidata/skidata/cmd/skiload/internal/loadgen"
)

// history is n rides posted a tenth of a second apart, each answered 201
// unless refused says otherwise, and what a store holding each once
// would answer.
func history(l load, n int, refused map[int]int) (History, Stored) {
	var h History
	stored := Stored{}
	for i := range n {
		at := time.Duration(i) * 100 * time.Millisecond
		status := 201
		if s, ok := refused[i]; ok {
			status = s
		}
		h.Ops = append(h.Ops, Op{Kind: OpPost, N: i, Ride: l.ride(i), Start: at, Sent: at, End: at + 10*time.Millisecond, Status: status})
		if status == 201 {
			stored[l.ride(i)] = 1
		}
	}
	return h, stored
}

// totalsOf is what the API answers when it counts exactly the stored
// rows.
func totalsOf(stored Stored) Totals {
	t := Totals{Day: map[SkierDay]int64{}, Season: map[SkierSeason]int64{}, Skiers: map[ResortDay]int64{}}
	for r, n := range stored {
		if _, counted := t.Day[dayOf(r)]; !counted {
			t.Skiers[resortDayOf(r)]++
		}
		t.Day[dayOf(r)] += int64(n) * r.Vertical()
		t.Season[seasonOf(r)] += int64(n) * r.Vertical()
	}
	return t
}

var testLoad = load{Skiers: 7, FirstSkier: 1000, Seed: 99, GetEvery: 5}

// TestCheckFindsALostADoubledAndAPhantomRide: in a history of 100 rides,
// one answered 201 is missing from the store, one is there twice, one
// never sent is there; two answered 503 are allowed (one stored once, one
// not). The checker finds exactly those three, names each ride, gives
// the lost and the doubled ride their POSTs and the lost one the fault
// active when it was posted; and the mode's report fails (the run exits
// 1 on it) with its last line counting each.
func TestCheckFindsALostADoubledAndAPhantomRide(t *testing.T) {
	h, stored := history(testLoad, 100, map[int]int{40: 503, 41: 503})
	stored[testLoad.ride(40)] = 1 // a 503 whose publish went through after all: allowed
	lost, doubled := testLoad.ride(10), testLoad.ride(20)
	phantom := loadgen.Ride{ResortID: 1, Season: 2025, Day: 1, SkierID: 1003, Time: 900, LiftID: 7}
	delete(stored, lost)
	stored[doubled] = 2
	stored[phantom] = 1
	h.Faults = []Fault{
		{Kind: Pause, Target: "consumer", Start: 900 * time.Millisecond, End: 1100 * time.Millisecond},
		{Kind: Kill, Target: "api", Start: 8 * time.Second, End: 9 * time.Second},
	}
	v := Check(h, stored, totalsOf(stored), Eventually)

	if v.Sent != 100 || v.Created != 98 || v.Refused != 2 || v.Stored != 99 {
		t.Errorf("sent %d, created %d, refused %d, stored %d; want 100, 98, 2, 99 (97 answered 201, a 503, the phantom)", v.Sent, v.Created, v.Refused, v.Stored)
	}
	if v.Lost != 1 || v.Duplicated != 1 || v.Phantom != 1 {
		t.Errorf("lost %d, duplicated %d, phantom %d; want 1 each", v.Lost, v.Duplicated, v.Phantom)
	}
	want := map[string]string{Lost: rideName(10, lost), Duplicated: rideName(20, doubled), Phantom: rideName(-1, phantom)}
	if len(v.Violations) != len(want) {
		t.Fatalf("%d violations; want exactly %d:\n%v", len(v.Violations), len(want), v.Violations)
	}
	for _, viol := range v.Violations {
		if want[viol.Kind] != viol.What {
			t.Errorf("%s violation about %q; want it about %q", viol.Kind, viol.What, want[viol.Kind])
		}
		if viol.Kind == Duplicated && (len(viol.Ops) != 1 || viol.Ops[0].N != 20) {
			t.Errorf("the doubled ride's history %v; want its POST", viol.Ops)
		}
		if viol.Kind == Lost {
			if len(viol.Ops) != 1 || viol.Ops[0].N != 10 || viol.Ops[0].Status != 201 {
				t.Errorf("the lost ride's history %v; want its POST answered 201", viol.Ops)
			}
			if len(viol.Faults) != 1 || viol.Faults[0].Kind != Pause {
				t.Errorf("faults around the lost ride %v; want the pause active when it was posted", viol.Faults)
			}
			if !strings.Contains(viol.String(), "fault pause consumer") {
				t.Errorf("the violation's text does not name the fault:\n%s", viol)
			}
		}
	}
	r := Report{Mode: "inproc-postgres"}
	r.fill(h, v, nil, nil)
	if r.OK() {
		t.Error("the report of a run with a lost, a doubled and a phantom ride is OK; the run would exit 0")
	}
	if line := r.Line(); line != "inproc-postgres lost=1 duplicated=1 phantom=1 faults=2" {
		t.Errorf("last line %q", line)
	}
}

// TestCheckFindsTotalsThatDoNotMatchTheStoredRides: a store whose rows
// are right but whose API counts a ride twice in a day vertical (as a
// counter model could), misses one from a season total, misses a skier
// from a resort-day's unique skiers (as a marker never written would), or
// answered a read during the run above what is stored: each is a
// violation, though every row is right.
func TestCheckFindsTotalsThatDoNotMatchTheStoredRides(t *testing.T) {
	h, stored := history(testLoad, 50, nil)
	totals := totalsOf(stored)
	over, short := dayOf(testLoad.ride(3)), seasonOf(testLoad.ride(4))
	totals.Day[over] += testLoad.ride(3).Vertical()
	totals.Season[short] -= testLoad.ride(4).Vertical()
	totals.Skiers[resortDayOf(testLoad.ride(5))]--
	read := Op{Kind: OpDay, Ride: loadgen.Ride{ResortID: 1, Season: 2025, Day: 1, SkierID: testLoad.ride(5).SkierID}, Sent: time.Second, End: time.Second + time.Millisecond, Status: 200}
	read.Value = totalsOf(stored).Day[dayOf(read.Ride)] + 10
	h.Ops = append(h.Ops, read)
	v := Check(h, stored, totals, Eventually)
	got := map[string]int{}
	for _, viol := range v.Violations {
		got[viol.Kind]++
	}
	if got[TotalOver] != 1 || got[TotalShort] != 2 || got[ReadOver] != 1 || len(v.Violations) != 4 {
		t.Errorf("violations %v; want one total over, two short (a season total, a resort-day's skiers), one read over:\n%v", got, v.Violations)
	}
	if v.Lost != 2 || v.Duplicated != 2 || v.Phantom != 0 {
		t.Errorf("lost %d, duplicated %d, phantom %d; want 2 (the short total and skiers), 2 (the total and the read over), 0", v.Lost, v.Duplicated, v.Phantom)
	}
}

// TestCheckPassesAHistoryWhereEveryRideIsAccountedFor, with reads that
// went backwards counted but not held against it (Eventually: a queue
// between the API and the store promises no order of reads).
func TestCheckPassesAHistoryWhereEveryRideIsAccountedFor(t *testing.T) {
	h, stored := history(testLoad, 60, map[int]int{7: 503, 8: 0})
	day := loadgen.Ride{ResortID: 1, Season: 2025, Day: 1, SkierID: testLoad.ride(0).SkierID}
	for i, value := range []int64{30, 10} { // the second read, sent after the first ended, is lower
		at := time.Duration(i) * time.Second
		h.Ops = append(h.Ops, Op{Kind: OpDay, Ride: day, Sent: at, End: at + time.Millisecond, Status: 200, Value: value})
	}
	v := Check(h, stored, totalsOf(stored), Eventually)
	if !v.OK() || v.Lost+v.Duplicated+v.Phantom != 0 {
		t.Errorf("violations in a clean history: %v", v.Violations)
	}
	if v.BackwardReads != 1 {
		t.Errorf("%d backward reads; want the one", v.BackwardReads)
	}
	if v.Created != 58 || v.Refused != 2 {
		t.Errorf("created %d, refused %d; want 58, 2", v.Created, v.Refused)
	}
}

// TestCheckHoldsReadsToACommittedStoresPromise: where a 201 means the
// store committed the ride and reads ask that store (inproc-postgres;
// docs/postgres.md: the read right after the 201 sees it), a read that
// misses a ride answered 201 before it was sent, and one that answers
// less than a read that had ended before it, are each a violation naming
// the read; where a queue stands between the two, both are counted and
// allowed.
func TestCheckHoldsReadsToACommittedStoresPromise(t *testing.T) {
	h, stored := history(testLoad, 30, nil)
	// Rides 0, 7, 14, 21 and 28 are skier 1000's, posted at 0, 0.7, 1.4,
	// 2.1 and 2.8 s and answered 10 ms later.
	day := testLoad.ride(0)
	want := func(rides ...int) int64 {
		var sum int64
		for _, n := range rides {
			sum += testLoad.ride(n).Vertical()
		}
		return sum
	}
	read := func(kind string, at time.Duration, value int64) Op {
		return Op{Kind: kind, Ride: day, Start: at, Sent: at, End: at + 5*time.Millisecond, Status: 200, Value: value}
	}
	h.Ops = append(h.Ops,
		read(OpDay, 800*time.Millisecond, want(0, 7)),         // right: both answered before it was sent
		read(OpDay, 1500*time.Millisecond, want(0)),           // stale: misses rides 7 and 14, answered 201 before it
		read(OpSeason, 1405*time.Millisecond, want(0, 7)),     // right: ride 14's answer came at 1.41 s, after it was sent
		read(OpSeason, 3*time.Second, want(0, 7, 14, 21, 28)), // right
		read(OpSeason, 3100*time.Millisecond, want(0, 7, 14, 21, 28)),
	)
	// A second reader of the day sees more than was answered 201 yet (a
	// ride stored before its answer), then a read after it sees less:
	// that read went backwards but missed no ride answered 201.
	h.Ops = append(h.Ops,
		read(OpDay, 2000*time.Millisecond, want(0, 7, 14, 21)),
		read(OpDay, 2050*time.Millisecond, want(0, 7, 14)),
	)

	strict := Check(h, stored, totalsOf(stored), AfterCommit)
	got := map[string][]string{}
	for _, v := range strict.Violations {
		got[v.Kind] = append(got[v.Kind], fmt.Sprintf("%s at %.2fs", v.What, v.Ops[0].Sent.Seconds()))
	}
	dayKey := OpDay + " " + dayOf(day).String()
	if len(got[ReadStale]) != 1 || got[ReadStale][0] != dayKey+" at 1.50s" ||
		len(got[ReadBackward]) != 2 || len(strict.Violations) != 3 {
		t.Errorf("violations %v; want the day read at 1.5 s stale, and it and the one at 2.05 s backward", got)
	}
	if strict.StaleReads != 1 || strict.BackwardReads != 2 {
		t.Errorf("%d stale, %d backward reads; want 1 and 2", strict.StaleReads, strict.BackwardReads)
	}
	for _, v := range strict.Violations {
		if v.Kind == ReadStale && !strings.Contains(v.Detail, fmt.Sprint(want(0, 7, 14))) {
			t.Errorf("the stale read's violation does not give the sum of the rides answered 201 before it: %s", v)
		}
		if v.Kind == ReadBackward && len(v.Ops) != 2 {
			t.Errorf("a backward read's violation without the read it went below: %s", v)
		}
	}

	loose := Check(h, stored, totalsOf(stored), Eventually)
	if !loose.OK() || loose.StaleReads != 1 || loose.BackwardReads != 2 {
		t.Errorf("behind a queue: violations %v, %d stale, %d backward; want none, 1 and 2 counted", loose.Violations, loose.StaleReads, loose.BackwardReads)
	}
}

// TestRidesAreUniqueAndGETsFollowTheirSkier: the load's ride numbers map
// to distinct rides, every GetEvery-th request is a GET about the skier
// just posted, and no ride number is skipped.
func TestRidesAreUniqueAndGETsFollowTheirSkier(t *testing.T) {
	l := load{Skiers: 50, FirstSkier: 1000, Seed: 7, GetEvery: 5, Count: 200_000}
	seen := map[loadgen.Ride]int{}
	next := 0
	for j := range l.Count {
		kind, n := l.op(j)
		if kind == OpPost {
			if n != next {
				t.Fatalf("request %d posts ride %d; want %d", j, n, next)
			}
			next++
			r := l.ride(n)
			if prev, dup := seen[r]; dup {
				t.Fatalf("rides %d and %d are the same ride %+v", prev, n, r)
			}
			if r.Time < 0 || r.Time > 1439 || r.LiftID < 1 || r.LiftID > 40 || r.Day < 1 || r.Day > 366 {
				t.Fatalf("ride %d = %+v: outside the API's bounds", n, r)
			}
			seen[r] = n
			continue
		}
		if j%5 != 4 || n != next-1 {
			t.Fatalf("request %d is a GET about ride %d; want every fifth, about the ride just posted (%d)", j, n, next-1)
		}
	}
	if l.Rides() != next || next != 160_000 {
		t.Errorf("Rides() = %d, posted %d; want 160000", l.Rides(), next)
	}
	kinds := map[string]bool{}
	for j := 4; j < 20; j += 5 {
		k, _ := l.op(j)
		kinds[k] = true
	}
	if !kinds[OpDay] || !kinds[OpSeason] {
		t.Errorf("the GETs are %v; want day verticals and season totals in turn", kinds)
	}
	if slices.Equal([]int32{l.ride(0).LiftID, l.ride(1).LiftID, l.ride(2).LiftID}, []int32{l.ride(0).LiftID, l.ride(0).LiftID, l.ride(0).LiftID}) {
		t.Errorf("the first rides share a lift; want lifts drawn from the seed")
	}
}
