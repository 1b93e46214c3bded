// Package memory is the in-process store adapter: rides and resorts kept in
// maps, for running with nothing installed and as the reference the other
// stores are compared with. Everything is lost when the process ends.
package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// The indexes are keyed by two or three of a ride's ids packed into one
// uint64: such a map hashes and compares a machine word, where a struct
// key holding the season's text hashed and compared a string field by
// field (the store's map work was most of its share of a POST's CPU).
// A season is a four-digit year and a day 1..366, so each fits 16 bits.
type (
	resortDay   uint64 // resort, season, day
	skierDay    uint64 // skier, season, day
	skierSeason uint64 // skier, season
	skierResort uint64 // skier, resort
)

// The keys of a ride or of a query. A query naming a season that is not a
// four-digit year, or a day outside 1..366, has no key: no ride has it.
func keySkierDay(skier domain.SkierID, seasonID string, day int) (skierDay, bool) {
	k, ok := idSeasonDay(int32(skier), seasonID, day)
	return skierDay(k), ok
}

func keyResortDay(resort domain.ResortID, seasonID string, day int) (resortDay, bool) {
	k, ok := idSeasonDay(int32(resort), seasonID, day)
	return resortDay(k), ok
}

func keySkierSeason(skier domain.SkierID, seasonID string) (skierSeason, bool) {
	n, ok := seasonNumber(seasonID)
	return skierSeason(uint64(uint32(skier))<<32 | n), ok
}

func keySkierResort(skier domain.SkierID, resort domain.ResortID) skierResort {
	return skierResort(uint64(uint32(skier))<<32 | uint64(uint32(resort)))
}

func idSeasonDay(id int32, seasonID string, day int) (uint64, bool) {
	n, ok := seasonNumber(seasonID)
	if !ok || domain.ValidateDayID(day) != nil {
		return 0, false
	}
	return uint64(uint32(id))<<32 | n<<16 | uint64(day), true
}

// seasonNumber is a season's four digits as a number.
func seasonNumber(s string) (uint64, bool) {
	if domain.ValidateSeasonID(s) != nil {
		return 0, false
	}
	return uint64(s[0]-'0')*1000 + uint64(s[1]-'0')*100 + uint64(s[2]-'0')*10 + uint64(s[3]-'0'), true
}

// RideStore keeps rides in maps, with one index per query so that every read
// is a map lookup rather than a scan. One lock guards them all: writes come
// in batches, so the lock is taken a few hundred times a second at most.
//
// The per-skier indexes (days of a season, verticals per season) hold short
// sorted slices rather than inner maps: a skier has a few days per season and
// a few seasons per resort, and under load nearly every ride opens a new
// skier-season, so an inner map per key was an allocation-heavy part of the
// write path (profiled at 2-3% of the server's CPU under skiload).
//
// A ride already stored is found among its skier-day's rides (a few dozen
// on a real day) rather than in a set of every ride, which cost a map
// insert per ride and the store's largest map; a day past scanMax rides
// (only a hostile or synthetic load makes one) gets a set of its own, so
// that the check stays constant-time.
type RideStore struct {
	mu       sync.RWMutex
	bigDays  map[skierDay]map[domain.LiftRide]struct{}
	skiers   map[resortDay]map[domain.SkierID]struct{}
	dayRides map[skierDay][]domain.LiftRide
	days     map[skierSeason][]int                   // ascending, distinct
	seasons  map[skierResort][]domain.SeasonVertical // ascending by season
}

var _ ports.RideStore = (*RideStore)(nil)

// NewRideStore returns an empty store.
func NewRideStore() *RideStore {
	return &RideStore{
		bigDays:  map[skierDay]map[domain.LiftRide]struct{}{},
		skiers:   map[resortDay]map[domain.SkierID]struct{}{},
		dayRides: map[skierDay][]domain.LiftRide{},
		days:     map[skierSeason][]int{},
		seasons:  map[skierResort][]domain.SeasonVertical{},
	}
}

// AddRides stores the rides not already stored.
func (s *RideStore) AddRides(ctx context.Context, rides []domain.LiftRide) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rides {
		// A stored ride is valid: its season and day have keys.
		sd, _ := keySkierDay(r.SkierID(), r.SeasonID(), r.DayID())
		ofDay := s.dayRides[sd]
		if s.stored(sd, ofDay, r) {
			continue
		}
		s.dayRides[sd] = append(ofDay, r)
		if set := s.bigDays[sd]; set != nil {
			set[r] = struct{}{}
		}
		rd, _ := keyResortDay(r.ResortID(), r.SeasonID(), r.DayID())
		skiers := s.skiers[rd]
		if skiers == nil {
			skiers = map[domain.SkierID]struct{}{}
			s.skiers[rd] = skiers
		}
		skiers[r.SkierID()] = struct{}{}
		ss, _ := keySkierSeason(r.SkierID(), r.SeasonID())
		days := s.days[ss]
		if i, found := slices.BinarySearch(days, r.DayID()); !found {
			s.days[ss] = slices.Insert(days, i, r.DayID())
		}
		sr := keySkierResort(r.SkierID(), r.ResortID())
		vs := s.seasons[sr]
		i, found := slices.BinarySearchFunc(vs, r.SeasonID(), func(v domain.SeasonVertical, season string) int {
			return cmp.Compare(v.SeasonID, season)
		})
		if found {
			vs[i].TotalVert += int64(r.Vertical())
		} else {
			s.seasons[sr] = slices.Insert(vs, i, domain.SeasonVertical{SeasonID: r.SeasonID(), TotalVert: int64(r.Vertical())})
		}
	}
	return nil
}

