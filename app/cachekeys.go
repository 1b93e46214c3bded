package app

import (
	"fmt"
	"slices"

	"github.com/skidata/skidata/domain"
)

// The cache key scheme, in one place: the query service reads these keys and
// the persister deletes them, so both must spell them the same way. The
// version prefix lets a change of encoding start from a clean cache instead
// of misreading old entries.
//
//	v1:skier-day:{resort}:{season}:{day}:{skier}   SkierDayVertical
//	v1:skier-season:{skier}:{resort}                SkierSeasonVerticals (per resort)
//	v1:resort-day:{resort}:{season}:{day}           UniqueSkiers
//
// The season totals are cached per resort, not per request (which may name
// several resorts and seasons), so a ride invalidates exactly one entry.
const cacheKeyVersion = "v1"

// Query names used for cache metrics.
const (
	querySkierDay    = "skier_day_vertical"
	querySkierSeason = "skier_season_totals"
	queryResortDay   = "resort_day_skiers"
)

func skierDayKey(resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) string {
	return fmt.Sprintf("%s:skier-day:%d:%d:%d:%d", cacheKeyVersion, resortID, season.Year(), day.Number(), skierID)
}

func skierSeasonKey(skierID domain.SkierID, resortID domain.ResortID) string {
	return fmt.Sprintf("%s:skier-season:%d:%d", cacheKeyVersion, skierID, resortID)
}

func resortDayKey(resortID domain.ResortID, season domain.Season, day domain.Day) string {
	return fmt.Sprintf("%s:resort-day:%d:%d:%d", cacheKeyVersion, resortID, season.Year(), day.Number())
}

// keysAffectedBy lists, once each, the cache keys whose answers a batch of
// rides changes.
func keysAffectedBy(rides []domain.LiftRide) []string {
	keys := make([]string, 0, 3*len(rides))
	for _, r := range rides {
		keys = append(keys,
			skierDayKey(r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID()),
			skierSeasonKey(r.SkierID(), r.ResortID()),
			resortDayKey(r.ResortID(), r.SeasonID(), r.DayID()))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
