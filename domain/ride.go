package domain

import (
	"cmp"
	"strconv"
)

// VerticalPerLift is the vertical metres a ride on lift N climbs: N × 10.
const VerticalPerLift = 10

// The bounds of a ride's time and lift. time is the minute of the day the
// ride started (0 is midnight, 1439 is 23:59); liftID numbers a resort's
// lifts from 1, and no resort has more than a thousand. The bounds keep one
// ride's vertical at most 10,000 m, so no total the store sums (int64) can
// wrap, and a single bad ride cannot poison a skier's totals. openapi.yaml
// and the README state the same numbers.
const (
	MinTime   = 0
	MaxTime   = 24*60 - 1
	MinLiftID = 1
	MaxLiftID = 1000
)

// ResortID and SkierID are distinct types so that a resort id cannot be
// passed where a skier id is wanted (the store's methods take both, in
// orders that differ by query): a swap does not compile.
type (
	ResortID int32
	SkierID  int32
)

// LiftRide is one ride of one skier on one lift. It is comparable, and its
// six fields together are its identity: the same ride posted twice, or
// delivered twice by a queue, is the same value and counts once. Its fields
// are unexported so that a ride can only be made by NewLiftRide: every ride
// past the HTTP boundary, in a queue or read back from a store, is valid.
type LiftRide struct {
	resortID ResortID
	season   Season
	day      Day
	skierID  SkierID
	time     int32
	liftID   int32
}

// The ride's fields.
func (r LiftRide) ResortID() ResortID { return r.resortID }
func (r LiftRide) SeasonID() Season   { return r.season }
func (r LiftRide) DayID() Day         { return r.day }
func (r LiftRide) SkierID() SkierID   { return r.skierID }
func (r LiftRide) Time() int32        { return r.time }
func (r LiftRide) LiftID() int32      { return r.liftID }

// MustLiftRide is NewLiftRide from the plain values a test or fixture
// writes (the season as text), known to be valid; it panics on an invalid
// one.
func MustLiftRide(resortID ResortID, season string, day int, skierID SkierID, time, liftID int32) LiftRide {
	r, err := NewLiftRide(resortID, MustSeason(season), MustDay(day), skierID, time, liftID)
	if err != nil {
		panic(err)
	}
	return r
}

// NewLiftRide validates every field and returns the ride, or an ErrInvalid
// naming the first field that breaks a rule. The season and the day are
// valid by their types; only their zero values, which no constructor
// makes, are refused.
func NewLiftRide(resortID ResortID, season Season, day Day, skierID SkierID, time, liftID int32) (LiftRide, error) {
	if err := ValidateResortID(resortID); err != nil {
		return LiftRide{}, err
	}
	if season == (Season{}) || day == (Day{}) {
		return LiftRide{}, Invalid("a ride needs a season and a day, got season %s, day %s", season, day)
	}
	if err := ValidateSkierID(skierID); err != nil {
		return LiftRide{}, err
	}
	if time < MinTime || time > MaxTime {
		return LiftRide{}, Invalid("time must be between %d and %d (the minute of the day), got %d", MinTime, MaxTime, time)
	}
	if liftID < MinLiftID || liftID > MaxLiftID {
		return LiftRide{}, Invalid("liftID must be between %d and %d, got %d", MinLiftID, MaxLiftID, liftID)
	}
	return LiftRide{resortID: resortID, season: season, day: day, skierID: skierID, time: time, liftID: liftID}, nil
}

// Vertical is the vertical this ride climbs (at most MaxLiftID × 10).
func (r LiftRide) Vertical() int { return int(r.liftID) * VerticalPerLift }

// Key is the ride's identity as a string, stable across processes and
// releases: adapters use it as a message id or a deduplication key.
// Format: resort/season/day/skier/time/lift, decimal, '/'-separated.
func (r LiftRide) Key() string {
	b := make([]byte, 0, 48)
	b = strconv.AppendInt(b, int64(r.resortID), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(r.season.year), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(r.day.n), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.skierID), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.time), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(r.liftID), 10)
	return string(b)
}

// ValidateResortID checks that a resort id is positive.
func ValidateResortID(id ResortID) error {
	if id <= 0 {
		return Invalid("resortID must be a positive integer, got %d", id)
	}
	return nil
}

// ValidateSkierID checks that a skier id is positive.
func ValidateSkierID(id SkierID) error {
	if id <= 0 {
		return Invalid("skierID must be a positive integer, got %d", id)
	}
	return nil
}

// CompareRidesInDay is the order of a skier's rides of a day, which every
// store answers getSkierDayRides in: by time, then resort, then lift.
func CompareRidesInDay(a, b LiftRide) int {
	return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(a.resortID, b.resortID), cmp.Compare(a.liftID, b.liftID))
}
