package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// RideStore keeps rides in the rides table.
type RideStore struct {
	pool *pgxpool.Pool
}

var _ ports.RideStore = (*RideStore)(nil)

// insertRides writes a whole batch in one statement, so one round trip: the
// rides travel as six parallel arrays and unnest turns them back into rows.
const insertRides = `
INSERT INTO rides (resort_id, season_id, day_id, skier_id, ride_time, lift_id)
SELECT * FROM unnest($1::integer[], $2::smallint[], $3::smallint[], $4::integer[], $5::integer[], $6::integer[])`

// insertNewRides is insertRides skipping the rides already stored: ON
// CONFLICT DO NOTHING on the identity key makes a redelivered ride a
// no-op, whether it comes again in a later batch or from another writer
// at the same moment (columnsOf has already dropped a batch's own
// repeats).
const insertNewRides = insertRides + `
ON CONFLICT DO NOTHING`

// AddRides implements ports.RideStore. It writes the batch with one
// INSERT ... SELECT FROM unnest(arrays), one round trip and no explicit
// transaction. BenchmarkAddRides compares it with COPY into a temporary
// table followed by INSERT ... ON CONFLICT (addRidesCopy, in bulk_test.go),
// which needs a transaction and more round trips a batch; docs/benchmarks.md
// has the comparison.
//
// The first try is a plain INSERT: a batch of new rides, the steady state,
// then costs the server no speculative insertion (a conflict check, then
// a confirmation written to the WAL, for every ride). A batch holding a
// ride already stored, a redelivery, fails whole with unique_violation,
// stores nothing, and goes again with ON CONFLICT DO NOTHING.
func (s *RideStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	cols := columnsOf(rides)
	if cols.n == 0 {
		return nil
	}
	args := []any{cols.resorts, cols.seasons, cols.days, cols.skiers, cols.times, cols.lifts}
	_, err := s.pool.Exec(ctx, insertRides, args...)
	if isUniqueViolation(err) {
		_, err = s.pool.Exec(ctx, insertNewRides, args...)
	}
	return classify(ctx, fmt.Sprintf("postgres: add batch of %d rides", len(rides)), err)
}

// isUniqueViolation says whether err is the server refusing a row whose
// key is already stored (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// rideColumns is a batch as the six columns of the rides table, sorted by
// the primary key, without duplicates.
type rideColumns struct {
	n                             int
	resorts, skiers, times, lifts []int32
	seasons, days                 []int16
}

// columnsOf sorts by the primary key and drops duplicates: two writers
// inserting overlapping batches in different orders can each wait for the
// other's uncommitted key and deadlock; taking keys in one global order
// rules that out.
func columnsOf(rides []domain.LiftRide) rideColumns {
	sorted := slices.Clone(rides)
	slices.SortFunc(sorted, compareIdentity)
	sorted = slices.Compact(sorted)

	n := len(sorted)
	c := rideColumns{n: n,
		resorts: make([]int32, n), seasons: make([]int16, n), days: make([]int16, n),
		skiers: make([]int32, n), times: make([]int32, n), lifts: make([]int32, n)}
	for i, r := range sorted {
		c.resorts[i], c.seasons[i], c.days[i] = int32(r.ResortID()), seasonColumn(r.SeasonID()), int16(r.DayID().Number())
		c.skiers[i], c.times[i], c.lifts[i] = int32(r.SkierID()), r.Time(), r.LiftID()
	}
	return c
}

// compareIdentity orders rides as the rides_identity primary key does. It
// stops at the first field that differs (nearly always the skier): cmp.Or
// would compute all six comparisons first, and sorting a batch was a
// tenth of the consumer's CPU in a profile.
func compareIdentity(a, b domain.LiftRide) int {
	if c := cmp.Compare(a.SkierID(), b.SkierID()); c != 0 {
		return c
	}
	if c := a.SeasonID().Compare(b.SeasonID()); c != 0 {
		return c
	}
	if c := a.DayID().Compare(b.DayID()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Time(), b.Time()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ResortID(), b.ResortID()); c != 0 {
		return c
	}
	return cmp.Compare(a.LiftID(), b.LiftID())
}

// seasonColumn is a season as its smallint column; readSeason reads one
// back through the domain's constructor.
func seasonColumn(s domain.Season) int16 { return int16(s.Year()) }

func readSeason(n int16) (domain.Season, error) {
	s, err := domain.NewSeason(int(n))
	if err != nil {
		return s, fmt.Errorf("postgres: stored season: %w", err)
	}
	return s, nil
}

