package pushapi

import (
	"context"
	"sync"
	"time"
)

// volumeTTL is how long intake trusts a daily volume it read. The intake check only refuses
// pushes once the day's volume is spent; fan-out counts every target exactly and stops a push
// at the limit, so a second's staleness here lets through at most a second of calls that
// fan-out then stops.
const volumeTTL = time.Second

// volumeCache keeps each app's daily volume for volumeTTL, so that intake does not read the
// counter on every push call.
type volumeCache struct {
	mu   sync.Mutex
	read func(ctx context.Context, appID, day string) (int64, error)
	vals map[string]volumeEntry
}

type volumeEntry struct {
	day  string
	used int64
	at   time.Time
}

func newVolumeCache(read func(ctx context.Context, appID, day string) (int64, error)) *volumeCache {
	return &volumeCache{read: read, vals: make(map[string]volumeEntry)}
}

func (c *volumeCache) get(ctx context.Context, appID, day string, now time.Time) (int64, error) {
	c.mu.Lock()
	e, ok := c.vals[appID]
	c.mu.Unlock()
	if ok && e.day == day && now.Sub(e.at) < volumeTTL && !now.Before(e.at) {
		return e.used, nil
	}
	used, err := c.read(ctx, appID, day)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.vals[appID] = volumeEntry{day: day, used: used, at: now}
	c.mu.Unlock()
	return used, nil
}
