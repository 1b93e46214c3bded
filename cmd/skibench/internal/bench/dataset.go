package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// DataSet describes the rides to load: Rides rides drawn uniformly from
// SkierID 1..Skiers, ResortID 1..Resorts, LiftID 1..Lifts, Time 1..Times
// and DayID 1..Days of Season, by a PCG generator seeded with Seed, so the
// same flags give the same rides on every machine and run.
type DataSet struct {
	Seed    uint64
	Rides   int
	Skiers  int32
	Resorts int32
	Lifts   int32
	Times   int32
	Days    int
	Season  string
}

// DefaultDataSet is the data set: 100,000 skiers at 10 resorts with
// 40 lifts, times 1..360, season 2024.
func DefaultDataSet() DataSet {
	return DataSet{Seed: 42, Rides: 200_000, Skiers: 100_000, Resorts: 10, Lifts: 40, Times: 360, Days: 10, Season: "2024"}
}

func (d DataSet) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(d.Seed, stream))
}

// Generate returns the data set's rides, always the same for the same
// DataSet. It may hold a ride twice (a redelivery, as the stores must
// tolerate): every store counts it once.
func (d DataSet) Generate() ([]domain.LiftRide, error) {
	r := d.rng(1)
	out := make([]domain.LiftRide, d.Rides)
	for i := range out {
		ride, err := domain.NewLiftRide(
			domain.ResortID(1+r.Int32N(d.Resorts)), d.Season, 1+r.IntN(d.Days), domain.SkierID(1+r.Int32N(d.Skiers)),
			1+r.Int32N(d.Times), 1+r.Int32N(d.Lifts))
		if err != nil {
			return nil, fmt.Errorf("data set ride %d: %w", i, err)
		}
		out[i] = ride
	}
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
	Season string
	Day    int
	Skier  domain.SkierID
}

// Queries returns n queries of each kind, interleaved by kind. Each is about
// a ride picked at random from rides (so it has an answer), except that one
// query in ten of each kind asks about a day, skier or resort drawn from the
// whole ranges, which usually has none.
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
				q = Query{Resort: domain.ResortID(1 + r.Int32N(d.Resorts)), Season: d.Season, Day: 1 + r.IntN(d.Days), Skier: domain.SkierID(1 + r.Int32N(d.Skiers))}
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
