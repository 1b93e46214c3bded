// Package poll waits in tests for an asynchronous result, with a deadline,
// instead of sleeping and then asserting.
package poll

import (
	"testing"
	"time"
)

// Until calls check until it returns "" (the awaited state), backing off
// from 5 ms to 100 ms between calls, and fails the test with what check
// last said once deadline has passed.
func Until(t testing.TB, deadline time.Duration, what string, check func() string) {
	t.Helper()
	end := time.Now().Add(deadline)
	wait := 5 * time.Millisecond
	for {
		complaint := check()
		if complaint == "" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: still %s after %s", what, complaint, deadline)
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}
