package loadgen

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling thread in nanosleep(2), which the kernel
// ends to within its timer slack (50 µs by default), where time.Sleep on an
// idle process waits on epoll's whole milliseconds. The runtime hands the
// goroutine's P to another thread meanwhile if the sleep lasts.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: wake early; SleepUntil loops
}
