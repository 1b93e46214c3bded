package domain

import (
	"cmp"
	"strconv"
)

// Season and Day place a ride in the calendar. Each is made only by its
// constructors (the field is unexported, as LiftRide's are), which parse or
// check the value once, where it enters from outside: the HTTP handlers, a
// queue message or a store row read back, a fixture. Past that point a
// Season is a four-digit year and a Day lies in MinDay..MaxDay, so no use
// case or adapter checks them again; only the zero values, which no
// constructor makes, are not valid.
//
// Both are a number inside, so a ride holds no pointer and an adapter that
// stores a number (a memory key, a smallint column, a binary record) takes
// Year or Number as it is. The text forms (the API's, a DynamoDB key) are
// String, read back through ParseSeason or ParseDay.
type (
	// Season is a ski season, named by a four-digit year (1000..9999).
	Season struct{ year uint16 }
	// Day is a day of the season, MinDay..MaxDay.
	Day struct{ n uint16 }
)

// MinDay and MaxDay bound a day of the season (a leap year has 366).
const (
	MinDay = 1
	MaxDay = 366
)

// The bounds of a season's year: four digits, no leading zero.
const (
	minYear = 1000
	maxYear = 9999
)

// ParseSeason reads a season in the API's text form: exactly four digits,
// the first not zero ("2024"; not "+2024", "02024" or "24").
func ParseSeason(s string) (Season, error) {
	if len(s) != 4 || s[0] == '0' {
		return Season{}, invalidSeason(s)
	}
	year := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return Season{}, invalidSeason(s)
		}
		year = year*10 + int(s[i]-'0')
	}
	return Season{year: uint16(year)}, nil
}

// NewSeason makes a season from its year as a number (getResortSkiersDay's
// path carries it as an int32; a store may keep it as one).
func NewSeason(year int) (Season, error) {
	if year < minYear || year > maxYear {
		return Season{}, invalidSeason(strconv.Itoa(year))
	}
	return Season{year: uint16(year)}, nil
}

func invalidSeason(got string) error {
	return Invalid("seasonID must be a four-digit year such as 2024, got %q", got)
}

// MustSeason is ParseSeason for a value known to be valid (tests,
// fixtures); it panics on an invalid one.
func MustSeason(s string) Season {
	season, err := ParseSeason(s)
	if err != nil {
		panic(err)
	}
	return season
}

// Year is the season's year, 1000..9999.
func (s Season) Year() int { return int(s.year) }

// String is the season's text form, "2024", which ParseSeason reads back.
func (s Season) String() string { return strconv.Itoa(int(s.year)) }

// Compare orders seasons by year.
func (s Season) Compare(t Season) int { return cmp.Compare(s.year, t.year) }

// MarshalText and UnmarshalText make a season its text form in JSON (a
// cached answer holding seasons reads "2024", as it did when seasons were
// strings) and read one back through ParseSeason.
func (s Season) MarshalText() ([]byte, error) { return strconv.AppendInt(nil, int64(s.year), 10), nil }

func (s *Season) UnmarshalText(b []byte) error {
	season, err := ParseSeason(string(b))
	if err != nil {
		return err
	}
	*s = season
	return nil
}

// ParseDay reads a day given as text (the API's paths carry it as a
// string).
func ParseDay(s string) (Day, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return Day{}, Invalid("dayID must be a whole number between %d and %d, got %q", MinDay, MaxDay, s)
	}
	return NewDay(n)
}

// NewDay makes a day from its number (getResortSkiersDay's path carries it
// as an int32; the stores and the queue keep it as one).
func NewDay(n int) (Day, error) {
	if n < MinDay || n > MaxDay {
		return Day{}, Invalid("dayID must be between %d and %d, got %d", MinDay, MaxDay, n)
	}
	return Day{n: uint16(n)}, nil
}

// MustDay is NewDay for a value known to be valid (tests, fixtures); it
// panics on an invalid one.
func MustDay(n int) Day {
	d, err := NewDay(n)
	if err != nil {
		panic(err)
	}
	return d
}

// Number is the day's number in the season, MinDay..MaxDay.
func (d Day) Number() int { return int(d.n) }

// String is the day's text form, "45", which ParseDay reads back.
func (d Day) String() string { return strconv.Itoa(int(d.n)) }

// Compare orders days by number.
func (d Day) Compare(e Day) int { return cmp.Compare(d.n, e.n) }
