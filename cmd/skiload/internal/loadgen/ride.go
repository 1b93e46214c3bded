package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/skidata/skidata/domain"
)

// Ride is one lift ride as the client posts it. Its six fields are its
// identity, exactly as the server's domain.LiftRide: the same six values
// posted twice are one ride.
type Ride struct {
	ResortID int32
	Season   int32
	Day      int32
	SkierID  int32
	Time     int32
	LiftID   int32
}

// Vertical is the vertical the ride climbs (the server's rule: liftID × 10).
func (r Ride) Vertical() int64 { return int64(r.LiftID) * 10 }

// Range is an inclusive range of ids, given on the command line as "lo-hi"
// or a single "n".
type Range struct{ Lo, Hi int32 }

func (r Range) String() string {
	if r.Lo == r.Hi {
		return strconv.Itoa(int(r.Lo))
	}
	return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
}

// Set implements flag.Value.
func (r *Range) Set(s string) error {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	l, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 32)
	if err != nil {
		return fmt.Errorf("range %q: want lo-hi or n: %w", s, err)
	}
	h, err := strconv.ParseInt(strings.TrimSpace(hi), 10, 32)
	if err != nil {
		return fmt.Errorf("range %q: want lo-hi or n: %w", s, err)
	}
	if l > h {
		return fmt.Errorf("range %q: low end above high end", s)
	}
	r.Lo, r.Hi = int32(l), int32(h)
	return nil
}

// pick draws uniformly from r.
func (r Range) pick(rng *rand.Rand) int32 {
	return r.Lo + rng.Int32N(r.Hi-r.Lo+1)
}

// Ranges bound every field of a generated ride.
type Ranges struct {
	Skiers, Resorts, Lifts, Times, Days Range
	Season                              int32
}

// DefaultRanges is the assignment's shape: 100,000 skiers, 10 resorts,
// 40 lifts, minutes 1..360 of day 1 of season 2024.
func DefaultRanges() Ranges {
	return Ranges{
		Skiers:  Range{1, 100_000},
		Resorts: Range{1, 10},
		Lifts:   Range{1, 40},
		Times:   Range{1, 360},
		Days:    Range{1, 1},
		Season:  2024,
	}
}

// Validate reports a range the server would reject (every id positive,
// time zero or more, day 1..366, a four-digit season).
func (g Ranges) Validate() error {
	for _, c := range []struct {
		name   string
		r      Range
		lo, hi int32
	}{
		{"skiers", g.Skiers, 1, 1<<31 - 1}, {"resorts", g.Resorts, 1, 1<<31 - 1},
		{"lifts", g.Lifts, 1, 1<<31 - 1}, {"times", g.Times, 0, 1<<31 - 1},
		{"days", g.Days, domain.MinDay, domain.MaxDay},
	} {
		if c.r.Lo < c.lo || c.r.Hi > c.hi || c.r.Lo > c.r.Hi {
			return fmt.Errorf("--%s %s must lie within %d-%d", c.name, c.r, c.lo, c.hi)
		}
	}
	if _, err := domain.NewSeason(int(g.Season)); err != nil {
		return fmt.Errorf("--season: %w", err)
	}
	return nil
}

// Generator makes random rides, the same sequence for the same seed.
type Generator struct {
	ranges Ranges
	rng    *rand.Rand
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64, ranges Ranges) *Generator {
	return &Generator{ranges: ranges, rng: rand.New(rand.NewPCG(seed, seed^0x5eed5eed5eed5eed))}
}

// Next returns the next ride.
func (g *Generator) Next() Ride {
	r := g.ranges
	return Ride{
		ResortID: r.Resorts.pick(g.rng),
		Season:   r.Season,
		Day:      r.Days.pick(g.rng),
		SkierID:  r.Skiers.pick(g.rng),
		Time:     r.Times.pick(g.rng),
		LiftID:   r.Lifts.pick(g.rng),
	}
}

// Feed sends n rides into a new channel from one goroutine and closes it
// when done or when ctx ends. The buffer keeps the workers from ever
// waiting on the generator.
func (g *Generator) Feed(ctx context.Context, n int) <-chan Ride {
	ch := make(chan Ride, 4096)
	go func() {
		defer close(ch)
		for range n {
			select {
			case ch <- g.Next():
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// Known is the first n rides of the seed's sequence: what a POST load of n
// or more rides with the same seed and ranges sent. The GET cases ask about
// these, so that their answers are 200s, and an open-loop POST sends them.
func Known(seed uint64, ranges Ranges, n int) []Ride {
	g := NewGenerator(seed, ranges)
	rides := make([]Ride, n)
	for i := range rides {
		rides[i] = g.Next()
	}
	return rides
}
