package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// DataSet describes the rides to load: Rides rides drawn uniformly from
// SkierID 1..Skiers, ResortID 1..Resorts, LiftID 1..Lifts, Time 1..Times
// and DayID 1..Days of Season, by a PCG generator seeded with Seed, so the
// same flags give the same rides on every machine and run.
type DataSet struct {
	// Workload is WorkloadSparse or WorkloadDense.
	Workload string
	Seed     uint64
	Rides    int
	Skiers   int32
	Resorts  int32
	Lifts    int32
	Times    int32
	Days     int
	Season   domain.Season
}

// DefaultDataSet is the data set: 100,000 skiers at 10 resorts with
// 40 lifts, times 1..360, season 2024.
func DefaultDataSet() DataSet {
	return DataSet{Workload: WorkloadSparse, Seed: 42, Rides: 200_000, Skiers: 100_000, Resorts: 10, Lifts: 40, Times: 360, Days: 10, Season: domain.MustSeason("2024")}
}

func (d DataSet) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(d.Seed, stream))
}

// The workloads.
const (
	// WorkloadSparse draws every ride independently: a skier's rides of a
	// day are rare and scattered through the load.
	WorkloadSparse = "sparse"
	// WorkloadDense gives each skier-day RidesPerSkierDay rides in time
	// order through the day, and loads the days in order with every
	// skier's rides interleaved by time, as the lifts would send them.
	WorkloadDense = "dense"
)

// RidesPerSkierDay is the dense workload's rides a skier-day.
const RidesPerSkierDay = 20

// Generate returns the data set's rides, always the same for the same
// DataSet. It may hold a ride twice (a redelivery, as the stores must
// tolerate): every store counts it once.
func (d DataSet) Generate() ([]domain.LiftRide, error) {
	switch d.Workload {
	case WorkloadDense:
		return d.dense()
	case WorkloadSparse, "":
	default:
		return nil, fmt.Errorf("unknown workload %q (sparse or dense)", d.Workload)
	}
	r := d.rng(1)
	out := make([]domain.LiftRide, d.Rides)
	for i := range out {
		resort := domain.ResortID(1 + r.Int32N(d.Resorts))
		day, err := domain.NewDay(1 + r.IntN(d.Days))
		if err != nil {
			return nil, fmt.Errorf("data set ride %d: %w", i, err)
		}
		ride, err := domain.NewLiftRide(resort, d.Season, day, domain.SkierID(1+r.Int32N(d.Skiers)), 1+r.Int32N(d.Times), 1+r.Int32N(d.Lifts))
		if err != nil {
			return nil, fmt.Errorf("data set ride %d: %w", i, err)
		}
		out[i] = ride
	}
	return out, nil
}

func (d DataSet) dense() ([]domain.LiftRide, error) {
	r := d.rng(3)
	out := make([]domain.LiftRide, 0, d.Rides)
	for len(out) < d.Rides {
		resort := domain.ResortID(1 + r.Int32N(d.Resorts))
		day, err := domain.NewDay(1 + r.IntN(d.Days))
		if err != nil {
			return nil, fmt.Errorf("data set ride %d: %w", len(out), err)
		}
		skier := domain.SkierID(1 + r.Int32N(d.Skiers))
		n := min(RidesPerSkierDay, d.Rides-len(out), int(d.Times))
		times := r.Perm(int(d.Times))[:n]
		for _, tm := range times {
			ride, err := domain.NewLiftRide(resort, d.Season, day, skier, int32(1+tm), 1+r.Int32N(d.Lifts))
			if err != nil {
				return nil, fmt.Errorf("data set ride %d: %w", len(out), err)
			}
			out = append(out, ride)
		}
	}
	// Day by day, and within a day by time: every skier's day arrives in
	// order, interleaved with the others' (ties in the random order above).
	slices.SortStableFunc(out, func(a, b domain.LiftRide) int {
		return cmp.Or(a.DayID().Compare(b.DayID()), cmp.Compare(a.Time(), b.Time()))
	})
	return out, nil
}

// The query kinds, in report order: one per RideStore question.
const (
	KindUniqueSkiers   = "UniqueSkiers"
	KindDayVertical    = "SkierDayVertical"
	KindSeasonVertical = "SkierSeasonVerticals"
	KindSkierDays      = "SkierDays"
	KindDayRides       = "SkierDayRides"
)

// Kinds lists the query kinds in report order.
var Kinds = []string{KindUniqueSkiers, KindDayVertical, KindSeasonVertical, KindSkierDays, KindDayRides}

