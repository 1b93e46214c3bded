package app

import "github.com/skidata/skidata/domain"

// DemoSeasons are registered for every demo resort.
var DemoSeasons = []domain.Season{domain.MustSeason("2024"), domain.MustSeason("2025")}

// demoResortNames are the ten demo resorts loaded into an empty store, ids 1..10.
var demoResortNames = []string{
	"Mission Ridge", "Crystal Mountain", "Stevens Pass", "Mt. Baker", "Snoqualmie Pass",
	"Mt. Bachelor", "Whistler Blackcomb", "Big Sky", "Alta", "Jackson Hole",
}

// DemoResorts returns the demo fixture: ten resorts with seasons 2024 and 2025.
func DemoResorts() []domain.Resort {
	out := make([]domain.Resort, len(demoResortNames))
	for i, name := range demoResortNames {
		r, err := domain.NewResort(domain.ResortID(i+1), name, DemoSeasons...)
		if err != nil {
			panic(err) // the fixture is constant: a failure here is a programming error
		}
		out[i] = r
	}
	return out
}
