// Package waitfor is the one polling helper of the tests: wait for a condition with a
// deadline, instead of sleeping for a guessed time.
package waitfor

import (
	"testing"
	"time"
)

// True polls cond every few milliseconds until it returns true, failing t once timeout passes.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}
