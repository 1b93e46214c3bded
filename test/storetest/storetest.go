// Package storetest is the contract suite for ports.RideStore and
// ports.ResortStore. Every store adapter's tests call Run (and RunResorts)
// with a factory; a store is done when the suite passes.
//
// Each case gets a fresh store from the factory and runs in parallel with the
// others, so the factory must isolate its data (a unique schema, table prefix
// or database per call).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

// NewRideStore returns a fresh, empty store whose data no other call sees.
// It registers its own cleanup with t.Cleanup.
type NewRideStore func(t *testing.T) ports.RideStore

// NewResortStore is the same for reference data.
type NewResortStore func(t *testing.T) ports.ResortStore

// Options tunes the suite for slow backends.
type Options struct {
	// Rides is how many rides the bulk and concurrency cases write; 0 means 5000.
	Rides int
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func ride(t *testing.T, resort domain.ResortID, season string, day int, skier domain.SkierID, tm, lift int32) domain.LiftRide {
	t.Helper()
	r, err := domain.NewLiftRide(resort, domain.MustSeason(season), domain.MustDay(day), skier, tm, lift)
	if err != nil {
		t.Fatalf("bad fixture ride: %v", err)
	}
	return r
}

func add(t *testing.T, s ports.RideStore, rides ...domain.LiftRide) {
	t.Helper()
	if err := s.AddRides(ctx(t), rides); err != nil {
		t.Fatalf("AddRides(%d rides): %v", len(rides), err)
	}
}

// Run runs every RideStore case against stores made by newStore.
func Run(t *testing.T, newStore NewRideStore, opts Options) {
	if opts.Rides == 0 {
		opts.Rides = 5000
	}
	cases := []struct {
		name string
		fn   func(*testing.T, ports.RideStore)
	}{
		{"EmptyStoreAnswersZero", testEmpty},
		{"AddRidesEmptyBatch", testEmptyBatch},
		{"SkierDayVerticalSumsOneResortOneDay", testSkierDayVertical},
		{"UniqueSkiersCountsDistinctSkiers", testUniqueSkiers},
		{"SkierSeasonVerticalsPerSeasonAscending", testSeasonVerticals},
		{"SkierSeasonVerticalsOfSeveralResortsInOneCall", testSeasonVerticalsSeveralResorts},
		{"SkierDaysAcrossResorts", testSkierDays},
		{"SkierDayRidesSortedByTime", testSkierDayRides},
		{"DuplicateWithinBatchCountsOnce", testDuplicateInBatch},
		{"BatchWrittenTwiceCountsOnce", testBatchTwice},
		{"BatchPartlyStoredStoresTheRest", testBatchPartlyStored},
		{"SameTimeDifferentLiftAreTwoRides", testSameTimeDifferentLift},
		{"BulkLoadMatchesModel", func(t *testing.T, s ports.RideStore) { testBulk(t, s, opts.Rides) }},
		{"ConcurrentOverlappingWritersCountOnce", func(t *testing.T, s ports.RideStore) { testConcurrent(t, s, opts.Rides) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

func testEmpty(t *testing.T, s ports.RideStore) {
	c := ctx(t)
	wantSkiers(t, s, 1, "2024", 1, 0, "empty store")
	wantVertical(t, s, 1, "2024", 1, 7, 0, "empty store")
	if sv, err := s.SkierSeasonVerticals(c, 7, []domain.ResortID{1, 2}); err != nil || len(sv) != 0 {
		t.Errorf("SkierSeasonVerticals on empty store = %v, %v; want none", sv, err)
	}
	if d, err := s.SkierDays(c, 7, domain.MustSeason("2024")); err != nil || len(d) != 0 {
		t.Errorf("SkierDays on empty store = %v, %v; want none", d, err)
	}
	if r, err := s.SkierDayRides(c, 7, domain.MustSeason("2024"), domain.MustDay(1)); err != nil || len(r) != 0 {
		t.Errorf("SkierDayRides on empty store = %v, %v; want none", r, err)
	}
}

func testEmptyBatch(t *testing.T, s ports.RideStore) {
	add(t, s)
	wantSkiers(t, s, 1, "2024", 1, 0, "after an empty batch")
}

func testSkierDayVertical(t *testing.T, s ports.RideStore) {
	add(t, s,
		ride(t, 1, "2024", 5, 42, 10, 3),  // 30
		ride(t, 1, "2024", 5, 42, 20, 12), // 120
		ride(t, 1, "2024", 6, 42, 20, 12), // other day
		ride(t, 2, "2024", 5, 42, 30, 40), // other resort
		ride(t, 1, "2025", 5, 42, 30, 40), // other season
		ride(t, 1, "2024", 5, 43, 30, 40), // other skier
	)
	wantVertical(t, s, 1, "2024", 5, 42, 150, "two rides of the day")
	wantVertical(t, s, 2, "2024", 5, 42, 400, "the same skier and day at another resort")
	wantVertical(t, s, 1, "2024", 7, 42, 0, "a day with no rides")
}

func testUniqueSkiers(t *testing.T, s ports.RideStore) {
	add(t, s,
		ride(t, 3, "2024", 1, 1, 1, 1),
		ride(t, 3, "2024", 1, 1, 2, 2), // same skier again
		ride(t, 3, "2024", 1, 2, 1, 1),
		ride(t, 3, "2024", 1, 3, 9, 5),
		ride(t, 3, "2024", 2, 4, 1, 1), // other day
		ride(t, 4, "2024", 1, 5, 1, 1), // other resort
		ride(t, 3, "2025", 1, 6, 1, 1), // other season
	)
	wantSkiers(t, s, 3, "2024", 1, 3, "three skiers, one twice")
	wantSkiers(t, s, 3, "2024", 2, 1, "the other day")
	wantSkiers(t, s, 3, "2024", 3, 0, "a day with no rides")
}

func testSeasonVerticals(t *testing.T, s ports.RideStore) {
	add(t, s,
		ride(t, 1, "2025", 1, 9, 1, 2),  // 20
		ride(t, 1, "2025", 2, 9, 1, 3),  // 30
		ride(t, 1, "2023", 1, 9, 1, 1),  // 10
		ride(t, 1, "2024", 9, 9, 5, 10), // 100
		ride(t, 2, "2024", 9, 9, 6, 10), // other resort
		ride(t, 1, "2024", 9, 8, 6, 10), // other skier
	)
	got, err := s.SkierSeasonVerticals(ctx(t), 9, []domain.ResortID{1})
	if err != nil {
		t.Fatalf("SkierSeasonVerticals: %v", err)
	}
	want := []domain.SeasonVertical{{SeasonID: domain.MustSeason("2023"), TotalVert: 10}, {SeasonID: domain.MustSeason("2024"), TotalVert: 100}, {SeasonID: domain.MustSeason("2025"), TotalVert: 50}}
	if len(got) != 1 || !slices.Equal(got[1], want) {
		t.Errorf("SkierSeasonVerticals(9, [1]) = %v; want only resort 1: %v", got, want)
	}
}

// testSeasonVerticalsSeveralResorts asks for several resorts at once: the
// answer holds each asked-for resort with rides, per season, and nothing of
// the resorts not asked for.
func testSeasonVerticalsSeveralResorts(t *testing.T, s ports.RideStore) {
	add(t, s,
		ride(t, 1, "2024", 1, 9, 1, 2),   // 20
		ride(t, 1, "2025", 1, 9, 1, 3),   // 30
		ride(t, 3, "2024", 2, 9, 1, 4),   // 40
		ride(t, 3, "2024", 3, 9, 1, 5),   // 50
		ride(t, 2, "2024", 9, 9, 6, 10),  // not asked for
		ride(t, 3, "2024", 9, 8, 6, 10),  // other skier
		ride(t, 7, "2023", 9, 9, 6, 100), // not asked for
	)
	got, err := s.SkierSeasonVerticals(ctx(t), 9, []domain.ResortID{3, 1, 5})
	if err != nil {
		t.Fatalf("SkierSeasonVerticals: %v", err)
	}
	want := map[domain.ResortID][]domain.SeasonVertical{
		1: {{SeasonID: domain.MustSeason("2024"), TotalVert: 20}, {SeasonID: domain.MustSeason("2025"), TotalVert: 30}},
		3: {{SeasonID: domain.MustSeason("2024"), TotalVert: 90}},
	}
	if len(got[5]) != 0 {
		t.Errorf("resort 5 has no rides of skier 9 but got %v", got[5])
	}
	delete(got, 5)
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("SkierSeasonVerticals(9, [3 1 5]) = %v; want %v", got, want)
	}
}

func testSkierDays(t *testing.T, s ports.RideStore) {
	add(t, s,
		ride(t, 1, "2024", 30, 11, 1, 1),
		ride(t, 2, "2024", 3, 11, 1, 1),
		ride(t, 1, "2024", 3, 11, 2, 1),
		ride(t, 1, "2024", 366, 11, 2, 1),
		ride(t, 1, "2025", 4, 11, 2, 1), // other season
		ride(t, 1, "2024", 5, 12, 2, 1), // other skier
	)
	got, err := s.SkierDays(ctx(t), 11, domain.MustSeason("2024"))
	if err != nil {
		t.Fatalf("SkierDays: %v", err)
	}
	if want := []domain.Day{domain.MustDay(3), domain.MustDay(30), domain.MustDay(366)}; !slices.Equal(got, want) {
		t.Errorf("SkierDays(11, 2024) = %v; want %v", got, want)
	}
}

func testSkierDayRides(t *testing.T, s ports.RideStore) {
	want := []domain.LiftRide{
		ride(t, 2, "2024", 7, 21, 0, 4),
		ride(t, 1, "2024", 7, 21, 15, 9),
		ride(t, 1, "2024", 7, 21, 15, 30),
		ride(t, 2, "2024", 7, 21, 15, 1),
		ride(t, 1, "2024", 7, 21, 360, 2),
	}
	// Written out of order, with rides of other days and skiers mixed in.
	add(t, s, want[4], ride(t, 1, "2024", 8, 21, 1, 1), want[2], want[0])
	add(t, s, want[3], ride(t, 1, "2024", 7, 22, 1, 1), want[1])
	got, err := s.SkierDayRides(ctx(t), 21, domain.MustSeason("2024"), domain.MustDay(7))
	if err != nil {
		t.Fatalf("SkierDayRides: %v", err)
	}
	// Ordered by time, then resort, then lift.
	sorted := []domain.LiftRide{want[0], want[1], want[2], want[3], want[4]}
	if !slices.Equal(got, sorted) {
		t.Errorf("SkierDayRides(21, 2024, 7) =\n %v\nwant\n %v", got, sorted)
	}
}

func testDuplicateInBatch(t *testing.T, s ports.RideStore) {
	r := ride(t, 1, "2024", 1, 5, 10, 7)
	add(t, s, r, r, r)
	c := ctx(t)
	wantVertical(t, s, 1, "2024", 1, 5, 70, "one ride written three times in a batch")
	if rides, err := s.SkierDayRides(c, 5, domain.MustSeason("2024"), domain.MustDay(1)); err != nil || len(rides) != 1 {
		t.Errorf("rides after one ride written three times = %v, %v; want one", rides, err)
	}
}

func testBatchTwice(t *testing.T, s ports.RideStore) {
	batch := []domain.LiftRide{ride(t, 1, "2024", 1, 5, 10, 7), ride(t, 1, "2024", 1, 6, 11, 8)}
	add(t, s, batch...)
	add(t, s, batch...)
	add(t, s, batch[1])
	c := ctx(t)
	wantSkiers(t, s, 1, "2024", 1, 2, "after a redelivered batch")
	wantVertical(t, s, 1, "2024", 1, 6, 80, "after a redelivered batch")
	if sv, err := s.SkierSeasonVerticals(c, 6, []domain.ResortID{1}); err != nil || !slices.Equal(sv[1], []domain.SeasonVertical{{SeasonID: domain.MustSeason("2024"), TotalVert: 80}}) {
		t.Errorf("season totals after a redelivered batch = %v, %v; want [{2024 80}]", sv, err)
	}
}

// testBatchPartlyStored writes a batch in which one ride is already
// stored (a message redelivered together with new ones): the new rides
// are stored, the old one still counts once.
func testBatchPartlyStored(t *testing.T, s ports.RideStore) {
	stored := ride(t, 1, "2024", 1, 5, 10, 7)
	add(t, s, stored)
	add(t, s, ride(t, 1, "2024", 1, 4, 9, 3), stored, ride(t, 1, "2024", 1, 5, 12, 2), ride(t, 1, "2024", 1, 6, 11, 8))
	wantSkiers(t, s, 1, "2024", 1, 3, "after a batch with one ride already stored")
	wantVertical(t, s, 1, "2024", 1, 5, 90, "the skier whose ride was stored before (70 stored once + 20 new)")
	wantVertical(t, s, 1, "2024", 1, 6, 80, "a skier new in the batch")
}

func testSameTimeDifferentLift(t *testing.T, s ports.RideStore) {
	add(t, s, ride(t, 1, "2024", 1, 5, 10, 7), ride(t, 1, "2024", 1, 5, 10, 8))
	wantVertical(t, s, 1, "2024", 1, 5, 150, "two rides at the same time on different lifts")
}

// wantVertical checks one skier-day's vertical; what names the case.
func wantVertical(t *testing.T, s ports.RideStore, resort domain.ResortID, season string, day int, skier domain.SkierID, want int64, what string) {
	t.Helper()
	if v, err := s.SkierDayVertical(ctx(t), resort, domain.MustSeason(season), domain.MustDay(day), skier); err != nil || v != want {
		t.Errorf("%s: SkierDayVertical(resort %d, %s, day %d, skier %d) = %d, %v; want %d", what, resort, season, day, skier, v, err, want)
	}
}

// wantSkiers checks one resort-day's count of unique skiers.
func wantSkiers(t *testing.T, s ports.RideStore, resort domain.ResortID, season string, day, want int, what string) {
	t.Helper()
	if n, err := s.UniqueSkiers(ctx(t), resort, domain.MustSeason(season), domain.MustDay(day)); err != nil || n != want {
		t.Errorf("%s: UniqueSkiers(resort %d, %s, day %d) = %d, %v; want %d", what, resort, season, day, n, err, want)
	}
}

// model is the reference answer: a plain in-test computation over the rides.
type model struct {
	rides   map[domain.LiftRide]bool
	skiers  map[[3]string]map[domain.SkierID]bool // resort, season, day
	dayVert map[string]int64
}

func newModel(rides []domain.LiftRide) model {
	m := model{rides: map[domain.LiftRide]bool{}, skiers: map[[3]string]map[domain.SkierID]bool{}, dayVert: map[string]int64{}}
	for _, r := range rides {
		if m.rides[r] {
			continue
		}
		m.rides[r] = true
		k := [3]string{fmt.Sprint(r.ResortID()), r.SeasonID().String(), r.DayID().String()}
		if m.skiers[k] == nil {
			m.skiers[k] = map[domain.SkierID]bool{}
		}
		m.skiers[k][r.SkierID()] = true
		m.dayVert[fmt.Sprint(r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID())] += int64(r.Vertical())
	}
	return m
}

// randomRides makes n rides over a small key space, so that skiers repeat and
// some rides are exact duplicates.
func randomRides(t *testing.T, seed uint64, n int) []domain.LiftRide {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]domain.LiftRide, n)
	for i := range out {
		out[i] = ride(t, domain.ResortID(1+rng.Int32N(3)), "2024", 1+rng.IntN(2), domain.SkierID(1+rng.Int32N(int32(n/4+1))), rng.Int32N(60), 1+rng.Int32N(5))
	}
	return out
}

func checkModel(t *testing.T, s ports.RideStore, m model, rides []domain.LiftRide) {
	t.Helper()
	c := ctx(t)
	for k, skiers := range m.skiers {
		var resort domain.ResortID
		var day int
		fmt.Sscan(k[0], &resort)
		fmt.Sscan(k[2], &day)
		n, err := s.UniqueSkiers(c, resort, domain.MustSeason(k[1]), domain.MustDay(day))
		if err != nil || n != len(skiers) {
			t.Errorf("UniqueSkiers(%d, %s, %d) = %d, %v; want %d", resort, k[1], day, n, err, len(skiers))
		}
	}
	// Every 25th ride's skier-day vertical: enough to catch double counting.
	for i := 0; i < len(rides); i += 25 {
		r := rides[i]
		want := m.dayVert[fmt.Sprint(r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID())]
		v, err := s.SkierDayVertical(c, r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID())
		if err != nil || v != want {
			t.Errorf("SkierDayVertical(%d, %s, %s, %d) = %d, %v; want %d", r.ResortID(), r.SeasonID(), r.DayID(), r.SkierID(), v, err, want)
		}
	}
}

func testBulk(t *testing.T, s ports.RideStore, n int) {
	rides := randomRides(t, 1, n)
	for i := 0; i < len(rides); i += 500 {
		add(t, s, rides[i:min(i+500, len(rides))]...)
	}
	checkModel(t, s, newModel(rides), rides)
}

func testConcurrent(t *testing.T, s ports.RideStore, n int) {
	rides := randomRides(t, 2, n)
	// Four writers each write every ride (in their own order and batch
	// size): the store must end up as if each ride was written once.
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		mine := slices.Clone(rides)
		rand.New(rand.NewPCG(uint64(w), 1)).Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		size := 100 + 150*w
		wg.Go(func() {
			for i := 0; i < len(mine); i += size {
				if err := s.AddRides(ctx(t), mine[i:min(i+size, len(mine))]); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkModel(t, s, newModel(rides), rides)
}

// RunResorts runs every ResortStore case against stores made by newStore.
func RunResorts(t *testing.T, newStore NewResortStore) {
	cases := []struct {
		name string
		fn   func(*testing.T, ports.ResortStore)
	}{
		{"EmptyHasNoResorts", func(t *testing.T, s ports.ResortStore) {
			rs, err := s.Resorts(ctx(t))
			if err != nil || len(rs) != 0 {
				t.Errorf("Resorts on empty store = %v, %v; want none", rs, err)
			}
		}},
		{"PutAndListAscending", testPutResorts},
		{"AddSeasonIdempotent", testAddSeason},
		{"AddSeasonUnknownResortIsNotFound", func(t *testing.T, s ports.ResortStore) {
			err := s.AddSeason(ctx(t), 99, domain.MustSeason("2024"))
			if !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("AddSeason on unknown resort = %v; want ErrNotFound", err)
			}
		}},
		{"PutResortKeepsExistingSeasons", func(t *testing.T, s ports.ResortStore) {
			c := ctx(t)
			put(t, s, 1, "Old Name", "2023")
			if err := s.AddSeason(c, 1, domain.MustSeason("2024")); err != nil {
				t.Fatal(err)
			}
			put(t, s, 1, "New Name", "2025")
			rs, err := s.Resorts(c)
			if err != nil || len(rs) != 1 || rs[0].Name != "New Name" || !slices.Equal(rs[0].Seasons, seasons("2023", "2024", "2025")) {
				t.Errorf("after re-putting a resort: %+v, %v; want New Name with 2023, 2024, 2025", rs, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

func put(t *testing.T, s ports.ResortStore, id domain.ResortID, name string, years ...string) {
	t.Helper()
	r, err := domain.NewResort(id, name, seasons(years...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutResort(ctx(t), r); err != nil {
		t.Fatalf("PutResort(%d): %v", id, err)
	}
}

func testPutResorts(t *testing.T, s ports.ResortStore) {
	put(t, s, 3, "Three", "2025", "2024")
	put(t, s, 1, "One")
	put(t, s, 2, "Two", "2024")
	rs, err := s.Resorts(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].ID != 1 || rs[1].ID != 2 || rs[2].ID != 3 {
		t.Fatalf("Resorts = %+v; want ids 1, 2, 3", rs)
	}
	if rs[2].Name != "Three" || !slices.Equal(rs[2].Seasons, seasons("2024", "2025")) {
		t.Errorf("resort 3 = %+v; want Three with seasons 2024, 2025", rs[2])
	}
	if len(rs[0].Seasons) != 0 {
		t.Errorf("resort 1 seasons = %v; want none", rs[0].Seasons)
	}
}

func testAddSeason(t *testing.T, s ports.ResortStore) {
	put(t, s, 1, "One", "2024")
	c := ctx(t)
	for range 2 {
		if err := s.AddSeason(c, 1, domain.MustSeason("2026")); err != nil {
			t.Fatalf("AddSeason: %v", err)
		}
	}
	rs, err := s.Resorts(c)
	if err != nil || len(rs) != 1 || !slices.Equal(rs[0].Seasons, seasons("2024", "2026")) {
		t.Errorf("after adding 2026 twice: %+v, %v; want seasons 2024, 2026", rs, err)
	}
}

// seasons is the seasons of the given years, in the order given.
func seasons(years ...string) []domain.Season {
	out := make([]domain.Season, len(years))
	for i, y := range years {
		out[i] = domain.MustSeason(y)
	}
	return out
}