// The queries, one per port method. docs/postgres.md shows the plan of each
// and explain_test.go checks that none scans the rides table.
const (
	queryUniqueSkiers = `
SELECT count(DISTINCT skier_id) FROM rides
WHERE resort_id = $1 AND season_id = $2 AND day_id = $3`

	querySkierDayVertical = `
SELECT coalesce(sum(lift_id), 0) FROM rides
WHERE skier_id = $1 AND season_id = $2 AND day_id = $3 AND resort_id = $4`

	querySkierSeasonVerticals = `
SELECT resort_id, season_id, sum(lift_id) FROM rides
WHERE skier_id = $1 AND resort_id = ANY($2::integer[])
GROUP BY resort_id, season_id ORDER BY resort_id, season_id`

	querySkierDays = `
SELECT DISTINCT day_id FROM rides
WHERE skier_id = $1 AND season_id = $2
ORDER BY day_id`

	querySkierDayRides = `
SELECT resort_id, ride_time, lift_id FROM rides
WHERE skier_id = $1 AND season_id = $2 AND day_id = $3
ORDER BY ride_time, resort_id, lift_id`
)

// UniqueSkiers implements ports.RideStore.
func (s *RideStore) UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	var n int64
	err := s.pool.QueryRow(ctx, queryUniqueSkiers, resortID, seasonColumn(season), int16(day.Number())).Scan(&n)
	if err != nil {
		return 0, classify(ctx, fmt.Sprintf("postgres: unique skiers of resort %d, season %s, day %s", resortID, season, day), err)
	}
	return int(n), nil
}

// SkierDayVertical implements ports.RideStore.
func (s *RideStore) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	var lifts int64
	err := s.pool.QueryRow(ctx, querySkierDayVertical, skierID, seasonColumn(season), int16(day.Number()), resortID).Scan(&lifts)
	if err != nil {
		return 0, classify(ctx, fmt.Sprintf("postgres: vertical of skier %d at resort %d, season %s, day %s", skierID, resortID, season, day), err)
	}
	return lifts * domain.VerticalPerLift, nil
}

// SkierSeasonVerticals implements ports.RideStore.
// One statement answers every resort asked for (resort_id = ANY), rows in
// (resort, season) order, so each resort's seasons come out ascending.
func (s *RideStore) SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	ids := make([]int32, len(resortIDs))
	for i, id := range resortIDs {
		ids[i] = int32(id)
	}
	out := make(map[domain.ResortID][]domain.SeasonVertical, len(resortIDs))
	rows, err := s.pool.Query(ctx, querySkierSeasonVerticals, skierID, ids)
	if err == nil {
		var resort int32
		var season int16
		var lifts int64
		_, err = pgx.ForEachRow(rows, []any{&resort, &season, &lifts}, func() error {
			s, err := readSeason(season)
			if err != nil {
				return err
			}
			id := domain.ResortID(resort)
			out[id] = append(out[id], domain.SeasonVertical{SeasonID: s, TotalVert: lifts * domain.VerticalPerLift})
			return nil
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, classify(ctx, fmt.Sprintf("postgres: season verticals of skier %d at %d resorts", skierID, len(resortIDs)), err)
}

// SkierDays implements ports.RideStore.
func (s *RideStore) SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	rows, err := s.pool.Query(ctx, querySkierDays, skierID, seasonColumn(season))
	if err == nil {
		var days []domain.Day
		days, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Day, error) {
			var n int16
			if err := row.Scan(&n); err != nil {
				return domain.Day{}, err
			}
			return domain.NewDay(int(n))
		})
		if err == nil {
			return days, nil
		}
	}
	return nil, classify(ctx, fmt.Sprintf("postgres: days of skier %d in season %s", skierID, season), err)
}

// SkierDayRides implements ports.RideStore.
func (s *RideStore) SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	rows, err := s.pool.Query(ctx, querySkierDayRides, skierID, seasonColumn(season), int16(day.Number()))
	if err == nil {
		var out []domain.LiftRide
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.LiftRide, error) {
			var resort, tm, lift int32
			if err := row.Scan(&resort, &tm, &lift); err != nil {
				return domain.LiftRide{}, err
			}
			return domain.NewLiftRide(domain.ResortID(resort), season, day, skierID, tm, lift)
		})
		if err == nil {
			return out, nil
		}
	}
	return nil, classify(ctx, fmt.Sprintf("postgres: rides of skier %d in season %s, day %s", skierID, season, day), err)
}
