package memory_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/skidata/skidata/domain"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/ports"
	"github.com/skidata/skidata/test/storetest"
)

func TestRideStoreContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) ports.RideStore { return memory.NewRideStore() }, storetest.Options{Rides: 20000})
}

func TestResortStoreContract(t *testing.T) {
	storetest.RunResorts(t, func(*testing.T) ports.ResortStore { return memory.NewResortStore() })
}

// BenchmarkAddRides writes skiload's default data set (200,000 random rides
// over 100,000 skiers, 10 resorts, 10 days) in the persister's batches of 500.
func BenchmarkAddRides(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rides := make([]domain.LiftRide, 200_000)
	for i := range rides {
		r, err := domain.NewLiftRide(domain.ResortID(rng.Int32N(10)+1), domain.MustSeason("2025"), domain.MustDay(rng.IntN(10)+1), domain.SkierID(rng.Int32N(100_000)+1), rng.Int32N(360), rng.Int32N(40)+1)
		if err != nil {
			b.Fatal(err)
		}
		rides[i] = r
	}
	b.ReportAllocs()
	for b.Loop() {
		s := memory.NewRideStore()
		for batch := range slices.Chunk(rides, 500) {
			if err := s.AddRides(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestADayOfManyRidesKeepsEachRideOnce: past the rides a skier-day's
// duplicate check scans one by one, the day's own set takes over; every
// ride is still stored once, whether sent again in a later batch or twice
// in one.
func TestADayOfManyRidesKeepsEachRideOnce(t *testing.T) {
	ctx := context.Background()
	s := memory.NewRideStore()
	var rides []domain.LiftRide
	var want int64
	for time := int32(0); time < 1000; time++ {
		r := domain.MustLiftRide(1, "2024", 5, 77, time, time%40+1)
		rides = append(rides, r)
		want += int64(r.Vertical())
	}
	for _, batch := range [][]domain.LiftRide{rides[:50], rides, append(rides[500:], rides[500:]...)} {
		if err := s.AddRides(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SkierDayRides(ctx, 77, domain.MustSeason("2024"), domain.MustDay(5))
	if err != nil || len(got) != len(rides) {
		t.Fatalf("SkierDayRides: %d rides, %v; want %d, each once", len(got), err, len(rides))
	}
	if v, err := s.SkierDayVertical(ctx, 1, domain.MustSeason("2024"), domain.MustDay(5), 77); err != nil || v != want {
		t.Errorf("day vertical %d, %v; want %d", v, err, want)
	}
}

// TestABigDayCountsItsSkierOncePerResort: a skier-day past the rides its
// checks scan one by one counts its skier at a resort exactly once, also
// at a resort first ridden after the day became big, and whether the
// rides come in one batch or several.
func TestABigDayCountsItsSkierOncePerResort(t *testing.T) {
	ctx := context.Background()
	s := memory.NewRideStore()
	var rides []domain.LiftRide
	for time := int32(0); time < 300; time++ {
		resort := domain.ResortID(1)
		if time >= 150 && time%2 == 0 {
			resort = 2 // first ridden at the 151st ride
		}
		rides = append(rides, domain.MustLiftRide(resort, "2024", 5, 77, time, time%40+1))
	}
	rides = append(rides, domain.MustLiftRide(2, "2024", 5, 78, 1, 1)) // another skier at resort 2
	for _, batch := range [][]domain.LiftRide{rides[:100], rides[100:200], rides, rides[250:]} {
		if err := s.AddRides(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for resort, want := range map[domain.ResortID]int{1: 1, 2: 2, 3: 0} {
		if n, err := s.UniqueSkiers(ctx, resort, domain.MustSeason("2024"), domain.MustDay(5)); err != nil || n != want {
			t.Errorf("UniqueSkiers(resort %d) = %d, %v; want %d", resort, n, err, want)
		}
	}
	if days, err := s.SkierDays(ctx, 77, domain.MustSeason("2024")); err != nil || !slices.Equal(days, []domain.Day{domain.MustDay(5)}) {
		t.Errorf("SkierDays(77) = %v, %v; want [5]", days, err)
	}
}
