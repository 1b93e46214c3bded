package postgres

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
)

// loadRides makes n rides spread like a real season (many skiers, resorts
// and days), with dupes exact copies of earlier rides mixed in, as a client
// retrying its POSTs would produce.
func loadRides(seed uint64, n, dupes int) []domain.LiftRide {
	rng := rand.New(rand.NewPCG(seed, 11))
	rides := make([]domain.LiftRide, 0, n+dupes)
	for range n {
		rides = append(rides, domain.MustLiftRide(domain.ResortID(1+rng.Int32N(10)), []string{"2024", "2025"}[rng.IntN(2)], 1+rng.IntN(30), domain.SkierID(1+rng.Int32N(20000)), rng.Int32N(360), 1+rng.Int32N(40)))
	}
	for range dupes {
		rides = append(rides, rides[rng.IntN(n)])
	}
	rng.Shuffle(len(rides), func(i, j int) { rides[i], rides[j] = rides[j], rides[i] })
	return rides
}

func TestLoad200kRidesEachCountedOnce(t *testing.T) {
	const (
		total     = 200_000
		batchSize = 500
		writers   = 4
	)
	db := openTestDB(t, Config{MaxConns: writers})
	store := db.Rides()
	ctx := testCtx(t, 2*time.Minute)
	rides := loadRides(3, total-total/20, total/20)

	var batches [][]domain.LiftRide
	for i := 0; i < len(rides); i += batchSize {
		batches = append(batches, rides[i:min(i+batchSize, len(rides))])
	}
	// Each writer takes every writers-th batch, then re-sends every tenth
	// batch of its neighbour, as a queue redelivering unacknowledged
	// batches to another persister would.
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			send := func(i int) error {
				if err := store.AddRides(ctx, batches[i]); err != nil {
					return fmt.Errorf("writer %d, batch %d: %w", w, i, err)
				}
				return nil
			}
			for i := w; i < len(batches); i += writers {
				if err := send(i); err != nil {
					errs <- err
					return
				}
			}
			for i := (w + 1) % writers; i < len(batches); i += 10 * writers {
				if err := send(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	type resortDay struct {
		resort domain.ResortID
		season domain.Season
		day    domain.Day
	}
	distinct := map[domain.LiftRide]bool{}
	skiers := map[resortDay]map[domain.SkierID]bool{}
	for _, r := range rides {
		distinct[r] = true
		k := resortDay{r.ResortID(), r.SeasonID(), r.DayID()}
		if skiers[k] == nil {
			skiers[k] = map[domain.SkierID]bool{}
		}
		skiers[k][r.SkierID()] = true
	}

	n, err := db.CountRides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(distinct)) {
		t.Errorf("CountRides = %d; want %d distinct rides (%d sent, duplicates included)", n, len(distinct), len(rides))
	}
	for k, want := range skiers {
		got, err := store.UniqueSkiers(ctx, k.resort, k.season, k.day)
		if err != nil || got != len(want) {
			t.Errorf("UniqueSkiers(%d, %s, %s) = %d, %v; want %d", k.resort, k.season, k.day, got, err, len(want))
		}
	}
}
