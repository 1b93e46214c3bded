//go:build !linux

package loadgen

import "time"

// preciseSleep is time.Sleep where nanosleep(2) is not wired up: the
// sub-millisecond gaps of a high --rate then come out coarser.
func preciseSleep(d time.Duration) { time.Sleep(d) }
