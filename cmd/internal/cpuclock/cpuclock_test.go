package cpuclock

import (
	"strings"
	"testing"
	"time"
)

// TestCheckRefusesADifferenceOfFewerThanMinTicks: the threshold is in
// whole ticks, and the refusal says how many ticks there were.
func TestCheckRefusesADifferenceOfFewerThanMinTicks(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string // "" for a figure
	}{
		{0, "0 ticks"},
		{30 * time.Millisecond, "3 ticks"},
		{(MinTicks - 1) * Tick, "19 ticks"},
		{MinTicks * Tick, ""},
		{MinTicks*Tick - time.Microsecond, ""}, // a float reading a hair under a whole tick
		{time.Minute, ""},
	} {
		err := Check(c.d)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Check(%s) = %v; want a figure", c.d, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "too short to measure: "+c.want)):
			t.Errorf("Check(%s) = %v; want too short to measure, %s", c.d, err, c.want)
		}
	}
}
