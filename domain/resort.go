package domain

import (
	"slices"
	"strings"
)

// Resort is reference data: a ski resort and the seasons it has registered.
// Rides are accepted only for a registered (resort, season) pair.
type Resort struct {
	ID      ResortID
	Name    string
	Seasons []Season // ascending, no duplicates
}

// NewResort validates a resort and normalises its seasons (sorted, unique).
func NewResort(id ResortID, name string, seasons ...Season) (Resort, error) {
	if err := ValidateResortID(id); err != nil {
		return Resort{}, err
	}
	if strings.TrimSpace(name) == "" {
		return Resort{}, Invalid("resort %d needs a name", id)
	}
	r := Resort{ID: id, Name: name}
	for _, s := range seasons {
		r = r.WithSeason(s)
	}
	return r, nil
}

// HasSeason reports whether the season is registered for the resort.
func (r Resort) HasSeason(season Season) bool {
	_, found := slices.BinarySearchFunc(r.Seasons, season, Season.Compare)
	return found
}

// WithSeason returns a copy of r with the season registered; r is unchanged.
func (r Resort) WithSeason(season Season) Resort {
	i, found := slices.BinarySearchFunc(r.Seasons, season, Season.Compare)
	if found {
		return r
	}
	r.Seasons = slices.Insert(slices.Clone(r.Seasons), i, season)
	return r
}

// SeasonVertical is a skier's total vertical in one season. Totals are
// int64 everywhere: a ride climbs at most 10,000 m, so no realistic sum
// comes near wrapping.
type SeasonVertical struct {
	SeasonID  Season
	TotalVert int64
}
