package app

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// mapResorts is a ResortStore the test can change behind the catalog's back,
// as another API process would.
type mapResorts struct {
	mu    sync.Mutex
	m     map[domain.ResortID]domain.Resort
	reads int
}

func (s *mapResorts) Resorts(context.Context) ([]domain.Resort, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []domain.Resort
	for _, r := range s.m {
		out = append(out, r)
	}
	return out, nil
}
func (s *mapResorts) PutResort(_ context.Context, r domain.Resort) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[domain.ResortID]domain.Resort{}
	}
	s.m[r.ID] = r
	return nil
}
func (s *mapResorts) AddSeason(_ context.Context, id domain.ResortID, season string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[id]
	if !ok {
		return domain.NotFound("no resort %d", id)
	}
	s.m[id] = r.WithSeason(season)
	return nil
}
func (s *mapResorts) readCount() int { s.mu.Lock(); defer s.mu.Unlock(); return s.reads }

var _ ports.ResortStore = (*mapResorts)(nil)

func TestCatalogSeedsDemoResortsIntoEmptyStore(t *testing.T) {
	store := &mapResorts{}
	c, err := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := c.List(context.Background())
	if len(rs) != 10 || rs[0].ID != 1 || rs[9].ID != 10 || !slices.Equal(rs[0].Seasons, []string{"2024", "2025"}) {
		t.Errorf("catalog after seeding = %+v; want ten resorts with 2024 and 2025", rs)
	}
	if len(store.m) != 10 {
		t.Errorf("store holds %d resorts; the seed must be written to the store", len(store.m))
	}
}

func TestCatalogDoesNotSeedWhenToldNot(t *testing.T) {
	c, err := NewCatalog(context.Background(), &mapResorts{}, CatalogConfig{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := c.List(context.Background()); len(rs) != 0 {
		t.Errorf("catalog = %+v; want empty", rs)
	}
}

func TestCatalogCheckRideServesFromMemory(t *testing.T) {
	store := &mapResorts{}
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	before := store.readCount()
	for range 100 {
		if err := c.CheckRide(context.Background(), 3, "2024"); err != nil {
			t.Fatal(err)
		}
	}
	if store.readCount() != before {
		t.Errorf("known rides read the store %d times; the hot path must not", store.readCount()-before)
	}
}

func TestCatalogSeesSeasonAddedByAnotherProcess(t *testing.T) {
	store := &mapResorts{}
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	// Another process registers 2031 directly in the shared store.
	_ = store.AddSeason(context.Background(), 4, "2031")
	c.lastReload.Store(time.Now().Add(-2 * reloadEvery).UnixNano())
	if err := c.CheckRide(context.Background(), 4, "2031"); err != nil {
		t.Errorf("a season registered elsewhere is still unknown after a reload was allowed: %v", err)
	}
}

func TestCatalogReloadsAtMostOncePerInterval(t *testing.T) {
	store := &mapResorts{}
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	c.lastReload.Store(time.Now().UnixNano())
	before := store.readCount()
	for range 50 {
		err := c.CheckRide(context.Background(), 99, "2024")
		if !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("unknown resort: %v; want ErrNotFound", err)
		}
	}
	if got := store.readCount() - before; got != 0 {
		t.Errorf("50 misses within the interval read the store %d times; want 0", got)
	}
}

func TestCatalogAddSeason(t *testing.T) {
	store := &mapResorts{}
	c, _ := NewCatalog(context.Background(), store, CatalogConfig{SeedDemo: true}, discard)
	if err := c.AddSeason(context.Background(), 2, "2030"); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckRide(context.Background(), 2, "2030"); err != nil {
		t.Errorf("ride in the added season: %v", err)
	}
	if !store.m[2].HasSeason("2030") {
		t.Error("season not written through to the store")
	}
	if err := c.AddSeason(context.Background(), 99, "2030"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("AddSeason on unknown resort = %v; want ErrNotFound", err)
	}
	err := c.CheckRide(context.Background(), 2, "1990")
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("unregistered season = %v; want ErrNotFound", err)
	}
}
