package domain

import (
	"strconv"
)

// MinDay and MaxDay bound a day of the season (a leap year has 366).
const (
	MinDay = 1
	MaxDay = 366
)

// VerticalPerLift is the vertical metres a ride on lift N climbs: N × 10.
const VerticalPerLift = 10

// LiftRide is one ride of one skier on one lift. It is comparable, and its
// six fields together are its identity: the same ride posted twice, or
// delivered twice by a queue, is the same value and counts once.
type LiftRide struct {
	ResortID int32
	SeasonID string
	DayID    int
	SkierID  int32
	Time     int32
	LiftID   int32
}

// NewLiftRide validates every field and returns the ride, or an ErrInvalid
// naming the first field that breaks a rule.
func NewLiftRide(resortID int32, seasonID string, dayID int, skierID, time, liftID int32) (LiftRide, error) {
	if err := ValidateResortID(resortID); err != nil {
		return LiftRide{}, err
	}
	if err := ValidateSeasonID(seasonID); err != nil {
		return LiftRide{}, err
	}
	if err := ValidateDayID(dayID); err != nil {
		return LiftRide{}, err
	}
	if err := ValidateSkierID(skierID); err != nil {
		return LiftRide{}, err
	}
	if time < 0 {
		return LiftRide{}, Invalid("time must be zero or positive, got %d", time)
	}
	if liftID <= 0 {
		return LiftRide{}, Invalid("liftID must be a positive integer, got %d", liftID)
	}
	return LiftRide{ResortID: resortID, SeasonID: seasonID, DayID: dayID, SkierID: skierID, Time: time, LiftID: liftID}, nil
}

// Vertical is the vertical this ride climbs.
func (r LiftRide) Vertical() int { return int(r.LiftID) * VerticalPerLift }

// Key is the ride's identity as a string, stable across processes and
// releases: adapters use it as a message id or a deduplication key.
// Format: resort/season/day/skier/time/lift, decimal, '/'-separated.
func (r LiftRide) Key() string {
	b := make([]byte, 0, 48)
	b = strconv.AppendInt(b, int64(r.ResortID), 10)
	b = append(b, '/')
	b = append(b, r.SeasonID...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.DayID), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.SkierID), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.Time), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.LiftID), 10)
	return string(b)
}

// ValidateResortID checks that a resort id is positive.
func ValidateResortID(id int32) error {
	if id <= 0 {
		return Invalid("resortID must be a positive integer, got %d", id)
	}
	return nil
}

// ValidateSkierID checks that a skier id is positive.
func ValidateSkierID(id int32) error {
	if id <= 0 {
		return Invalid("skierID must be a positive integer, got %d", id)
	}
	return nil
}

// ValidateDayID checks that a day lies in 1..366.
func ValidateDayID(day int) error {
	if day < MinDay || day > MaxDay {
		return Invalid("dayID must be between %d and %d, got %d", MinDay, MaxDay, day)
	}
	return nil
}

// ParseDayID reads a day given as text (the API's writeNewLiftRide path
// carries it as a string) and validates it.
func ParseDayID(s string) (int, error) {
	day, err := strconv.Atoi(s)
	if err != nil {
		return 0, Invalid("dayID must be a whole number between %d and %d, got %q", MinDay, MaxDay, s)
	}
	if err := ValidateDayID(day); err != nil {
		return 0, err
	}
	return day, nil
}

// FormatDayID is the inverse of ParseDayID.
func FormatDayID(day int) string { return strconv.Itoa(day) }
