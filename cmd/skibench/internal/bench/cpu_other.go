//go:build !linux

package bench

import "time"

// processCPU needs /proc: elsewhere the server's CPU is not measured (pass
// it to skibench plan as a flag).
func processCPU(string) (time.Duration, bool) { return 0, false }

func selfCPU() time.Duration { return 0 }
