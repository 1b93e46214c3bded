package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skidata/skidata/cmd/internal/cpuclock"
)

// processCPU sums the CPU time (user and system, plus that of reaped
// children) of every process whose command name is comm, from
// /proc/<pid>/stat: for "postgres", the server and its backends when it
// runs on this machine. ok is false when no such process is visible.
func processCPU(comm string) (total time.Duration, ok bool) {
	if comm == "" {
		return 0, false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != comm {
			continue
		}
		// After "pid (comm) ": state is field 3; utime, stime, cutime and
		// cstime are fields 14 to 17.
		f := strings.Fields(s[closing+1:])
		if len(f) < 15 {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			total += time.Duration(n) * cpuclock.Tick
		}
		ok = true
	}
	return total, ok
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
