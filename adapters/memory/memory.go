// Package memory is the in-process store adapter: rides and resorts kept in
// maps, for running with nothing installed and as the reference the other
// stores are compared with. Everything is lost when the process ends.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// The indexes are keyed by two or three of a ride's ids packed into one
// uint64: such a map hashes and compares a machine word. A season's year
// and a day each fit 16 bits.
type (
	resortDay   uint64 // resort, season, day
	skierDay    uint64 // skier, season, day
	skierSeason uint64 // skier, season
	skierResort uint64 // skier, resort
)

// The keys of a ride or of a query.
func keySkierDay(skier domain.SkierID, season domain.Season, day domain.Day) skierDay {
	return skierDay(idSeasonDay(int32(skier), season, day))
}

func keyResortDay(resort domain.ResortID, season domain.Season, day domain.Day) resortDay {
	return resortDay(idSeasonDay(int32(resort), season, day))
}

func keySkierSeason(skier domain.SkierID, season domain.Season) skierSeason {
	return skierSeason(uint64(uint32(skier))<<32 | uint64(season.Year()))
}

func keySkierResort(skier domain.SkierID, resort domain.ResortID) skierResort {
	return skierResort(uint64(uint32(skier))<<32 | uint64(uint32(resort)))
}

func idSeasonDay(id int32, season domain.Season, day domain.Day) uint64 {
	return uint64(uint32(id))<<32 | uint64(season.Year())<<16 | uint64(day.Number())
}

// RideStore keeps rides in maps, with one index per query so that every read
// is a map lookup rather than a scan. One lock guards them all: writes come
// in batches, so the lock is taken a few hundred times a second at most.
//
// A skier-day's rides are kept as their resort, time and lift (the key
// holds the rest): an array the garbage collector need not scan. A ride already stored is found among its
// skier-day's rides (a few dozen on a real day) rather than in a set of
// every ride; a day past scanMax rides (only a hostile or synthetic load
// makes one) gets sets of its own, so that the check stays constant-time.
//
// The other indexes are written only when a ride adds something to them:
// a resort-day counts a skier when the skier-day has its first ride at
// that resort (a count, not a set of skiers), and a skier-season's days
// (a bit per day of the year) change only with a skier-day's first ride.
// The verticals per season are short sorted slices: a skier has a few
// seasons per resort.
type RideStore struct {
	mu       sync.RWMutex
	dayRides map[skierDay][]dayRide
	bigDays  map[skierDay]*bigDay
	skiers   map[resortDay]int
	days     map[skierSeason]daySet
	seasons  map[skierResort][]domain.SeasonVertical // ascending by season
}

// dayRide is a ride within its skier-day.
type dayRide struct {
	resort domain.ResortID
	time   int32
	lift   int32
}

// bigDay holds the rides and resorts of a skier-day past scanMax rides.
type bigDay struct {
	rides   map[dayRide]struct{}
	resorts map[domain.ResortID]struct{}
}

// daySet is a set of days of a season, 1..366, a bit each.
type daySet [domain.MaxDay/64 + 1]uint64

func (d *daySet) add(day domain.Day) { n := day.Number(); d[n/64] |= 1 << (n % 64) }

// list is the days in the set, ascending.
func (d *daySet) list() ([]domain.Day, error) {
	var days []domain.Day
	for i, word := range d {
		for ; word != 0; word &= word - 1 {
			day, err := domain.NewDay(i*64 + bits.TrailingZeros64(word))
			if err != nil {
				return nil, err
			}
			days = append(days, day)
		}
	}
	return days, nil
}

var _ ports.RideStore = (*RideStore)(nil)

