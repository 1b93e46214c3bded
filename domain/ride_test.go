package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skidata/skidata/domain"
)

func TestNewLiftRideAcceptsValidRide(t *testing.T) {
	r, err := domain.NewLiftRide(1, domain.MustSeason("2024"), domain.MustDay(366), 7, 0, 40)
	if err != nil {
		t.Fatalf("valid ride rejected: %v", err)
	}
	want := domain.MustLiftRide(1, "2024", 366, 7, 0, 40)
	if r != want {
		t.Errorf("NewLiftRide = %+v; want %+v", r, want)
	}
}

func TestNewLiftRideRejectsEachBrokenRule(t *testing.T) {
	cases := []struct {
		name          string
		resort        domain.ResortID
		skier         domain.SkierID
		time, lift    int32
		wantInMessage string
	}{
		{"resort zero", 0, 1, 1, 1, "resortID must be a positive integer"},
		{"resort negative", -3, 1, 1, 1, "resortID must be a positive integer"},
		{"skier zero", 1, 0, 1, 1, "skierID must be a positive integer"},
		{"time negative", 1, 1, -1, 1, "time must be between 0 and 1439"},
		{"lift zero", 1, 1, 1, 0, "liftID must be between 1 and 1000"},
		{"lift negative", 1, 1, 1, -2, "liftID must be between 1 and 1000"},
		{"time past the day", 1, 1, 1440, 1, "time must be between 0 and 1439"},
		{"time max int32", 1, 1, 2147483647, 1, "time must be between 0 and 1439"},
		{"lift 1001", 1, 1, 1, 1001, "liftID must be between 1 and 1000"},
		{"lift max int32", 1, 1, 217, 2147483647, "liftID must be between 1 and 1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := domain.NewLiftRide(c.resort, domain.MustSeason("2024"), domain.MustDay(1), c.skier, c.time, c.lift)
			if !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("err = %v; want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.wantInMessage) {
				t.Errorf("message %q does not say %q", err.Error(), c.wantInMessage)
			}
		})
	}
}

func TestNewLiftRideAcceptsTheBounds(t *testing.T) {
	for _, c := range []struct{ time, lift int32 }{{domain.MinTime, domain.MinLiftID}, {domain.MaxTime, domain.MaxLiftID}} {
		if _, err := domain.NewLiftRide(1, domain.MustSeason("2024"), domain.MustDay(1), 1, c.time, c.lift); err != nil {
			t.Errorf("time %d, lift %d rejected: %v", c.time, c.lift, err)
		}
	}
}

func TestVerticalIsLiftTimesTen(t *testing.T) {
	for _, lift := range []int32{1, 7, 40} {
		if got := (domain.MustLiftRide(1, "2024", 1, 1, 0, lift)).Vertical(); got != int(lift)*10 {
			t.Errorf("Vertical of lift %d = %d; want %d", lift, got, lift*10)
		}
	}
}

func TestKeyDistinguishesEveryField(t *testing.T) {
	base := domain.MustLiftRide(1, "2024", 2, 3, 4, 5)
	variants := []domain.LiftRide{
		domain.MustLiftRide(9, "2024", 2, 3, 4, 5),
		domain.MustLiftRide(1, "2025", 2, 3, 4, 5),
		domain.MustLiftRide(1, "2024", 9, 3, 4, 5),
		domain.MustLiftRide(1, "2024", 2, 9, 4, 5),
		domain.MustLiftRide(1, "2024", 2, 3, 9, 5),
		domain.MustLiftRide(1, "2024", 2, 3, 4, 9),
	}
	seen := map[string]bool{base.Key(): true}
	for _, v := range variants {
		if seen[v.Key()] {
			t.Errorf("Key %q of %+v collides", v.Key(), v)
		}
		seen[v.Key()] = true
	}
	if base.Key() != "1/2024/2/3/4/5" {
		t.Errorf("Key = %q; want 1/2024/2/3/4/5", base.Key())
	}
}

func TestResortSeasons(t *testing.T) {
	s2023, s2024, s2025 := domain.MustSeason("2023"), domain.MustSeason("2024"), domain.MustSeason("2025")
	r, err := domain.NewResort(1, "One", s2025, s2024, s2025)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Seasons) != 2 || r.Seasons[0] != s2024 || r.Seasons[1] != s2025 {
		t.Errorf("seasons = %v; want sorted and unique [2024 2025]", r.Seasons)
	}
	r2 := r.WithSeason(s2023)
	if !r2.HasSeason(s2023) || r.HasSeason(s2023) {
		t.Errorf("WithSeason must add to the copy only: copy %v, original %v", r2.Seasons, r.Seasons)
	}
	if _, err := domain.NewResort(0, "x"); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("NewResort(0) err = %v; want ErrInvalid", err)
	}
	if _, err := domain.NewResort(1, " "); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("NewResort with blank name err = %v; want ErrInvalid", err)
	}
}
