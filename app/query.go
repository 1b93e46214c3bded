package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// Query is the read path's use case: it asks the store and decides what
// "nothing" means to the caller. The three aggregate queries read through
// the cache when one is configured (see cachekeys.go for the keys and
// Persister for their invalidation).
type Query struct {
	catalog *Catalog
	store   ports.RideStore
	cache   queryCache
}

var _ ports.RideQueries = (*Query)(nil)

// QueryConfig tunes the read path.
type QueryConfig struct {
	// CacheTTL is how long a cached answer lives: it bounds staleness if
	// an invalidation is lost.
	CacheTTL time.Duration
}

// NewQuery returns the query service; cache may be nil (no caching).
func NewQuery(catalog *Catalog, store ports.RideStore, cache ports.Cache, cfg QueryConfig, m ports.Metrics, log *slog.Logger) *Query {
	return &Query{catalog: catalog, store: store, cache: queryCache{cache: cache, ttl: cfg.CacheTTL, metrics: m, log: log}}
}

// ResortDaySkiers implements ports.RideQueries. A known resort with no rides
// that day has zero skiers; an unknown resort is not found.
func (q *Query) ResortDaySkiers(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (ports.ResortDaySkiers, error) {
	r, err := q.catalog.Resort(ctx, resortID)
	if err != nil {
		return ports.ResortDaySkiers{}, err
	}
	n, err := readThrough(ctx, q.cache, queryResortDay, func() string { return resortDayKey(resortID, season, day) }, func() (int, error) {
		return q.store.UniqueSkiers(ctx, resortID, season, day)
	})
	if err != nil {
		return ports.ResortDaySkiers{}, fmt.Errorf("unique skiers at resort %d, %s day %s: %w", resortID, season, day, err)
	}
	return ports.ResortDaySkiers{ResortName: r.Name, NumSkiers: n}, nil
}

// SkierDayVertical implements ports.RideQueries.
func (q *Query) SkierDayVertical(ctx context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	if _, err := q.catalog.Resort(ctx, resortID); err != nil {
		return 0, err
	}
	if err := domain.ValidateSkierID(skierID); err != nil {
		return 0, err
	}
	v, err := readThrough(ctx, q.cache, querySkierDay, func() string { return skierDayKey(resortID, season, day, skierID) }, func() (int64, error) {
		return q.store.SkierDayVertical(ctx, resortID, season, day, skierID)
	})
	if err != nil {
		return 0, fmt.Errorf("day vertical of skier %d: %w", skierID, err)
	}
	if v == 0 {
		return 0, domain.NotFound("skier %d has no rides at resort %d on day %s of season %s", skierID, resortID, day, season)
	}
	return v, nil
}

// The caps on getSkierResortTotals: the most distinct resort and season
// values one request may name. Each resort costs a catalog lookup and a
// cache entry, so the cap bounds what one request can make the service do;
// twenty is more resorts than a skier visits in a season. openapi.yaml and
// the README state the same numbers.
const (
	MaxTotalsResorts = 20
	MaxTotalsSeasons = 20
)

// SkierResortTotals implements ports.RideQueries. Every resort must exist
// (an unknown one is ErrNotFound naming it), repeated values count once,
// and the store is asked once for all the resorts the cache does not hold.
func (q *Query) SkierResortTotals(ctx context.Context, skierID domain.SkierID, resortIDs []domain.ResortID, seasons []domain.Season) ([]domain.SeasonVertical, error) {
	if err := domain.ValidateSkierID(skierID); err != nil {
		return nil, err
	}
	resorts := distinctSorted(resortIDs, cmp.Compare[domain.ResortID])
	seasons = distinctSorted(seasons, domain.Season.Compare)
	if len(resorts) > MaxTotalsResorts {
		return nil, domain.Invalid("name at most %d distinct resort values, got %d", MaxTotalsResorts, len(resorts))
	}
	if len(seasons) > MaxTotalsSeasons {
		return nil, domain.Invalid("name at most %d distinct season values, got %d", MaxTotalsSeasons, len(seasons))
	}
	for _, id := range resorts {
		if _, err := q.catalog.Resort(ctx, id); err != nil {
			return nil, err
		}
	}
	per, err := q.seasonVerticals(ctx, skierID, resorts)
	if err != nil {
		return nil, fmt.Errorf("season totals of skier %d at %d resorts: %w", skierID, len(resorts), err)
	}
	out := sumSeasons(per, resorts, seasons)
	if len(out) == 0 {
		return nil, domain.NotFound("skier %d has no rides at resort(s) %v in the seasons asked for", skierID, resorts)
	}
	return out, nil
}

// sumSeasons is the resorts' totals per season (seasons ascending), of the
// seasons asked for, or of all when none is. One resort's totals, the
// common question, are the answer as they are: no map to sum them in.
func sumSeasons(per map[domain.ResortID][]domain.SeasonVertical, resorts []domain.ResortID, seasons []domain.Season) []domain.SeasonVertical {
	asked := func(season domain.Season) bool {
		_, found := slices.BinarySearchFunc(seasons, season, domain.Season.Compare)
		return len(seasons) == 0 || found
	}
	if len(resorts) == 1 {
		all := per[resorts[0]]                            // seasons ascending, as the store port promises
		out := make([]domain.SeasonVertical, 0, len(all)) // a copy: all may be the cache's
		for _, sv := range all {
			if asked(sv.SeasonID) {
				out = append(out, sv)
			}
		}
		return out
	}
	sums := map[domain.Season]int64{}
	for _, svs := range per {
		for _, sv := range svs {
			if asked(sv.SeasonID) {
				sums[sv.SeasonID] += sv.TotalVert
			}
		}
	}
	out := make([]domain.SeasonVertical, 0, len(sums))
	for s, v := range sums {
		out = append(out, domain.SeasonVertical{SeasonID: s, TotalVert: v})
	}
	slices.SortFunc(out, func(a, b domain.SeasonVertical) int { return a.SeasonID.Compare(b.SeasonID) })
	return out
}

// distinctSorted is ids in the order compare gives, each once: ids itself
// when it already is (one id, the common question, costs no copy), else a
// sorted copy.
func distinctSorted[T comparable](ids []T, compare func(a, b T) int) []T {
	for i := 1; i < len(ids); i++ {
		if compare(ids[i-1], ids[i]) >= 0 {
			sorted := slices.Clone(ids)
			slices.SortFunc(sorted, compare)
			return slices.Compact(sorted)
		}
	}
	return ids
}

// seasonVerticals is the skier's per-season totals at each resort: from
// the cache where it holds them (one entry per resort, so that a ride
// invalidates exactly one), and from one store call for all the rest.
func (q *Query) seasonVerticals(ctx context.Context, skierID domain.SkierID, resorts []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	out := make(map[domain.ResortID][]domain.SeasonVertical, len(resorts))
	missing := resorts
	if q.cache.cache != nil {
		missing = nil
		for _, id := range resorts {
			if v, ok := cacheGet[[]domain.SeasonVertical](ctx, q.cache, querySkierSeason, skierSeasonKey(skierID, id)); ok {
				out[id] = v
			} else {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	loaded, err := q.store.SkierSeasonVerticals(ctx, skierID, missing)
	if err != nil {
		return nil, err
	}
	for _, id := range missing {
		v := loaded[id]
		if v == nil {
			v = []domain.SeasonVertical{} // cached as "no rides", not as a miss
		}
		out[id] = v
		if q.cache.cache != nil {
			cacheSet(ctx, q.cache, skierSeasonKey(skierID, id), v)
		}
	}
	return out, nil
}

// SkierSeasonDays implements ports.RideQueries.
func (q *Query) SkierSeasonDays(ctx context.Context, skierID domain.SkierID, season domain.Season) (ports.SkierSeasonDays, error) {
	if err := domain.ValidateSkierID(skierID); err != nil {
		return ports.SkierSeasonDays{}, err
	}
	days, err := q.store.SkierDays(ctx, skierID, season)
	if err != nil {
		return ports.SkierSeasonDays{}, fmt.Errorf("days skied by skier %d: %w", skierID, err)
	}
	if len(days) == 0 {
		return ports.SkierSeasonDays{}, domain.NotFound("skier %d has no rides in season %s", skierID, season)
	}
	return ports.SkierSeasonDays{SkierID: skierID, SeasonID: season, DayIDs: days}, nil
}

// SkierDay implements ports.RideQueries.
func (q *Query) SkierDay(ctx context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) (ports.SkierDay, error) {
	if err := domain.ValidateSkierID(skierID); err != nil {
		return ports.SkierDay{}, err
	}
	rides, err := q.store.SkierDayRides(ctx, skierID, season, day)
	if err != nil {
		return ports.SkierDay{}, fmt.Errorf("rides of skier %d: %w", skierID, err)
	}
	if len(rides) == 0 {
		return ports.SkierDay{}, domain.NotFound("skier %d has no rides on day %s of season %s", skierID, day, season)
	}
	var total int64
	for _, r := range rides {
		total += int64(r.Vertical())
	}
	return ports.SkierDay{SkierID: skierID, SeasonID: season, DayID: day, TotalVert: total, Rides: rides}, nil
}

func sortResorts(rs []domain.Resort) {
	slices.SortFunc(rs, func(a, b domain.Resort) int { return cmp.Compare(a.ID, b.ID) })
}

// queryCache is the query service's view of the optional cache.
type queryCache struct {
	cache   ports.Cache // nil: no cache
	ttl     time.Duration
	metrics ports.Metrics
	log     *slog.Logger
}

// readThrough answers from the cache when it holds the key keyOf builds, otherwise loads from
// the store and fills the cache. The cache is an optimisation, never a
// dependency: when it fails the answer comes from the store and the failure
// is logged.
func readThrough[T any](ctx context.Context, c queryCache, query string, keyOf func() string, load func() (T, error)) (T, error) {
	if c.cache == nil {
		return load() // and no key is built: most deployments run without a cache
	}
	key := keyOf()
	if v, ok := cacheGet[T](ctx, c, query, key); ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	cacheSet(ctx, c, key, v)
	return v, nil
}

// cacheGet reads one answer from the cache and counts the hit or miss; a
// failed or unreadable read is logged and counts as a miss.
func cacheGet[T any](ctx context.Context, c queryCache, query, key string) (T, bool) {
	var v T
	b, ok, err := c.cache.Get(ctx, key)
	if err != nil {
		c.log.Warn("cache read failed; answering from the store", "key", key, "err", err)
	}
	if ok {
		if uerr := json.Unmarshal(b, &v); uerr == nil {
			c.metrics.CacheLookup(query, true)
			return v, true
		} else {
			c.log.Warn("cache entry unreadable; answering from the store", "key", key, "err", uerr)
		}
	}
	c.metrics.CacheLookup(query, false)
	return v, false
}

// cacheSet stores one answer; a failure is logged, never returned.
func cacheSet[T any](ctx context.Context, c queryCache, key string, v T) {
	if b, merr := json.Marshal(v); merr == nil {
		if serr := c.cache.Set(ctx, key, b, c.ttl); serr != nil {
			c.log.Warn("cache write failed", "key", key, "err", serr)
		}
	}
}
