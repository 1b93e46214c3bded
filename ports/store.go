package ports

import (
	"context"

	"github.com/skidata/skidata/domain"
)

// RideStore keeps lift rides and answers the queries the API serves.
//
// Contract (test/storetest checks every adapter against it):
//   - AddRides is idempotent on the ride identity (domain.LiftRide's six
//     fields): a ride written twice, in one batch or in two, counts once.
//   - AddRides is safe to call from several goroutines and processes at once.
//   - A batch is written whole or the call fails; a failed batch may have been
//     partly written, and writing it again must not double count.
//   - Queries with nothing to report return zero values, not errors: the
//     application decides what "nothing" means to its caller.
type RideStore interface {
	AddRides(ctx context.Context, rides []domain.LiftRide) error

	// UniqueSkiers counts the distinct skiers with at least one ride at the
	// resort on that day.
	UniqueSkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error)
	// SkierDayVertical sums the vertical of the skier's rides at the resort
	// on that day; 0 when there are none.
	SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error)
	// SkierSeasonVerticals lists, for each of the given resorts at which
	// the skier has rides, the skier's total vertical there for every season
	// with rides, seasons ascending. It answers all the resorts in one call
	// (one query, one round trip), so that a request naming several resorts
	// costs one store read; resorts without rides are absent or empty.
	SkierSeasonVerticals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error)
	// SkierDays lists the days of the season on which the skier rode, at any
	// resort, ascending.
	SkierDays(ctx context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error)
	// SkierDayRides lists the skier's rides of that day at any resort,
	// ordered by time (then resort, then lift).
	SkierDayRides(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error)
}

// ResortStore keeps the reference data: resorts and their seasons.
type ResortStore interface {
	// Resorts lists every resort, ids ascending.
	Resorts(ctx context.Context) ([]domain.Resort, error)
	// PutResort creates the resort or replaces its name, keeping every
	// season already registered and adding the resort's own.
	PutResort(ctx context.Context, r domain.Resort) error
	// AddSeason registers a season for an existing resort; registering it
	// again is not an error. An unknown resort is domain.ErrNotFound.
	AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error
}
