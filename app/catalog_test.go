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

// TestCatalogListsWhatAnOperatorRegisteredSinceItStarted: a resort put
// into the store after the catalog loaded (`skiapi resorts put` on a
// running stack, docs/operations.md's first day), and a season another
// process added, are listed once the copy in memory is older than the
// reload interval; within it, listing reads the store at most once.
func TestCatalogListsWhatAnOperatorRegisteredSinceItStarted(t *testing.T) {
	ctx := context.Background()
	store := newCountingResorts()
	c, err := NewCatalog(ctx, store, CatalogConfig{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := domain.NewResort(7, "Mont Example")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutResort(ctx, r); err != nil {
		t.Fatal(err)
	}
	c.lastReload.Store(time.Now().Add(-2 * reloadEvery).UnixNano())
	if rs, _ := c.List(ctx); len(rs) != 1 || rs[0].ID != 7 {
		t.Fatalf("List = %+v after a reload was allowed; want the resort registered in the store", rs)
	}
	_ = store.AddSeason(ctx, 7, domain.MustSeason("2026"))
	c.lastReload.Store(time.Now().Add(-2 * reloadEvery).UnixNano())
	if seasons, err := c.Seasons(ctx, 7); err != nil || !slices.Equal(seasons, []domain.Season{domain.MustSeason("2026")}) {
		t.Errorf("Seasons = %v, %v after a reload was allowed; want the season added elsewhere", seasons, err)
	}
	before := store.readCount()
	for range 50 {
		_, _ = c.List(ctx)
		_, _ = c.Seasons(ctx, 7)
	}
	if got := store.readCount() - before; got > 1 {
		t.Errorf("100 reads within the interval read the store %d times; want at most once", got)
	}
}
