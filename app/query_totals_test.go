package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skidata/skidata/domain"
	"github.com/skidata/skidata/ports"
)

func TestSkierResortTotalsAsksTheStoreOncePerRequest(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{vert: 100}
	q := newCachedQuery(t, store, nil, ports.NopMetrics{})
	resorts := []domain.ResortID{3, 1, 5, 1, 2, 9, 10, 4}
	got, err := q.SkierResortTotals(ctx, 9, resorts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := store.calls.of(querySkierSeason); n != 1 {
		t.Errorf("%d store calls for one request naming %d resorts; want 1", n, len(resorts))
	}
	if want := []domain.ResortID{1, 2, 3, 4, 5, 9, 10}; len(store.asked) != 1 || !slices.Equal(slices.Sorted(slices.Values(store.asked[0])), want) {
		t.Errorf("the store was asked for %v; want once, for the distinct resorts %v", store.asked, want)
	}
	if len(got) != 1 || got[0].TotalVert != 700 {
		t.Errorf("totals = %v; want 2024: 7 × 100", got)
	}
}

func TestSkierResortTotalsAsksTheStoreOnlyForResortsNotCached(t *testing.T) {
	ctx := context.Background()
	store, cache := &countingStore{vert: 100}, newMapCache()
	q := newCachedQuery(t, store, cache, &cacheMetrics{})
	if _, err := q.SkierResortTotals(ctx, 9, []domain.ResortID{1, 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SkierResortTotals(ctx, 9, []domain.ResortID{1, 2, 3}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SkierResortTotals(ctx, 9, []domain.ResortID{3, 2, 1}, nil); err != nil {
		t.Fatal(err)
	}
	want := [][]domain.ResortID{{1, 2}, {3}}
	if !slices.EqualFunc(store.asked, want, slices.Equal) {
		t.Errorf("store asked for %v; want %v (each resort once, then the cache)", store.asked, want)
	}
}

func TestSkierResortTotalsUnknownResortIsNotFoundByName(t *testing.T) {
	q := newCachedQuery(t, &countingStore{vert: 100}, nil, ports.NopMetrics{})
	_, err := q.SkierResortTotals(context.Background(), 9, []domain.ResortID{1, 99999}, nil)
	if !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "resort 99999 does not exist") {
		t.Errorf("err = %v; want ErrNotFound naming resort 99999", err)
	}
}

func TestSkierResortTotalsCapsDistinctResortsAndSeasons(t *testing.T) {
	store := &countingStore{vert: 100}
	q := newCachedQuery(t, store, nil, ports.NopMetrics{})
	many := func(n int) []domain.ResortID {
		out := make([]domain.ResortID, n)
		for i := range out {
			out[i] = domain.ResortID(i%10 + 1)
		}
		return out
	}
	// Repeats do not count against the cap: 10,000 values naming the ten
	// demo resorts are ten resorts.
	if _, err := q.SkierResortTotals(context.Background(), 9, many(10_000), nil); err != nil {
		t.Errorf("10,000 repeats of 10 resorts: %v; want an answer", err)
	}
	over := make([]domain.ResortID, MaxTotalsResorts+1)
	for i := range over {
		over[i] = domain.ResortID(i + 1)
	}
	_, err := q.SkierResortTotals(context.Background(), 9, over, nil)
	if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxTotalsResorts)) {
		t.Errorf("%d distinct resorts: err = %v; want ErrInvalid stating the cap", len(over), err)
	}
	seasons := make([]domain.Season, MaxTotalsSeasons+1)
	for i := range seasons {
		seasons[i] = domain.MustSeason(fmt.Sprint(2000 + i))
	}
	_, err = q.SkierResortTotals(context.Background(), 9, []domain.ResortID{1}, seasons)
	if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxTotalsSeasons)) {
		t.Errorf("%d distinct seasons: err = %v; want ErrInvalid stating the cap", len(seasons), err)
	}
	if n := store.calls.of(querySkierSeason); n != 1 {
		t.Errorf("%d store calls; want 1 (requests over the cap cost nothing)", n)
	}
}

// seasonsStore answers season totals from a fixed table, seasons
// ascending as the port promises.
type seasonsStore struct {
	ports.RideStore
	totals map[domain.ResortID][]domain.SeasonVertical
}

func (s seasonsStore) SkierSeasonVerticals(_ context.Context, _ domain.SkierID, resortIDs []domain.ResortID) (map[domain.ResortID][]domain.SeasonVertical, error) {
	out := map[domain.ResortID][]domain.SeasonVertical{}
	for _, id := range resortIDs {
		out[id] = slices.Clone(s.totals[id])
	}
	return out, nil
}

// TestSkierResortTotalsOfOneResortAndOfSeveral: one resort's totals (the
// common question, answered without summing) and several resorts' sums
// are filtered by the seasons asked for, seasons ascending; a repeated
// resort is one resort, and seasons with no rides are not found.
func TestSkierResortTotalsOfOneResortAndOfSeveral(t *testing.T) {
	store := seasonsStore{totals: map[domain.ResortID][]domain.SeasonVertical{
		1: {{SeasonID: domain.MustSeason("2022"), TotalVert: 10}, {SeasonID: domain.MustSeason("2023"), TotalVert: 20}, {SeasonID: domain.MustSeason("2024"), TotalVert: 30}},
		2: {{SeasonID: domain.MustSeason("2023"), TotalVert: 5}},
	}}
	q := newCachedQuery(t, store, newMapCache(), &cacheMetrics{})
	for _, c := range []struct {
		resorts []domain.ResortID
		seasons []domain.Season
		want    string
	}{
		{[]domain.ResortID{1}, nil, "[{2022 10} {2023 20} {2024 30}]"},
		{[]domain.ResortID{1}, seasons("2024", "2022"), "[{2022 10} {2024 30}]"},
		{[]domain.ResortID{1, 1}, seasons("2023"), "[{2023 20}]"},
		{[]domain.ResortID{2, 1}, nil, "[{2022 10} {2023 25} {2024 30}]"},
		{[]domain.ResortID{1, 2}, seasons("2023", "2023"), "[{2023 25}]"},
		{[]domain.ResortID{1}, nil, "[{2022 10} {2023 20} {2024 30}]"}, // from the cache, as the filters above left it
		{[]domain.ResortID{1}, seasons("2021"), "not found"},
		{[]domain.ResortID{2}, seasons("2024"), "not found"},
	} {
		got, err := q.SkierResortTotals(context.Background(), 9, c.resorts, c.seasons)
		answer := fmt.Sprint(got)
		if errors.Is(err, domain.ErrNotFound) {
			answer = "not found"
		} else if err != nil {
			answer = err.Error()
		}
		if answer != c.want {
			t.Errorf("resorts %v, seasons %q: %s; want %s", c.resorts, c.seasons, answer, c.want)
		}
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
