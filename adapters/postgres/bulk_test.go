package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/skidata/skidata/domain"
)

// writeFunc is one way to write a batch: AddRides (unnest) or addRidesCopy.
type writeFunc func(s *RideStore, ctx context.Context, rides []domain.LiftRide) error

var writers = map[string]writeFunc{
	"unnest": (*RideStore).AddRides,
	"copy":   (*RideStore).addRidesCopy,
}

// TestCopyWriteIsIdempotent: the COPY variant keeps the store contract the
// benchmark compares it under: a ride written twice (in one batch or two)
// counts once.
func TestCopyWriteIsIdempotent(t *testing.T) {
	db := openTestDB(t, Config{})
	ctx := testCtx(t, 30*time.Second)
	rides := loadRides(5, 900, 100)
	for range 2 {
		if err := db.Rides().addRidesCopy(ctx, rides); err != nil {
			t.Fatal(err)
		}
	}
	distinct := map[domain.LiftRide]bool{}
	for _, r := range rides {
		distinct[r] = true
	}
	if n, err := db.CountRides(ctx); err != nil || n != int64(len(distinct)) {
		t.Fatalf("CountRides = %d, %v; want %d", n, err, len(distinct))
	}
}

// BenchmarkAddRides writes batches of new rides (no conflicts: the
// persister's steady state) with each write method and reports rides/s.
// Batches are written one after another on one connection, as one
// persister does.
func BenchmarkAddRides(b *testing.B) {
	for _, size := range []int{100, 500, 2000, 10000} {
		for _, name := range []string{"unnest", "copy"} {
			b.Run(fmt.Sprintf("%s/batch=%d", name, size), func(b *testing.B) {
				db := openTestDB(b, Config{MaxConns: 1})
				store := db.Rides()
				ctx := context.Background()
				// Distinct rides: skier ids grow with the batch number.
				batch := func(n int) []domain.LiftRide {
					out := make([]domain.LiftRide, size)
					for i := range out {
						out[i] = domain.MustLiftRide(1, "2025", 1+i%300, domain.SkierID(1+n*size/300+i/300), int32(n%360), 1+int32(i%40))
					}
					return out
				}
				batches := make([][]domain.LiftRide, b.N)
				for i := range batches {
					batches[i] = batch(i)
				}
				b.ResetTimer()
				for i := range b.N {
					if err := writers[name](store, ctx, batches[i]); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "rides/s")
			})
		}
	}
}

// addRidesCopy is the alternative bulk write AddRides was measured
// against: COPY the batch into a per-session temporary table, then move it
// with INSERT ... ON CONFLICT DO NOTHING, in one transaction. It lives with
// the benchmark, the only thing that calls it, so that the comparison in
// docs/benchmarks.md can be rerun:
// go test -run '^$' -bench AddRides ./adapters/postgres/
func (s *RideStore) addRidesCopy(ctx context.Context, rides []domain.LiftRide) error {
	cols := columnsOf(rides)
	if cols.n == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS rides_in (LIKE rides) ON COMMIT DELETE ROWS`); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"rides_in"},
			[]string{"resort_id", "season_id", "day_id", "skier_id", "ride_time", "lift_id"},
			pgx.CopyFromSlice(cols.n, func(i int) ([]any, error) {
				return []any{cols.resorts[i], cols.seasons[i], cols.days[i], cols.skiers[i], cols.times[i], cols.lifts[i]}, nil
			}))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO rides SELECT * FROM rides_in ORDER BY skier_id, season_id, day_id, ride_time, resort_id, lift_id ON CONFLICT DO NOTHING`)
		return err
	})
	return classify(ctx, fmt.Sprintf("postgres: copy batch of %d rides", len(rides)), err)
}
