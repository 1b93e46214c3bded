package ports

import (
	"context"
	"time"

	"github.com/skidata/skidata/domain"
)

// RideIngester takes a ride posted to the API. It returns nil once the queue
// holds the ride; an unknown resort or season is domain.ErrNotFound and the
// ride never reaches the queue.
type RideIngester interface {
	AddRide(ctx context.Context, ride domain.LiftRide) error
}

// ResortDaySkiers answers getResortSkiersDay.
type ResortDaySkiers struct {
	ResortName string
	NumSkiers  int
}

// SkierSeasonDays answers "which days did the skier ski this season".
type SkierSeasonDays struct {
	SkierID  domain.SkierID
	SeasonID domain.Season
	DayIDs   []domain.Day
}

// SkierDay answers "what did the skier ride that day".
type SkierDay struct {
	SkierID   domain.SkierID
	SeasonID  domain.Season
	DayID     domain.Day
	TotalVert int64
	Rides     []domain.LiftRide
}

// RideQueries answers the read side of the API. Nothing to report is
// domain.ErrNotFound with a message saying what was looked for.
type RideQueries interface {
	ResortDaySkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (ResortDaySkiers, error)
	SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error)
	// SkierResortTotals sums the skier's vertical over the given resorts per
	// season, keeping only the given seasons when any are given.
	SkierResortTotals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID, seasons []domain.Season) ([]domain.SeasonVertical, error)
	SkierSeasonDays(ctx context.Context, skierID domain.SkierID, season domain.Season) (SkierSeasonDays, error)
	SkierDay(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) (SkierDay, error)
}

// Resorts serves the reference data.
type Resorts interface {
	List(ctx context.Context) ([]domain.Resort, error)
	Seasons(ctx context.Context, resortID domain.ResortID) ([]domain.Season, error)
	AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error
}

// EndpointStat is the latency summary of one route and method.
type EndpointStat struct {
	URL       string // the route template, e.g. /resorts/{resortID}/seasons
	Operation string // the HTTP method
	Count     int64
	Mean      time.Duration
	Max       time.Duration
}

// EndpointStats records request latencies per route and reports them.
type EndpointStats interface {
	Observe(route, method string, status int, d time.Duration)
	Snapshot() []EndpointStat
}

// Readiness is what /readyz reports. Ready is false when a dependency the
// service cannot work without (store, queue) is unavailable; Degraded is
// true when one it can work without (the query cache) is.
type Readiness struct {
	Ready      bool
	Degraded   bool
	QueueDepth int64
	Checks     map[string]string // dependency -> "ok" or "unavailable"; the reason goes to the log
}

// Health tells whether the service can do its work now.
type Health interface {
	Ready(ctx context.Context) Readiness
}
