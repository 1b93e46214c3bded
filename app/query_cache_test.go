package app

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// mapCache is a ports.Cache in a map that records deletions; failing makes
// every call fail.
type mapCache struct {
	mu      sync.Mutex
	m       map[string][]byte
	deleted [][]string
	onDel   func()
	failing bool
}

func newMapCache() *mapCache { return &mapCache{m: map[string][]byte{}} }

func (c *mapCache) Get(_ context.Context, k string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		return nil, false, errors.New("cache down")
	}
	v, ok := c.m[k]
	return v, ok, nil
}

func (c *mapCache) Set(_ context.Context, k string, v []byte, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		return errors.New("cache down")
	}
	c.m[k] = v
	return nil
}

func (c *mapCache) Delete(_ context.Context, keys ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onDel != nil {
		c.onDel()
	}
	c.deleted = append(c.deleted, slices.Clone(keys))
	for _, k := range keys {
		delete(c.m, k)
	}
	return nil
}

// countingStore answers the three cached queries and counts calls.
type countingStore struct {
	ports.RideStore
	calls tally // by query
	vert  int64
	mu    sync.Mutex
	asked [][]domain.ResortID // the resorts of each SkierSeasonVerticals call
}

func (s *countingStore) SkierDayVertical(context.Context, domain.ResortID, domain.Season, domain.Day, domain.SkierID) (int64, error) {
	s.calls.add(querySkierDay)
	return s.vert, nil
}

// SkierSeasonVerticals answers s.vert in 2024 at every resort asked for,
// and records how many resorts each call asked for.
func (s *countingStore) SkierSeasonVerticals(_ context.Context, _ domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	s.calls.add(querySkierSeason)
	s.mu.Lock()
	s.asked = append(s.asked, slices.Clone(resortIDs))
	s.mu.Unlock()
	out := map[domain.ResortID][]domain.SeasonVertical{}
	for _, id := range resortIDs {
		out[id] = []domain.SeasonVertical{{SeasonID: domain.MustSeason("2024"), TotalVert: s.vert}}
	}
	return out, nil
}

func (s *countingStore) UniqueSkiers(context.Context, domain.ResortID, domain.Season, domain.Day) (int, error) {
	s.calls.add(queryResortDay)
	return 7, nil
}

// cacheMetrics counts hits and misses.
type cacheMetrics struct {
	ports.NopMetrics
	mu           sync.Mutex
	hits, misses int
}

func (m *cacheMetrics) CacheLookup(_ string, hit bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if hit {
		m.hits++
	} else {
		m.misses++
	}
}

func newCachedQuery(t *testing.T, store ports.RideStore, cache ports.Cache, m ports.Metrics) *Query {
	t.Helper()
	cat, err := NewCatalog(context.Background(), memory.NewResortStore(), CatalogConfig{SeedDemo: true}, discard)
	if err != nil {
		t.Fatal(err)
	}
	return NewQuery(cat, store, cache, QueryConfig{CacheTTL: time.Minute}, m, discard)
}

func TestQueryReadsThroughTheCache(t *testing.T) {
	ctx := context.Background()
	store, cache, m := &countingStore{vert: 210}, newMapCache(), &cacheMetrics{}
	q := newCachedQuery(t, store, cache, m)
	for range 3 {
		if v, err := q.SkierDayVertical(ctx, 1, domain.MustSeason("2024"), domain.MustDay(1), 9); err != nil || v != 210 {
			t.Fatalf("SkierDayVertical = %d, %v; want 210", v, err)
		}
		if tot, err := q.SkierResortTotals(ctx, 9, []domain.ResortID{1}, nil); err != nil || tot[0].TotalVert != 210 {
			t.Fatalf("SkierResortTotals = %v, %v", tot, err)
		}
		if n, err := q.ResortDaySkiers(ctx, 1, domain.MustSeason("2024"), domain.MustDay(1)); err != nil || n.NumSkiers != 7 {
			t.Fatalf("ResortDaySkiers = %v, %v", n, err)
		}
	}
	for _, query := range []string{querySkierDay, querySkierSeason, queryResortDay} {
		if store.calls.of(query) != 1 {
			t.Errorf("%s reached the store %d times in 3 calls; want 1 (then the cache)", query, store.calls.of(query))
		}
	}
	if m.hits != 6 || m.misses != 3 {
		t.Errorf("cache hits %d, misses %d; want 6 and 3", m.hits, m.misses)
	}
	_ = cache.Delete(ctx, skierDayKey(1, domain.MustSeason("2024"), domain.MustDay(1), 9))
	store.vert = 420
	if v, _ := q.SkierDayVertical(ctx, 1, domain.MustSeason("2024"), domain.MustDay(1), 9); v != 420 {
		t.Errorf("after invalidation SkierDayVertical = %d; want the store's new 420", v)
	}
}

func TestQueryAnswersFromTheStoreWhenTheCacheFails(t *testing.T) {
	cache := newMapCache()
	cache.failing = true
	q := newCachedQuery(t, &countingStore{vert: 30}, cache, ports.NopMetrics{})
	if v, err := q.SkierDayVertical(context.Background(), 1, domain.MustSeason("2024"), domain.MustDay(1), 9); err != nil || v != 30 {
		t.Errorf("with the cache down SkierDayVertical = %d, %v; want 30 from the store", v, err)
	}
}

func TestPersisterInvalidatesExactlyTheKeysOfTheBatchBeforeAcking(t *testing.T) {
	sub, store, cache := newFakeSub(), &fakeStore{}, newMapCache()
	var ackedAtDelete [][]uint64
	cache.onDel = func() { a, _ := sub.state(); ackedAtDelete = append(ackedAtDelete, a) }
	p := NewPersister(sub, store, PersisterConfig{BatchSize: 3, Linger: time.Hour, RetryFor: time.Second}, cache, ports.NopMetrics{}, discard)
	runPersister(t, p, sub)
	sub.ch <- ports.Delivery{Receipt: uint64(1), Rides: []domain.LiftRide{domain.MustLiftRide(1, "2024", 5, 7, 1, 2)}}
	sub.ch <- ports.Delivery{Receipt: uint64(2), Rides: []domain.LiftRide{domain.MustLiftRide(1, "2024", 5, 7, 2, 3)}}
	sub.ch <- ports.Delivery{Receipt: uint64(3), Rides: []domain.LiftRide{domain.MustLiftRide(2, "2025", 6, 8, 3, 4)}}
	waitFor(t, "the batch acked", func() bool { a, _ := sub.state(); return len(a) == 3 })

	cache.mu.Lock()
	defer cache.mu.Unlock()
	if len(cache.deleted) != 1 {
		t.Fatalf("%d Delete calls for one batch; want 1", len(cache.deleted))
	}
	want := map[string]bool{
		"v1:skier-day:1:2024:5:7": true, "v1:skier-season:7:1": true, "v1:resort-day:1:2024:5": true,
		"v1:skier-day:2:2025:6:8": true, "v1:skier-season:8:2": true, "v1:resort-day:2:2025:6": true,
	}
	got := cache.deleted[0]
	if len(got) != len(want) {
		t.Errorf("deleted %v; want exactly %v", got, slices.Sorted(maps.Keys(want)))
	}
	for _, k := range got {
		if !want[k] {
			t.Errorf("deleted %q, which the batch does not affect", k)
		}
	}
	if len(ackedAtDelete[0]) != 0 {
		t.Errorf("rides %v were acked before the cache was invalidated; invalidate first", ackedAtDelete[0])
	}
}
