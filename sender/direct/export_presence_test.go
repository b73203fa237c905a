package direct

import "time"

// SetPresenceClock sets the clock Presence judges the registry's cache by.
func SetPresenceClock(p *Presence, now func() time.Time) { p.now = now }
