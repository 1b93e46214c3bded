package app

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skidata/skidata/adapters/memory"
	"github.com/skidata/skidata/domain"
)

// countingResorts is the memory resort store counting the catalog's reads
// of it; the test changes it behind the catalog's back, as another API
// process would.
type countingResorts struct {
	*memory.ResortStore
	reads atomic.Int64
}

func newCountingResorts() *countingResorts {
	return &countingResorts{ResortStore: memory.NewResortStore()}
}

func (s *countingResorts) Resorts(ctx context.Context) ([]domain.Resort, error) {
	s.reads.Add(1)
	return s.ResortStore.Resorts(ctx)
}

func (s *countingResorts) readCount() int { return int(s.reads.Load()) }

// held is what the store holds, read without counting.
func (s *countingResorts) held(t *testing.T) map[domain.ResortID]domain.Resort {
	t.Helper()
	rs, err := s.ResortStore.Resorts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[domain.ResortID]domain.Resort{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

func TestCatalogSeedsDemoResortsIntoEmptyStore(t *testing.T) {
	store := newCountingResorts()
	c, err := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := c.List(context.Background())
	if len(rs) != 10 || rs[0].ID != 1 || rs[9].ID != 10 || !slices.Equal(rs[0].Seasons, DemoSeasons) {
		t.Errorf("catalog after seeding = %+v; want ten resorts with 2024 and 2025", rs)
	}
	if len(store.held(t)) != 10 {
		t.Errorf("store holds %d resorts; the seed must be written to the store", len(store.held(t)))
	}
}

func TestCatalogDoesNotSeedWhenToldNot(t *testing.T) {
	c, err := NewCatalog(context.Background(), memory.NewResortStore(), CatalogConfig{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := c.List(context.Background()); len(rs) != 0 {
		t.Errorf("catalog = %+v; want empty", rs)
	}
}

func TestCatalogCheckRideServesFromMemory(t *testing.T) {
	store := newCountingResorts()
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	before := store.readCount()
	for range 100 {
		if err := c.CheckRide(context.Background(), 3, domain.MustSeason("2024")); err != nil {
			t.Fatal(err)
		}
	}
	if store.readCount() != before {
		t.Errorf("known rides read the store %d times; the hot path must not", store.readCount()-before)
	}
}

func TestCatalogSeesSeasonAddedByAnotherProcess(t *testing.T) {
	store := newCountingResorts()
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	// Another process registers 2031 directly in the shared store.
	_ = store.AddSeason(context.Background(), 4, domain.MustSeason("2031"))
	c.lastReload.Store(time.Now().Add(-2 * reloadEvery).UnixNano())
	if err := c.CheckRide(context.Background(), 4, domain.MustSeason("2031")); err != nil {
		t.Errorf("a season registered elsewhere is still unknown after a reload was allowed: %v", err)
	}
}

func TestCatalogReloadsAtMostOncePerInterval(t *testing.T) {
	store := newCountingResorts()
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	c.lastReload.Store(time.Now().UnixNano())
	before := store.readCount()
	for range 50 {
		err := c.CheckRide(context.Background(), 99, domain.MustSeason("2024"))
		if !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("unknown resort: %v; want ErrNotFound", err)
		}
	}
	if got := store.readCount() - before; got != 0 {
		t.Errorf("50 misses within the interval read the store %d times; want 0", got)
	}
}

func TestCatalogAddSeason(t *testing.T) {
	store := newCountingResorts()
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	if err := c.AddSeason(context.Background(), 2, domain.MustSeason("2030")); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckRide(context.Background(), 2, domain.MustSeason("2030")); err != nil {
		t.Errorf("ride in the added season: %v", err)
	}
	if !store.held(t)[2].HasSeason(domain.MustSeason("2030")) {
		t.Error("season not written through to the store")
	}
	if err := c.AddSeason(context.Background(), 99, domain.MustSeason("2030")); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("AddSeason on unknown resort = %v; want ErrNotFound", err)
	}
	err := c.CheckRide(context.Background(), 2, domain.MustSeason("1990"))
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unregistered season = %v; want ErrNotFound", err)
	}
}
