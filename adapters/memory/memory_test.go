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
		r, err := domain.NewLiftRide(domain.ResortID(rng.Int32N(10)+1), "2025", rng.IntN(10)+1, domain.SkierID(rng.Int32N(100_000)+1), rng.Int32N(360), rng.Int32N(40)+1)
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