// Query is one question of the mix.
type Query struct {
	Kind   string
	Resort domain.ResortID
	Season domain.Season
	Day    domain.Day
	Skier  domain.SkierID
}

// Queries returns n queries of each kind, interleaved by kind. Each is about
// a ride picked at random from rides (so it has an answer), except that one
// query in ten of each kind asks about a day, skier or resort drawn from the
// whole ranges, which usually has none. It follows Generate, which checks
// d's days.
func (d DataSet) Queries(rides []domain.LiftRide, n int) []Query {
	r := d.rng(2)
	out := make([]Query, 0, n*len(Kinds))
	for i := range n {
		for _, kind := range Kinds {
			var q Query
			if len(rides) > 0 && i%10 != 9 {
				ride := rides[r.IntN(len(rides))]
				q = Query{Resort: ride.ResortID(), Season: ride.SeasonID(), Day: ride.DayID(), Skier: ride.SkierID()}
			} else {
				q = Query{Resort: domain.ResortID(1 + r.Int32N(d.Resorts)), Season: d.Season, Day: domain.MustDay(1 + r.IntN(d.Days)), Skier: domain.SkierID(1 + r.Int32N(d.Skiers))}
			}
			q.Kind = kind
			out = append(out, q)
		}
	}
	return out
}

// Ask runs q against the store and renders the answer as text, so answers
// of different stores compare with ==.
func Ask(ctx context.Context, s ports.RideStore, q Query) (string, error) {
	var (
		v   any
		err error
	)
	switch q.Kind {
	case KindUniqueSkiers:
		v, err = s.UniqueSkiers(ctx, q.Resort, q.Season, q.Day)
	case KindDayVertical:
		v, err = s.SkierDayVertical(ctx, q.Resort, q.Season, q.Day, q.Skier)
	case KindSeasonVertical:
		v, err = s.SkierSeasonVerticals(ctx, q.Skier, []domain.ResortID{q.Resort})
	case KindSkierDays:
		v, err = s.SkierDays(ctx, q.Skier, q.Season)
	case KindDayRides:
		v, err = s.SkierDayRides(ctx, q.Skier, q.Season, q.Day)
	default:
		return "", fmt.Errorf("unknown query kind %q", q.Kind)
	}
	if err != nil {
		return "", fmt.Errorf("%s(%+v): %w", q.Kind, q, err)
	}
	return fmt.Sprint(v), nil
}

// Shape is how realistic a data set is, in the terms a resort knows:
// rides a skier makes a day, skiers a resort has a day, over how many
// resorts and days.
type Shape struct {
	Rides           int     `json:"rides"`
	Resorts         int     `json:"resorts"`
	Days            int     `json:"days"`
	Skiers          int     `json:"skiers"`     // distinct skiers with a ride
	SkierDays       int     `json:"skier_days"` // distinct (skier, resort, day)
	RidesPerSkier   float64 `json:"rides_per_skier_day"`
	SkiersPerResort float64 `json:"skiers_per_resort_day"` // mean over the resort-days with a ride
}

// ShapeOf measures rides.
func ShapeOf(rides []domain.LiftRide) Shape {
	type resortDay struct {
		resort domain.ResortID
		day    domain.Day
	}
	type skierDay struct {
		resortDay
		skier domain.SkierID
	}
	resorts, days, skiers := map[domain.ResortID]bool{}, map[domain.Day]bool{}, map[domain.SkierID]bool{}
	rds, sds := map[resortDay]bool{}, map[skierDay]bool{}
	for _, r := range rides {
		rd := resortDay{r.ResortID(), r.DayID()}
		resorts[rd.resort], days[rd.day], skiers[r.SkierID()] = true, true, true
		rds[rd], sds[skierDay{rd, r.SkierID()}] = true, true
	}
	s := Shape{Rides: len(rides), Resorts: len(resorts), Days: len(days), Skiers: len(skiers), SkierDays: len(sds)}
	if len(sds) > 0 {
		s.RidesPerSkier = float64(len(rides)) / float64(len(sds))
		s.SkiersPerResort = float64(len(sds)) / float64(len(rds))
	}
	return s
}

// String is the shape as one sentence.
func (s Shape) String() string {
	return fmt.Sprintf("%d rides: %.1f rides a skier-day, %.0f skiers a resort-day, %d resorts, %d days (%d skier-days)",
		s.Rides, s.RidesPerSkier, s.SkiersPerResort, s.Resorts, s.Days, s.SkierDays)
}
