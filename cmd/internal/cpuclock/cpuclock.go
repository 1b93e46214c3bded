// Package cpuclock is the one rule skiload and skibench apply to a CPU
// time read from /proc (process_cpu_seconds_total too: Go's Prometheus
// client reads it from there): /proc counts CPU in clock ticks (USER_HZ,
// 100 a second on every Linux architecture Go runs on), and each reading
// is cut down to a whole tick, so the difference of two readings is
// uncertain by up to a tick. A difference of a few ticks therefore gives
// no figure per request; such a run is reported as too short to measure.
package cpuclock

import (
	"fmt"
	"time"
)

// Tick is /proc's unit of CPU time.
const Tick = 10 * time.Millisecond

// MinTicks is the fewest ticks a CPU difference must span for a figure
// drawn from it to be given: one tick in MinTicks, ±5%.
const MinTicks = 20

// Check returns nil when the CPU difference d spans at least MinTicks
// ticks, else an error saying it is too short to measure and why.
func Check(d time.Duration) error {
	ticks := (d + Tick/2) / Tick
	if ticks >= MinTicks {
		return nil
	}
	return fmt.Errorf("too short to measure: %d ticks of %s of CPU; a figure needs %d or more, to be within %.0f%%", ticks, Tick, MinTicks, 100.0/MinTicks)
}