// scanMax is the most rides of a skier-day searched one by one.
const scanMax = 64

// stored says whether r is among ofDay, the rides of its skier-day sd.
func (s *RideStore) stored(sd skierDay, ofDay []domain.LiftRide, r domain.LiftRide) bool {
	if len(ofDay) <= scanMax {
		return slices.Contains(ofDay, r)
	}
	set := s.bigDays[sd]
	if set == nil {
		set = make(map[domain.LiftRide]struct{}, 2*len(ofDay))
		for _, x := range ofDay {
			set[x] = struct{}{}
		}
		s.bigDays[sd] = set
	}
	_, ok := set[r]
	return ok
}

// UniqueSkiers implements ports.RideStore.
func (s *RideStore) UniqueSkiers(_ context.Context, resortID domain.ResortID, seasonID string, dayID int) (int, error) {
	k, ok := keyResortDay(resortID, seasonID, dayID)
	if !ok {
		return 0, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.skiers[k]), nil
}

// SkierDayVertical implements ports.RideStore.
func (s *RideStore) SkierDayVertical(_ context.Context, resortID domain.ResortID, seasonID string, dayID int, skierID domain.SkierID) (int64, error) {
	k, ok := keySkierDay(skierID, seasonID, dayID)
	if !ok {
		return 0, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var total int64
	for _, r := range s.dayRides[k] {
		if r.ResortID() == resortID {
			total += int64(r.Vertical())
		}
	}
	return total, nil
}

// SkierSeasonVerticals implements ports.RideStore.
func (s *RideStore) SkierSeasonVerticals(_ context.Context, skierID domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[domain.ResortID][]domain.SeasonVertical, len(resortIDs))
	for _, id := range resortIDs {
		if vs := s.seasons[keySkierResort(skierID, id)]; len(vs) > 0 {
			out[id] = slices.Clone(vs) // kept sorted by AddRides
		}
	}
	return out, nil
}

// SkierDays implements ports.RideStore.
func (s *RideStore) SkierDays(_ context.Context, skierID domain.SkierID, seasonID string) ([]int, error) {
	k, ok := keySkierSeason(skierID, seasonID)
	if !ok {
		return nil, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.days[k]), nil // kept sorted by AddRides
}

// SkierDayRides implements ports.RideStore.
func (s *RideStore) SkierDayRides(_ context.Context, skierID domain.SkierID, seasonID string, dayID int) ([]domain.LiftRide, error) {
	k, ok := keySkierDay(skierID, seasonID, dayID)
	if !ok {
		return nil, nil
	}
	s.mu.RLock()
	out := slices.Clone(s.dayRides[k])
	s.mu.RUnlock()
	slices.SortFunc(out, domain.CompareRidesInDay)
	return out, nil
}

// ResortStore keeps the reference data in a map.
type ResortStore struct {
	mu      sync.Mutex
	resorts map[domain.ResortID]domain.Resort
}

var _ ports.ResortStore = (*ResortStore)(nil)

// NewResortStore returns an empty resort store.
func NewResortStore() *ResortStore {
	return &ResortStore{resorts: map[domain.ResortID]domain.Resort{}}
}

// Resorts implements ports.ResortStore.
func (s *ResortStore) Resorts(context.Context) ([]domain.Resort, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]domain.Resort, 0, len(s.resorts))
	for _, r := range s.resorts {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b domain.Resort) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PutResort implements ports.ResortStore.
func (s *ResortStore) PutResort(_ context.Context, r domain.Resort) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	merged := s.resorts[r.ID]
	merged.ID, merged.Name = r.ID, r.Name
	for _, season := range r.Seasons {
		merged = merged.WithSeason(season)
	}
	s.resorts[r.ID] = merged
	return nil
}

// AddSeason implements ports.ResortStore.
func (s *ResortStore) AddSeason(_ context.Context, resortID domain.ResortID, seasonID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.resorts[resortID]
	if !ok {
		return domain.NotFound("resort %d does not exist", resortID)
	}
	s.resorts[resortID] = r.WithSeason(seasonID)
	return nil
}
