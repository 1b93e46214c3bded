package domain_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skidata/skidata/domain"
)

func TestParseSeasonReadsFourDigitYears(t *testing.T) {
	for in, want := range map[string]int{"1000": 1000, "2024": 2024, "9999": 9999} {
		s, err := domain.ParseSeason(in)
		if err != nil || s.Year() != want || s.String() != in {
			t.Errorf("ParseSeason(%q) = %d (%q), %v; want %d", in, s.Year(), s, err, want)
		}
	}
}

func TestParseSeasonRefusesEveryOtherSpelling(t *testing.T) {
	for _, bad := range []string{"", "24", "224", "20x4", "0999", "+2024", "-999", "02024", " 2024", "2024 ", "10000", "２０２４"} {
		_, err := domain.ParseSeason(bad)
		if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "seasonID must be a four-digit year such as 2024, got ") {
			t.Errorf("ParseSeason(%q) err = %v; want ErrInvalid saying the season must be a four-digit year", bad, err)
		}
	}
}

func TestNewSeasonTakesTheYearsParseSeasonReads(t *testing.T) {
	for _, year := range []int{1000, 2024, 9999} {
		s, err := domain.NewSeason(year)
		if err != nil || s != domain.MustSeason(s.String()) || s.Year() != year {
			t.Errorf("NewSeason(%d) = %v, %v", year, s, err)
		}
	}
	for _, bad := range []int{0, 999, 10000, -2024, 1 << 16} {
		_, err := domain.NewSeason(bad)
		if !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "seasonID must be a four-digit year such as 2024") {
			t.Errorf("NewSeason(%d) err = %v; want ErrInvalid", bad, err)
		}
	}
	if _, err := domain.NewSeason(999); err.Error() != `seasonID must be a four-digit year such as 2024, got "999"` {
		t.Errorf("NewSeason(999) says %q", err)
	}
}

func TestSeasonsCompareByYear(t *testing.T) {
	got := []domain.Season{domain.MustSeason("2025"), domain.MustSeason("1999"), domain.MustSeason("2024")}
	slices.SortFunc(got, domain.Season.Compare)
	if want := []domain.Season{domain.MustSeason("1999"), domain.MustSeason("2024"), domain.MustSeason("2025")}; !slices.Equal(got, want) {
		t.Errorf("sorted = %v; want %v", got, want)
	}
}

// A season is its text form in JSON (a cached answer holding seasons reads
// as it did when seasons were strings), read back through ParseSeason.
func TestSeasonJSONIsItsTextForm(t *testing.T) {
	in := []domain.SeasonVertical{{SeasonID: domain.MustSeason("2024"), TotalVert: 40}}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `[{"SeasonID":"2024","TotalVert":40}]` {
		t.Fatalf("json = %s, %v", b, err)
	}
	var out []domain.SeasonVertical
	if err := json.Unmarshal(b, &out); err != nil || !slices.Equal(out, in) {
		t.Errorf("read back %v, %v; want %v", out, err, in)
	}
	for _, bad := range []string{`[{"SeasonID":"24","TotalVert":1}]`, `[{"SeasonID":2024,"TotalVert":1}]`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s read as %v; want an error", bad, out)
		}
	}
}

func TestParseDay(t *testing.T) {
	for in, want := range map[string]int{"1": 1, "366": 366, "45": 45} {
		d, err := domain.ParseDay(in)
		if err != nil || d.Number() != want || d.String() != in {
			t.Errorf("ParseDay(%q) = %d (%q), %v; want %d", in, d.Number(), d, err, want)
		}
	}
	for bad, msg := range map[string]string{
		"": "dayID must be a whole number", "x": "dayID must be a whole number", "1.5": "dayID must be a whole number",
		"0": "dayID must be between 1 and 366, got 0", "367": "dayID must be between 1 and 366, got 367", "-1": "dayID must be between 1 and 366, got -1",
	} {
		if _, err := domain.ParseDay(bad); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseDay(%q) err = %v; want ErrInvalid saying %q", bad, err, msg)
		}
	}
}

func TestNewDay(t *testing.T) {
	for _, n := range []int{domain.MinDay, 100, domain.MaxDay} {
		if d, err := domain.NewDay(n); err != nil || d.Number() != n {
			t.Errorf("NewDay(%d) = %v, %v", n, d, err)
		}
	}
	for _, bad := range []int{0, -1, 367, 1 << 16} {
		if _, err := domain.NewDay(bad); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "dayID must be between 1 and 366") {
			t.Errorf("NewDay(%d) err = %v; want ErrInvalid", bad, err)
		}
	}
}

// The zero values are the only invalid Season and Day; no ride holds one.
func TestNewLiftRideRefusesTheZeroSeasonAndDay(t *testing.T) {
	for _, c := range []struct {
		season domain.Season
		day    domain.Day
	}{{domain.Season{}, domain.MustDay(1)}, {domain.MustSeason("2024"), domain.Day{}}} {
		if _, err := domain.NewLiftRide(1, c.season, c.day, 1, 1, 1); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("NewLiftRide(season %v, day %v) err = %v; want ErrInvalid", c.season, c.day, err)
		}
	}
}