// NewRideStore returns an empty store.
func NewRideStore() *RideStore {
	return &RideStore{
		dayRides: map[skierDay][]dayRide{},
		bigDays:  map[skierDay]*bigDay{},
		skiers:   map[resortDay]int{},
		days:     map[skierSeason]daySet{},
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
		sd := keySkierDay(r.SkierID(), r.SeasonID(), r.DayID())
		ofDay := s.dayRides[sd]
		dr := dayRide{resort: r.ResortID(), time: r.Time(), lift: r.LiftID()}
		stored, atResort := s.seen(sd, ofDay, dr)
		if stored {
			continue
		}
		s.dayRides[sd] = append(ofDay, dr)
		if big := s.bigDays[sd]; big != nil {
			big.rides[dr] = struct{}{}
			big.resorts[dr.resort] = struct{}{}
		}
		if !atResort {
			s.skiers[keyResortDay(r.ResortID(), r.SeasonID(), r.DayID())]++
		}
		if len(ofDay) == 0 {
			ss := keySkierSeason(r.SkierID(), r.SeasonID())
			days := s.days[ss]
			days.add(r.DayID())
			s.days[ss] = days
		}
		sr := keySkierResort(r.SkierID(), r.ResortID())
		vs := s.seasons[sr]
		i, found := slices.BinarySearchFunc(vs, r.SeasonID(), func(v domain.SeasonVertical, season domain.Season) int {
			return v.SeasonID.Compare(season)
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

// seen says whether r is among ofDay, the rides of its skier-day sd, and
// whether any of them is at r's resort.
func (s *RideStore) seen(sd skierDay, ofDay []dayRide, r dayRide) (stored, atResort bool) {
	if len(ofDay) <= scanMax {
		for _, x := range ofDay {
			if x.resort == r.resort {
				atResort = true
				if x == r {
					return true, true
				}
			}
		}
		return false, atResort
	}
	big := s.bigDays[sd]
	if big == nil {
		big = &bigDay{rides: make(map[dayRide]struct{}, 2*len(ofDay)), resorts: map[domain.ResortID]struct{}{}}
		for _, x := range ofDay {
			big.rides[x] = struct{}{}
			big.resorts[x.resort] = struct{}{}
		}
		s.bigDays[sd] = big
	}
	_, stored = big.rides[r]
	_, atResort = big.resorts[r.resort]
	return stored, atResort
}

// UniqueSkiers implements ports.RideStore.
func (s *RideStore) UniqueSkiers(_ context.Context, resortID domain.ResortID, season domain.Season, day domain.Day) (int, error) {
	k := keyResortDay(resortID, season, day)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.skiers[k], nil
}

// SkierDayVertical implements ports.RideStore.
func (s *RideStore) SkierDayVertical(_ context.Context, resortID domain.ResortID, season domain.Season, day domain.Day, skierID domain.SkierID) (int64, error) {
	k := keySkierDay(skierID, season, day)
	s.mu.RLock()
	defer s.mu.RUnlock()
	var total int64
	for _, r := range s.dayRides[k] {
		if r.resort == resortID {
			total += int64(r.lift) * domain.VerticalPerLift
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
func (s *RideStore) SkierDays(_ context.Context, skierID domain.SkierID, season domain.Season) ([]domain.Day, error) {
	k := keySkierSeason(skierID, season)
	s.mu.RLock()
	days := s.days[k]
	s.mu.RUnlock()
	return days.list()
}

// SkierDayRides implements ports.RideStore.
func (s *RideStore) SkierDayRides(_ context.Context, skierID domain.SkierID, season domain.Season, day domain.Day) ([]domain.LiftRide, error) {
	k := keySkierDay(skierID, season, day)
	s.mu.RLock()
	ofDay := slices.Clone(s.dayRides[k])
	s.mu.RUnlock()
	out := make([]domain.LiftRide, len(ofDay))
	for i, x := range ofDay {
		r, err := domain.NewLiftRide(x.resort, season, day, skierID, x.time, x.lift)
		if err != nil {
			return nil, fmt.Errorf("memory store: ride %d of skier %d's day %s/%s: %w", i, skierID, season, day, err) // stored rides are valid: a bug
		}
		out[i] = r
	}
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
func (s *ResortStore) AddSeason(_ context.Context, resortID domain.ResortID, season domain.Season) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.resorts[resortID]
	if !ok {
		return domain.NotFound("resort %d does not exist", resortID)
	}
	s.resorts[resortID] = r.WithSeason(season)
	return nil
}
