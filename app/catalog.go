package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// reloadEvery bounds how often a lookup miss may reload the reference data.
const reloadEvery = time.Second

// Catalog serves the reference data (resorts and their seasons) from memory,
// so the POST hot path never asks the store. It writes through to the
// ResortStore. A miss reloads from the store (at most once a second), so a
// season added through another API process becomes visible here too; the
// listings (GET /resorts, a resort's seasons), which a miss never
// triggers, reload a copy older than that first, so a resort an operator
// registers in the store (`skiapi resorts`) is listed by every process.
type Catalog struct {
	store ports.ResortStore
	log   *slog.Logger

	resorts    atomic.Pointer[map[domain.ResortID]domain.Resort]
	reloadMu   sync.Mutex
	lastReload atomic.Int64 // unix nanoseconds
}

var _ ports.Resorts = (*Catalog)(nil)

// CatalogConfig tunes the catalogue.
type CatalogConfig struct {
	// SeedDemo gives an empty store the demo resorts.
	SeedDemo bool
}

// NewCatalog loads the reference data, seeding the demo resorts first when the
// store has none and cfg says to.
func NewCatalog(ctx context.Context, store ports.ResortStore, cfg CatalogConfig, log *slog.Logger) (*Catalog, error) {
	c := &Catalog{store: store, log: log}
	if err := c.reload(ctx); err != nil {
		return nil, err
	}
	if cfg.SeedDemo && len(*c.resorts.Load()) == 0 {
		if err := SeedDemoResorts(ctx, store); err != nil {
			return nil, err
		}
		log.Info("store had no resorts: loaded the demo fixture", "resorts", len(demoResortNames))
		if err := c.reload(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// SeedDemoResorts writes the demo resorts into the store (existing seasons
// are kept).
func SeedDemoResorts(ctx context.Context, store ports.ResortStore) error {
	for _, r := range DemoResorts() {
		if err := store.PutResort(ctx, r); err != nil {
			return fmt.Errorf("seed demo resort %d: %w", r.ID, err)
		}
	}
	return nil
}

func (c *Catalog) reload(ctx context.Context) error {
	rs, err := c.store.Resorts(ctx)
	if err != nil {
		return fmt.Errorf("load resorts: %w", err)
	}
	m := make(map[domain.ResortID]domain.Resort, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	c.resorts.Store(&m)
	c.lastReload.Store(time.Now().UnixNano())
	return nil
}

// lookup finds a resort in memory, reloading once on a miss (of the resort,
// or of the season unless it is the zero Season) if the last reload is old
// enough.
func (c *Catalog) lookup(ctx context.Context, id domain.ResortID, season domain.Season) (domain.Resort, bool) {
	r, ok := (*c.resorts.Load())[id]
	if ok && (season == domain.Season{} || r.HasSeason(season)) {
		return r, true
	}
	c.reloadIfOld(ctx)
	r, ok = (*c.resorts.Load())[id]
	return r, ok
}

// reloadIfOld reloads the reference data if the copy in memory is older
// than reloadEvery and no reload is under way; a failed reload keeps the
// copy.
func (c *Catalog) reloadIfOld(ctx context.Context) {
	if time.Since(time.Unix(0, c.lastReload.Load())) < reloadEvery || !c.reloadMu.TryLock() {
		return
	}
	defer c.reloadMu.Unlock()
	if err := c.reload(ctx); err != nil {
		c.log.Warn("reference data reload failed; serving the cached copy", "err", err)
	}
}

// CheckRide reports whether the ride's resort and season are registered.
func (c *Catalog) CheckRide(ctx context.Context, resortID domain.ResortID, season domain.Season) error {
	r, ok := c.lookup(ctx, resortID, season)
	if !ok {
		return domain.NotFound("resort %d does not exist; GET /resorts lists the resorts", resortID)
	}
	if !r.HasSeason(season) {
		return domain.NotFound("season %s is not registered for resort %d; POST /resorts/%d/seasons adds it", season, resortID, resortID)
	}
	return nil
}

// Resort returns one resort: the one check of a resort id, for every
// route that names one (an id out of range is invalid, an unknown one not
// found).
func (c *Catalog) Resort(ctx context.Context, id domain.ResortID) (domain.Resort, error) {
	if err := domain.ValidateResortID(id); err != nil {
		return domain.Resort{}, err
	}
	r, ok := c.lookup(ctx, id, domain.Season{})
	if !ok {
		return domain.Resort{}, domain.NotFound("resort %d does not exist; GET /resorts lists the resorts", id)
	}
	return r, nil
}

// List implements ports.Resorts.
func (c *Catalog) List(ctx context.Context) ([]domain.Resort, error) {
	c.reloadIfOld(ctx)
	m := *c.resorts.Load()
	out := make([]domain.Resort, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sortResorts(out)
	return out, nil
}

// Seasons implements ports.Resorts.
func (c *Catalog) Seasons(ctx context.Context, resortID domain.ResortID) ([]domain.Season, error) {
	c.reloadIfOld(ctx)
	r, err := c.Resort(ctx, resortID)
	if err != nil {
		return nil, err
	}
	return append([]domain.Season{}, r.Seasons...), nil
}

// AddSeason implements ports.Resorts: the store first, then memory.
func (c *Catalog) AddSeason(ctx context.Context, resortID domain.ResortID, season domain.Season) error {
	if _, err := c.Resort(ctx, resortID); err != nil {
		return err
	}
	if err := c.store.AddSeason(ctx, resortID, season); err != nil {
		return fmt.Errorf("add season %s to resort %d: %w", season, resortID, err)
	}
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	old := *c.resorts.Load()
	m := make(map[domain.ResortID]domain.Resort, len(old))
	for id, r := range old {
		m[id] = r
	}
	m[resortID] = m[resortID].WithSeason(season)
	c.resorts.Store(&m)
	return nil
}
